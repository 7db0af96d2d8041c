// Scalar definitions of the elementwise, normalization, RoPE and attention ops. They compute in
// the floating-point order of ggml's CPU build for AVX2 (llama.cpp's x86 default), so that kiln
// reproduces its logits: where an activation lands on a Q8_0 rounding half-step, the last bit of
// a norm, a rotation or an attention sum decides the quantized value the next matmul sees.
#include "ops.h"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "cpu-features.h"
#include "type-traits.h"

namespace kiln {

void rmsNormRows(const float* x, const float* w, float* y, int64_t nGroups, int64_t width, float eps, int ith, int nth) {
  int64_t g0, g1;
  splitRange(nGroups, ith, nth, &g0, &g1);
  for (int64_t g = g0; g < g1; g++) {
    const float* xr = x + g * width;
    float* yr = y + g * width;
    double sum = 0.0;
    for (int64_t i = 0; i < width; i++) sum += (double)(xr[i] * xr[i]);  // float squares, as ggml
    const float scale = 1.0f / std::sqrt((float)(sum / (double)width) + eps);
    for (int64_t i = 0; i < width; i++) yr[i] = xr[i] * scale * w[i];
  }
}

void ropeRows(float* x, int64_t nTokens, const int32_t* positions, const RopeParams& p, const float* freqFactors,
              int ith, int nth) {
  const int64_t rows = nTokens * p.nHeads;
  int64_t r0, r1;
  splitRange(rows, ith, nth, &r0, &r1);
  const float thetaScale = std::pow(p.freqBase, -2.0f / (float)p.nRot);
  const int half = p.nRot / 2;
  for (int64_t r = r0; r < r1; r++) {
    float* v = x + r * p.headDim;
    const int32_t pos = positions[r / p.nHeads];
    float thetaBase = (float)pos;
    for (int i = 0; i < half; i++) {
      const float ff = freqFactors ? freqFactors[i] : 1.0f;
      const float theta = p.freqScale * (thetaBase / ff);
      const float c = std::cos(theta), s = std::sin(theta);
      const int a = p.neox ? i : 2 * i;
      const int b = p.neox ? i + half : 2 * i + 1;
      const float x0 = v[a], x1 = v[b];
      // As ggml compiles x0 * c - x1 * s: the second product rounded, the first fused.
      v[a] = std::fma(x0, c, -(x1 * s));
      v[b] = std::fma(x0, s, x1 * c);
      thetaBase *= thetaScale;
    }
  }
}

namespace {

inline float kvAt(const void* base, GgmlType type, int64_t index) {
  return type == GgmlType::F16 ? fp16ToFloat(static_cast<const fp16_t*>(base)[index])
                               : static_cast<const float*>(base)[index];
}

inline void kvPut(void* base, GgmlType type, int64_t index, float value) {
  if (type == GgmlType::F16) {
    static_cast<fp16_t*>(base)[index] = floatToFp16(value);
  } else {
    static_cast<float*>(base)[index] = value;
  }
}

// q . k as ggml_vec_dot_f32 computes it with AVX2 (llama.cpp's K*Q): four 8-lane FMA accumulators
// over steps of 32 values, folded as GGML_F32x8_REDUCE does, then the rest one FMA at a time.
float dotGgml(const float* q, const void* k, GgmlType type, int64_t base, int n) {
  float a[4][8] = {};
  const int np = n & ~31;
  for (int i = 0; i < np; i += 32)
    for (int r = 0; r < 4; r++)
      for (int l = 0; l < 8; l++) a[r][l] = std::fma(kvAt(k, type, base + i + 8 * r + l), q[i + 8 * r + l], a[r][l]);
  float t[4];
  for (int l = 0; l < 4; l++) {
    const float lo = (a[0][l] + a[2][l]) + (a[1][l] + a[3][l]);
    const float hi = (a[0][l + 4] + a[2][l + 4]) + (a[1][l + 4] + a[3][l + 4]);
    t[l] = lo + hi;
  }
  float sum = (t[0] + t[1]) + (t[2] + t[3]);
  for (int i = np; i < n; i++) sum = std::fma(kvAt(k, type, base + i), q[i], sum);
  return sum;
}

// The sum of 8 floats in the order of ggml's hsum_float_8 (and llamafile's tinyBLAS hsum).
float hsum8(const float* v) { return ((v[0] + v[4]) + (v[2] + v[6])) + ((v[1] + v[5]) + (v[3] + v[7])); }

float bitsToFloat(uint32_t b) {
  float f;
  std::memcpy(&f, &b, sizeof f);
  return f;
}

// ggml_v_expf for AVX2, one lane (ARM's optimized-routines expf with single-precision
// polynomial): within 1.5 ulp of exp, and what llama.cpp's softmax computes.
float expGgml(float x) {
  const float r = 0x1.8p23f;
  const float z = std::fma(x, 0x1.715476p+0f, r);
  const float n = z - r;
  const float b = std::fma(-n, 0x1.7f7d1cp-20f, std::fma(-n, 0x1.62e4p-1f, x));
  uint32_t zb;
  std::memcpy(&zb, &z, sizeof zb);
  const uint32_t e = zb << 23;
  const float k = bitsToFloat(e + 0x3f800000u);
  const float u = b * b;
  const float j = std::fma(std::fma(std::fma(0x1.0e4020p-7f, b, 0x1.573e2ep-5f), u, std::fma(0x1.555e66p-3f, b, 0x1.fffdb6p-2f)), u,
                           0x1.ffffecp-1f * b);
  if (!(std::fabs(n) > 126)) return std::fma(j, k, k);  // NaN included
  // 2^n itself would leave float's range: scale in two steps, or give 0 / inf past |n| = 192.
  const uint32_t g = n <= 0 ? 0x82000000u : 0u;
  const float s1 = bitsToFloat(g + 0x7f000000u);
  if (std::fabs(n) > 192) return s1 * s1;
  const float s2 = bitsToFloat(e - g);
  return std::fma(s2, j, s2) * s1;
}

}  // namespace

void kvStoreRows(const KvView& kv, const float* k, const float* v, int64_t nTokens, const int32_t* positions,
                 int64_t rowWidth, int ith, int nth) {
  int64_t t0, t1;
  splitRange(nTokens, ith, nth, &t0, &t1);
  for (int64_t t = t0; t < t1; t++) {
    const int64_t dst = (int64_t)positions[t] * rowWidth;
    for (int64_t i = 0; i < rowWidth; i++) {
      kvPut(kv.k, kv.type, dst + i, k[t * rowWidth + i]);
      kvPut(kv.v, kv.type, dst + i, v[t * rowWidth + i]);
    }
  }
}

void attentionRows(const float* q, const KvView& kv, float* out, int64_t nTokens, const int32_t* positions,
                   const AttentionParams& p, float* scratch, int ith, int nth) {
  const int64_t rows = nTokens * p.nHeads;
  const int64_t kvWidth = (int64_t)p.nKvHeads * p.headDim;
  const int group = p.nHeads / p.nKvHeads;
  float* scores = scratch + (int64_t)ith * attentionScratchFloats(kv.capacity, p.headDim);
  float* acc = scores + kv.capacity;
  int64_t r0, r1;
  splitRange(rows, ith, nth, &r0, &r1);
  for (int64_t r = r0; r < r1; r++) {
    const int64_t t = r / p.nHeads;
    const int h = (int)(r % p.nHeads);
    const int kvh = h / group;
    const float* qh = q + t * (int64_t)p.nHeads * p.headDim + (int64_t)h * p.headDim;
    const int64_t n = (int64_t)positions[t] + 1;
    const int64_t headBase = (int64_t)kvh * p.headDim;
    // llama.cpp's order with an F32 cache (an F16 cache's values are converted, then the same):
    // K*Q by ggml_vec_dot_f32; softmax as ggml_vec_soft_max_f32, whose exps are summed 8 at a time
    // in float and the eights in double (the row is padded with masked zeros to a multiple of 8);
    // KQV as llamafile's tinyBLAS, one 8-lane FMA accumulator over the positions per output.
    float maxScore = -INFINITY;
    for (int64_t j = 0; j < n; j++) {
      scores[j] = dotGgml(qh, kv.k, kv.type, j * kvWidth + headBase, p.headDim) * p.scale;
      if (scores[j] > maxScore) maxScore = scores[j];
    }
    double sum = 0.0;
    for (int64_t j0 = 0; j0 < n; j0 += 8) {
      float e[8] = {};
      for (int64_t j = j0; j < n && j < j0 + 8; j++) e[j - j0] = scores[j] = expGgml(scores[j] - maxScore);
      sum += (double)hsum8(e);
    }
    const float inv = (float)(1.0 / sum);
    for (int64_t j = 0; j < n; j++) scores[j] *= inv;
    for (int d = 0; d < p.headDim; d++) {
      float lane[8] = {};
      for (int64_t j = 0; j < n; j++) lane[j % 8] = std::fma(kvAt(kv.v, kv.type, j * kvWidth + headBase + d), scores[j], lane[j % 8]);
      acc[d] = hsum8(lane);
    }
    std::memcpy(out + t * (int64_t)p.nHeads * p.headDim + (int64_t)h * p.headDim, acc, sizeof(float) * p.headDim);
  }
}

void swigluRows(const float* gate, const float* up, float* y, int64_t n, int ith, int nth) {
  int64_t i0, i1;
  splitRange(n, ith, nth, &i0, &i1);
  for (int64_t i = i0; i < i1; i++) y[i] = gate[i] / (1.0f + std::exp(-gate[i])) * up[i];
}

void addRows(const float* a, const float* b, float* y, int64_t n, int ith, int nth) {
  int64_t i0, i1;
  splitRange(n, ith, nth, &i0, &i1);
  for (int64_t i = i0; i < i1; i++) y[i] = a[i] + b[i];
}

void addBiasRows(float* y, const float* bias, int64_t nRows, int64_t width, int ith, int nth) {
  int64_t r0, r1;
  splitRange(nRows, ith, nth, &r0, &r1);
  for (int64_t r = r0; r < r1; r++)
    for (int64_t i = 0; i < width; i++) y[r * width + i] += bias[i];
}

namespace {
// A logit as the sampler's candidates hold it (src/sampling/candidates.ts finite()): NaN ->
// -FLT_MAX, +-inf -> +-FLT_MAX; then divided by the temperature in double and clamped again
// (src/sampling/temperature.ts), unless it is 1.
inline float candidateLogit(float x, double t) {
  double v = x >= FLT_MAX ? FLT_MAX : x > -FLT_MAX ? x : -FLT_MAX;
  if (t != 1.0) {
    v = v / t;
    v = v > FLT_MAX ? FLT_MAX : v < -FLT_MAX ? -FLT_MAX : v;
  }
  return (float)v;
}

// Each block of eight exps summed in double as ((e0 + e4) + (e2 + e6)) + ((e1 + e5) + (e3 + e7)).
inline double blockSum(const float* e) {
  return (((double)e[0] + e[4]) + ((double)e[2] + e[6])) + (((double)e[1] + e[5]) + ((double)e[3] + e[7]));
}

// The first token whose running sum passes target: whole blocks first, then the block's own e in
// order (softmaxDrawRow).
int64_t drawIndex(const float* e, int64_t n, const double* blocks, double target) {
  const int64_t nBlocks = (n + 7) / 8;
  double cumulative = 0;
  for (int64_t b = 0; b < nBlocks; b++) {
    if (target < cumulative + blocks[b]) {
      const int64_t end = std::min<int64_t>(n, 8 * b + 8);
      double c = cumulative;
      for (int64_t i = 8 * b; i < end; i++) {
        c += e[i];
        if (target < c) return i;
      }
      // The block's sum, added in another order, reached past the target and its walk fell
      // short: its last token with any mass.
      for (int64_t i = end - 1; i > 8 * b; i--)
        if (e[i] > 0) return i;
      return 8 * b;
    }
    cumulative += blocks[b];
  }
  // Rounding left the total a hair below the target: the last token with any mass.
  for (int64_t i = n - 1; i > 0; i--)
    if (e[i] > 0) return i;
  return 0;
}

}  // namespace

double softmaxExps(const float* x, float* e, int64_t n, double t, double* blocks) {
  float m = -FLT_MAX;
  for (int64_t i = 0; i < n; i++) {
    e[i] = candidateLogit(x[i], t);
    m = e[i] > m ? e[i] : m;
  }
  double total = 0;
  for (int64_t b = 0; b * 8 < n; b++) {
    float block[8] = {};
    for (int64_t i = 8 * b; i < n && i < 8 * b + 8; i++) block[i - 8 * b] = e[i] = expGgml(e[i] - m);
    blocks[b] = blockSum(block);
    total += blocks[b];
  }
  return total;
}

void softmaxRow(const float* x, int64_t n, float* e, double* blocks, double* probs) {
  if (n <= 0) return;
  const double total = opKernels().exps(x, e, n, 1.0, blocks);
  for (int64_t i = 0; i < n; i++) probs[i] = e[i] / total;
}

int64_t softmaxDrawRow(float* x, int64_t n, double t, double u, double* blocks) {
  if (n <= 0) return 0;
  const double total = opKernels().exps(x, x, n, t, blocks);
  return drawIndex(x, n, blocks, u * total);
}

int64_t nucleusRow(const float* x, int64_t n, double p, int64_t maxK, float* e, double* blocks, int32_t* ids, float* logits) {
  if (n <= 0) return 0;
  const double target = p * opKernels().exps(x, e, n, 1.0, blocks);
  maxK = std::min(maxK, n);
  for (int64_t k = std::min<int64_t>(64, maxK);; k = std::min(8 * k, maxK)) {
    // Each exp is at most 1 (the best token's): k tokens cannot hold more than k, so a flat row
    // skips the selections that cannot reach the target.
    if ((double)k < target && k < n) {
      if (k == maxK) return -1;
      continue;
    }
    selectTopRow(x, n, k, ids, logits);
    double cumulative = 0;
    for (int64_t j = 0; j < k; j++) {
      cumulative += e[ids[j]];
      if (cumulative >= target) return j + 1;
    }
    if (k == n) return n;  // rounding left the total short of p x total: everything stays
    if (k == maxK) return -1;
  }
}

void selectTopRow(const float* x, int64_t n, int64_t k, int32_t* ids, float* logits) {
  struct Entry {
    float logit;
    int32_t id;
  };
  // ranksBefore: the higher logit, then the lower id.
  const auto before = [](const Entry& a, const Entry& b) { return a.logit > b.logit || (a.logit == b.logit && a.id < b.id); };
  // A heap whose root is the worst of the best so far. Every entry in it came earlier, so a later
  // value ranks before the root only when it is strictly higher.
  std::vector<Entry> heap((size_t)k);
  for (int64_t i = 0; i < k; i++) heap[i] = {candidateLogit(x[i], 1.0), (int32_t)i};
  std::make_heap(heap.begin(), heap.end(), before);
  for (int64_t i = k; i < n; i++) {
    const float v = candidateLogit(x[i], 1.0);
    if (!(v > heap.front().logit)) continue;
    std::pop_heap(heap.begin(), heap.end(), before);
    heap.back() = {v, (int32_t)i};
    std::push_heap(heap.begin(), heap.end(), before);
  }
  std::sort(heap.begin(), heap.end(), before);
  for (int64_t i = 0; i < k; i++) {
    ids[i] = heap[i].id;
    logits[i] = heap[i].logit;
  }
}

int64_t keepAtLeastRow(const float* x, int64_t n, double threshold, int32_t* ids, float* logits) {
  int64_t kept = 0;
  for (int64_t i = 0; i < n; i++) {
    const float v = candidateLogit(x[i], 1.0);
    if (v >= threshold) {
      ids[kept] = (int32_t)i;
      logits[kept++] = v;
    }
  }
  return kept;
}

int64_t argmaxF32(const float* x, int64_t n) {
  // Two passes over a row that is in cache: the largest value (a NaN operand of maxps yields its
  // second operand, the running maximum, so NaN is skipped), then the first index holding it.
  float best = -INFINITY;
  int64_t i = 0;
#if defined(__SSE2__)
  __m128 m0 = _mm_set1_ps(-INFINITY), m1 = m0, m2 = m0, m3 = m0;
  for (; i + 16 <= n; i += 16) {
    m0 = _mm_max_ps(_mm_loadu_ps(x + i), m0);
    m1 = _mm_max_ps(_mm_loadu_ps(x + i + 4), m1);
    m2 = _mm_max_ps(_mm_loadu_ps(x + i + 8), m2);
    m3 = _mm_max_ps(_mm_loadu_ps(x + i + 12), m3);
  }
  alignas(16) float lanes[4];
  _mm_store_ps(lanes, _mm_max_ps(_mm_max_ps(m0, m1), _mm_max_ps(m2, m3)));
  for (float v : lanes) best = v > best ? v : best;
#endif
  for (; i < n; i++) best = x[i] > best ? x[i] : best;
  if (best == -INFINITY) return 0;
  i = 0;
#if defined(__SSE2__)
  const __m128 b = _mm_set1_ps(best);
  for (; i + 4 <= n; i += 4) {
    const int mask = _mm_movemask_ps(_mm_cmpeq_ps(_mm_loadu_ps(x + i), b));
    if (mask != 0) return i + __builtin_ctz((unsigned)mask);
  }
#endif
  for (; i < n; i++)
    if (x[i] == best) return i;
  return 0;  // not reached: best is one of the values
}

const OpKernels& opKernels() {
  static const OpKernels generic{rmsNormRows, ropeRows, kvStoreRows, attentionRows, swigluRows, addRows, softmaxExps};
#if defined(__x86_64__) || defined(__i386__)
  static const OpKernels avx2{rmsNormRows_avx2, ropeRows_avx2, kvStoreRows_avx2, attentionRows_avx2, swigluRows_avx2, addRows_avx2, softmaxExps_avx2};
  const CpuFeatures& f = cpuFeatures();
  if (kernelLevel() != KernelLevel::Generic && f.avx2 && f.fma && f.f16c) return avx2;
#endif
  return generic;
}

}  // namespace kiln

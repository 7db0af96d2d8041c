// Attention with AVX2 + FMA + F16C (attentionRows_avx2), bit for bit as the scalar definition in
// ops.cpp (llama.cpp's order). Queries that read one KV head go through together (the query heads
// that share it, and in a prefill those of consecutive tokens: see attentionRows_avx2): their keys
// and values are read (and widened) once for all of them, and the horizontal steps (the dot
// products' final sums, the softmax) run for eight queries at once, one per float lane, in each
// query's own order.
// Compiled with -mavx2 -mfma -mf16c (see quants.h on inline functions).
#include <cmath>
#include <cstdint>
#include <cstring>

#include "attention-lanes.h"
#include "ops.h"
#include "simd-avx2.h"
#include "type-traits.h"

namespace kiln {

using namespace simd;

namespace {

constexpr int kMaxHeadDim = 256;

// Eight values of the cache (or one) as floats, halves widened in registers as they are read
// (exactly, so the same values as a widened copy's). Widening each block of keys and values into a
// float buffer first, for the 8 query lanes to read, cost a store and a load per 8 values; read
// directly, one thread's attention over a 32/4-head F16 cache (bench kernels --op attention,
// alternating in one process, Zen 3) took 0.82 of the time, decode at depth 512 and a 512-token
// prefill alike.
inline __m256 loadAny(const float* p) { return _mm256_loadu_ps(p); }
inline __m256 loadAny(const fp16_t* p) { return loadF16(p); }
inline float loadOneAny(const float* p) { return *p; }
inline float loadOneAny(const fp16_t* p) { return fp16(*p); }

// One query row against keys/values 0..n-1 of one KV head (stride `stride` elements between
// positions), bit for bit as the scalar definition (llama.cpp's order). headDim <= kMaxHeadDim;
// scores: n floats of scratch.
template <typename T>
void attendOne(const float* q, const T* k, const T* v, int64_t n, int64_t stride, int headDim, float scale,
               float* scores, float* out) {
  // K*Q as ggml_vec_dot_f32: four accumulators over steps of 32, GGML_F32x8_REDUCE, then the rest.
  const int np = headDim & ~31;
  float maxScore = -INFINITY;
  for (int64_t j = 0; j < n; j++) {
    const T* kj = k + j * stride;
    __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
    for (int i = 0; i < np; i += 32) {
      a0 = _mm256_fmadd_ps(loadAny(kj + i), _mm256_loadu_ps(q + i), a0);
      a1 = _mm256_fmadd_ps(loadAny(kj + i + 8), _mm256_loadu_ps(q + i + 8), a1);
      a2 = _mm256_fmadd_ps(loadAny(kj + i + 16), _mm256_loadu_ps(q + i + 16), a2);
      a3 = _mm256_fmadd_ps(loadAny(kj + i + 24), _mm256_loadu_ps(q + i + 24), a3);
    }
    const __m256 a = _mm256_add_ps(_mm256_add_ps(a0, a2), _mm256_add_ps(a1, a3));
    __m128 t = _mm_add_ps(_mm256_castps256_ps128(a), _mm256_extractf128_ps(a, 1));
    t = _mm_hadd_ps(t, t);
    float dot = _mm_cvtss_f32(_mm_hadd_ps(t, t));
    for (int i = np; i < headDim; i++) dot = fmaSingle(loadOneAny(kj + i), q[i], dot);
    const float s = dot * scale;
    scores[j] = s;
    maxScore = s > maxScore ? s : maxScore;
  }
  // Softmax: exps summed eight at a time in float, the eights in double; the last eight padded with
  // zeros (llama.cpp's masked positions).
  const __m256 vmax = _mm256_set1_ps(maxScore);
  double sum = 0.0;
  int64_t j = 0;
  for (; j + 8 <= n; j += 8) {
    const __m256 e = expGgml(_mm256_sub_ps(_mm256_loadu_ps(scores + j), vmax));
    _mm256_storeu_ps(scores + j, e);
    sum += (double)hsum(e);
  }
  if (j < n) {
    const size_t rest = (size_t)(n - j);
    float e[8] = {};
    std::memcpy(e, scores + j, sizeof(float) * rest);
    _mm256_storeu_ps(e, expGgml(_mm256_sub_ps(_mm256_loadu_ps(e), vmax)));
    std::memset(e + rest, 0, sizeof(float) * (8 - rest));
    std::memcpy(scores + j, e, sizeof(float) * rest);
    sum += (double)hsum(_mm256_loadu_ps(e));
  }
  const float inv = (float)(1.0 / sum);
  for (j = 0; j + 8 <= n; j += 8) _mm256_storeu_ps(scores + j, _mm256_mul_ps(_mm256_loadu_ps(scores + j), _mm256_set1_ps(inv)));
  for (; j < n; j++) scores[j] *= inv;
  // KQV: output d has eight accumulators, position j feeding number j % 8 (row j % 8 of `acc`).
  // Positions go in blocks of 32, whose V rows stay in L1 while each eight outputs take their turn
  // with their eight rows of accumulators in registers.
  const int d8 = headDim / 8 * 8;
  alignas(32) float acc[8 * kMaxHeadDim];
  std::memset(acc, 0, sizeof(float) * 8 * d8);
  for (int64_t j0 = 0; j0 < n; j0 += 32) {
    const int64_t j1 = j0 + 32 < n ? j0 + 32 : n;
    for (int d = 0; d < d8; d += 8) {
      __m256 a[8];
      for (int l = 0; l < 8; l++) a[l] = _mm256_load_ps(acc + l * d8 + d);
      for (j = j0; j + 8 <= j1; j += 8)
        for (int l = 0; l < 8; l++) a[l] = _mm256_fmadd_ps(loadAny(v + (j + l) * stride + d), _mm256_set1_ps(scores[j + l]), a[l]);
      for (int l = 0; j + l < j1; l++) a[l] = _mm256_fmadd_ps(loadAny(v + (j + l) * stride + d), _mm256_set1_ps(scores[j + l]), a[l]);
      for (int l = 0; l < 8; l++) _mm256_store_ps(acc + l * d8 + d, a[l]);
    }
  }
  for (int d = 0; d < d8; d += 8) {
    __m256 a[8];
    for (int l = 0; l < 8; l++) a[l] = _mm256_load_ps(acc + l * d8 + d);
    _mm256_storeu_ps(out + d, sumRows(a));
  }
  for (int d = d8; d < headDim; d++) {
    float lane[8] = {};
    for (j = 0; j < n; j++) lane[j % 8] = fmaSingle(loadOneAny(v + j * stride + d), scores[j], lane[j % 8]);
    out[d] = hsum(_mm256_loadu_ps(lane));
  }
}

// Queries one attendGroup call takes: the float lanes.
constexpr int kLanes = kAttentionLanes;
constexpr int kBlock = kAttentionBlock;
// Below this many queries for one KV head, attendOne per query costs less (the lanes go unused).
constexpr int kMinGroup = 4;

// Up to 8 queries that read one KV head, one per float lane: query l attends to positions
// [0, n[l]). Either query heads of one token that share the KV head (n the same for all), or, where
// fewer heads share one, those heads of consecutive tokens (n differs). Lanes past nq repeat the
// last query.
struct QueryLanes {
  const float* q[kLanes];
  float* out[kLanes];
  int32_t n[kLanes];
  int nq;
  int64_t nMin, nMax;  // the shortest and longest n
};

// Lanes whose query is past position j (its scores there are masked: -inf, then exp 0).
inline __m256 lanesPast(const int32_t* n, int64_t j) {
  return _mm256_castsi256_ps(_mm256_cmpgt_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(n)), _mm256_set1_epi32((int32_t)j)));
}

// K*Q of 8 query lanes against positions [0, L.nMax): scores[8j + l] = q_l . k_j * scale, each in
// attendOne's order (-inf at positions j >= n[l]), and the lanes' largest scores.
template <typename T, int kHeadDim = 0>
__m256 groupScores(const QueryLanes& L, const T* k, int64_t stride, int headDimArg, float scale, float* scores) {
  const float* const* ql = L.q;
  const int64_t n = L.nMax;
  const int headDim = kHeadDim ? kHeadDim : headDimArg;
  const int np = headDim & ~31;
  // The queries' last headDim % 32 values, transposed for lane-wise FMAs.
  alignas(32) float tail[32 * kLanes];
  for (int i = np; i < headDim; i++)
    for (int l = 0; l < kLanes; l++) tail[(i - np) * kLanes + l] = ql[l][i];
  const __m256 vscale = _mm256_set1_ps(scale);
  __m256 vmax = _mm256_set1_ps(-INFINITY);
  for (int64_t j0 = 0; j0 < n; j0 += kBlock) {
    const int64_t count = n - j0 < kBlock ? n - j0 : kBlock;
    if (j0 + kBlock < n) prefetchRows(k + (j0 + kBlock) * stride, n - j0 - kBlock < kBlock ? n - j0 - kBlock : kBlock, stride, headDim);
    for (int64_t jj = 0; jj < count; jj++) {
      const T* kj = k + (j0 + jj) * stride;
      __m256 a[kLanes];
      for (int l = 0; l < kLanes; l++) {
        __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
        for (int i = 0; i < np; i += 32) {
          a0 = _mm256_fmadd_ps(loadAny(kj + i), _mm256_loadu_ps(ql[l] + i), a0);
          a1 = _mm256_fmadd_ps(loadAny(kj + i + 8), _mm256_loadu_ps(ql[l] + i + 8), a1);
          a2 = _mm256_fmadd_ps(loadAny(kj + i + 16), _mm256_loadu_ps(ql[l] + i + 16), a2);
          a3 = _mm256_fmadd_ps(loadAny(kj + i + 24), _mm256_loadu_ps(ql[l] + i + 24), a3);
        }
        a[l] = _mm256_add_ps(_mm256_add_ps(a0, a2), _mm256_add_ps(a1, a3));
      }
      __m256 dots = laneDots(a);
      for (int i = np; i < headDim; i++) dots = _mm256_fmadd_ps(_mm256_set1_ps(loadOneAny(kj + i)), _mm256_load_ps(tail + (i - np) * kLanes), dots);
      __m256 s = _mm256_mul_ps(dots, vscale);
      if (j0 + jj >= L.nMin) s = _mm256_blendv_ps(_mm256_set1_ps(-INFINITY), s, lanesPast(L.n, j0 + jj));
      _mm256_storeu_ps(scores + (j0 + jj) * kLanes, s);
      vmax = _mm256_max_ps(s, vmax);  // s > max ? s : max, as attendOne
    }
  }
  return vmax;
}

// Softmax of the 8 lanes' scores in place: each query's eight consecutive exps summed in hsum's
// order is the same tree of lane-wise adds over 8 rows; a lane's positions past its n are zeros, as
// attendOne pads its last eight (the blocks wholly past it add 0.0 to the sum, which keeps it).
void groupSoftmax(const QueryLanes& L, float* scores, __m256 vmax) {
  const int64_t n = L.nMax;
  const int64_t n8 = (n + 7) / 8 * 8;
  __m256d sumLo = _mm256_setzero_pd(), sumHi = _mm256_setzero_pd();
  for (int64_t j0 = 0; j0 < n8; j0 += 8) {
    __m256 e[8];
    for (int l = 0; l < 8; l++) {
      e[l] = j0 + l < n ? expGgml(_mm256_sub_ps(_mm256_loadu_ps(scores + (j0 + l) * kLanes), vmax)) : _mm256_setzero_ps();
      if (j0 + l >= L.nMin && j0 + l < n) e[l] = _mm256_and_ps(e[l], lanesPast(L.n, j0 + l));
      _mm256_storeu_ps(scores + (j0 + l) * kLanes, e[l]);
    }
    const __m256 block = sumRows(e);
    sumLo = _mm256_add_pd(sumLo, _mm256_cvtps_pd(_mm256_castps256_ps128(block)));
    sumHi = _mm256_add_pd(sumHi, _mm256_cvtps_pd(_mm256_extractf128_ps(block, 1)));
  }
  const __m256d one = _mm256_set1_pd(1.0);
  const __m256 inv = _mm256_set_m128(_mm256_cvtpd_ps(_mm256_div_pd(one, sumHi)), _mm256_cvtpd_ps(_mm256_div_pd(one, sumLo)));
  for (int64_t j = 0; j < n; j++) _mm256_storeu_ps(scores + j * kLanes, _mm256_mul_ps(_mm256_loadu_ps(scores + j * kLanes), inv));
}

// KQV of the first nq lanes, as attendOne, each position's values read once for every query.
// acc: 64 * headDim floats. kHeadDim, where given, is headDim known when
// compiling (see attendGroup).
template <typename T, int kHeadDim = 0>
void groupValues(const QueryLanes& L, const float* scores, const T* v, int64_t stride, int headDimArg, float* acc) {
  const int headDim = kHeadDim ? kHeadDim : headDimArg;
  const int nq = L.nq;
  const int64_t n = L.nMax;
  const int d8 = headDim / 8 * 8;
  float lanes[kLanes][8 * 8] = {};  // the last headDim % 8 outputs' lanes, per query
  for (int64_t j0 = 0; j0 < n; j0 += kBlock) {
    const int64_t j1 = j0 + kBlock < n ? j0 + kBlock : n;
    if (j1 < n) prefetchRows(v + j1 * stride, n - j1 < kBlock ? n - j1 : kBlock, stride, headDim);
    // Accumulator row m of every query takes the positions j = m (mod 8) in order (j0 is a
    // multiple of 8), so one load of a position's values feeds the eight lanes' chains, each with
    // its score broadcast. Every lane is kept (those past nq repeat the last query), so that the
    // accumulators stay in registers. The first block starts them at zero (and writes every one).
    for (int m = 0; m < 8; m++) {
      for (int d = 0; d < d8; d += 8) {
        __m256 a[kLanes];
        for (int l = 0; l < kLanes; l++) a[l] = j0 == 0 ? _mm256_setzero_ps() : _mm256_loadu_ps(acc + (l * 8 + m) * d8 + d);
        const int64_t jAll = j1 < L.nMin ? j1 : L.nMin;
        int64_t j = j0 + m;
        for (; j < jAll; j += 8) {
          const __m256 vj = loadAny(v + j * stride + d);
          for (int l = 0; l < kLanes; l++) a[l] = _mm256_fmadd_ps(vj, _mm256_broadcast_ss(scores + j * kLanes + l), a[l]);
        }
        // Positions some lanes are past: those lanes skip them (adding 0 * v could turn a -0 sum to
        // +0, or meet a value that is not finite).
        for (; j < j1; j += 8) {
          const __m256 vj = loadAny(v + j * stride + d);
          for (int l = 0; l < kLanes; l++)
            if (j < L.n[l]) a[l] = _mm256_fmadd_ps(vj, _mm256_broadcast_ss(scores + j * kLanes + l), a[l]);
        }
        for (int l = 0; l < kLanes; l++) _mm256_storeu_ps(acc + (l * 8 + m) * d8 + d, a[l]);
      }
    }
    for (int l = 0; l < nq; l++) {
      const float* sl = scores + l;
      const int64_t jl = j1 < L.n[l] ? j1 : L.n[l];
      for (int d = d8; d < headDim; d++)
        for (int64_t j = j0; j < jl; j++) {
          float& lane = lanes[l][(d - d8) * 8 + j % 8];
          lane = fmaSingle(loadOneAny(v + j * stride + d), sl[j * kLanes], lane);
        }
    }
  }
  for (int l = 0; l < nq; l++) {
    const float* al = acc + l * 8 * d8;
    float* o = L.out[l];
    for (int d = 0; d < d8; d += 8) {
      __m256 a[8];
      for (int m = 0; m < 8; m++) a[m] = _mm256_loadu_ps(al + m * d8 + d);
      _mm256_storeu_ps(o + d, sumRows(a));
    }
    for (int d = d8; d < headDim; d++) o[d] = hsum(_mm256_loadu_ps(&lanes[l][(d - d8) * 8]));
  }
}

// The lanes' queries (see QueryLanes), each bit for bit as attendOne computes it. Scores are kept
// transposed, scores[8j + l], so that each step that attendOne does on one query's 8 consecutive
// positions (the dot product's horizontal sum, the softmax's block sums) is the same sequence of
// lane-wise operations on 8 rows here. With AVX-512 and head sizes that are whole steps of 32, the
// heads of one token run their products and values on 512-bit vectors (attention-avx512.cpp), in
// the same order; lanes of several tokens (other lengths, outputs not one row) take the 256-bit
// kernels. scratch: attentionScratchFloats floats.
template <typename T>
void attendGroup(const QueryLanes& L, const T* k, const T* v, int64_t stride, int headDim, float scale, float* scratch) {
  float* scores = scratch;
  float* rows = scores + kLanes * ((L.nMax + 7) / 8 * 8);  // (kBlock, headDim): the AVX-512 kernels' widened blocks
  float* acc = rows + kBlock * headDim;                     // per query: 8 rows of headDim accumulators
  bool oneRow = L.nMin == L.nMax;
  for (int l = 1; l < L.nq; l++) oneRow = oneRow && L.out[l] == L.out[0] + (int64_t)l * headDim;
  if (oneRow && useAvx512() && headDim % 32 == 0) {
    groupSoftmax(L, scores, groupScores_avx512(L.q, k, L.nMax, stride, headDim, scale, scores, rows));
    groupValues_avx512(scores, L.nq, v, L.nMax, stride, headDim, rows, acc, L.out[0], headDim);
    return;
  }
  byHeadDim(headDim, [&](auto known) {
    constexpr int kHeadDim = decltype(known)::value;
    groupSoftmax(L, scores, groupScores<T, kHeadDim>(L, k, stride, headDim, scale, scores));
    groupValues<T, kHeadDim>(L, scores, v, stride, headDim, acc);
  });
}

// The first block of n positions' keys and values, whole cache rows (every KV head), asked for at
// once before the first head starts: a decode step finds them in memory, and one head's loads alone
// wait on each other. TinyLlama Q4_0 decode, attention's ms per step (Zen 5, alternating): at depth
// ~50 0.44-0.48 -> 0.33-0.35, at ~450 1.51-1.68 -> 1.30-1.36 with the passes' own next-block requests.
void prefetchFirstRows(const KvView& kv, int64_t n, int64_t kvWidth) {
  const int64_t count = n < kBlock ? n : kBlock;
  if (kv.type == GgmlType::F16) {
    prefetchRows(static_cast<const fp16_t*>(kv.k), count, kvWidth, (int)kvWidth);
    prefetchRows(static_cast<const fp16_t*>(kv.v), count, kvWidth, (int)kvWidth);
  } else {
    prefetchRows(static_cast<const float*>(kv.k), count, kvWidth, (int)kvWidth);
    prefetchRows(static_cast<const float*>(kv.v), count, kvWidth, (int)kvWidth);
  }
}

}  // namespace

void attentionRows_avx2(const float* q, const KvView& kv, float* out, int64_t nTokens, const int32_t* positions,
                        const AttentionParams& p, float* scratch, int ith, int nth) {
  if (p.headDim > kMaxHeadDim) {
    attentionRows(q, kv, out, nTokens, positions, p, scratch, ith, nth);
    return;
  }
  const int64_t kvWidth = (int64_t)p.nKvHeads * p.headDim;
  const int64_t qWidth = (int64_t)p.nHeads * p.headDim;
  const int group = p.nHeads / p.nKvHeads;
  float* part = scratch + (int64_t)ith * attentionScratchFloats(kv.capacity, p.headDim);
  // A unit's queries against KV head g, the cache read as T (fp16_t or float).
  auto attend = [&](auto element, const QueryLanes& L, int g) {
    using T = decltype(element);
    const T* k = static_cast<const T*>(kv.k) + (int64_t)g * p.headDim;
    const T* v = static_cast<const T*>(kv.v) + (int64_t)g * p.headDim;
    if (L.nq < kMinGroup) {
      for (int l = 0; l < L.nq; l++) attendOne<T>(L.q[l], k, v, L.n[l], kvWidth, p.headDim, p.scale, part, L.out[l]);
    } else {
      attendGroup(L, k, v, kvWidth, p.headDim, p.scale, part);
    }
  };
  // A unit is up to 8 queries that read one KV head: up to 8 of the heads that share it, of one
  // token, or, where fewer than 8 share one (Qwen3: 2, Llama 3 and Mistral: 4), those heads of
  // 8 / group consecutive tokens, so that a prefill fills the lanes. Qwen3-0.6B Q8_0, a 512-token
  // prefill on Zen 3 with 2 threads: attention 1.41-1.50 s -> 0.51-0.59 s, the prefill 99-103 ->
  // 118-137 tok/s. A unit with fewer queries than kMinGroup (a decode step's heads where fewer
  // than 4 share one) goes query by query through attendOne.
  const int perKv = (group + kLanes - 1) / kLanes;
  const int tokensPerUnit = group < kLanes ? kLanes / group : 1;
  const int64_t tokenUnits = (nTokens + tokensPerUnit - 1) / tokensPerUnit;
  const int64_t units = tokenUnits * p.nKvHeads * perKv;
  int64_t u0, u1;
  splitRange(units, ith, nth, &u0, &u1);
  if (u0 < u1) prefetchFirstRows(kv, (int64_t)positions[u0 / (p.nKvHeads * perKv) * tokensPerUnit] + 1, kvWidth);
  for (int64_t u = u0; u < u1; u++) {
    const int64_t t0 = u / (p.nKvHeads * perKv) * tokensPerUnit;
    const int g = (int)(u / perKv % p.nKvHeads), sub = (int)(u % perKv);
    const int64_t tEnd = t0 + tokensPerUnit < nTokens ? t0 + tokensPerUnit : nTokens;
    const int h0 = g * group + sub * kLanes;
    const int heads = group - sub * kLanes < kLanes ? group - sub * kLanes : kLanes;
    QueryLanes L;
    L.nq = 0;
    L.nMin = INT64_MAX;
    L.nMax = 0;
    for (int64_t t = t0; t < tEnd; t++)
      for (int h = h0; h < h0 + heads; h++) {
        L.q[L.nq] = q + t * qWidth + (int64_t)h * p.headDim;
        L.out[L.nq] = out + t * qWidth + (int64_t)h * p.headDim;
        L.n[L.nq] = positions[t] + 1;
        L.nMin = L.n[L.nq] < L.nMin ? L.n[L.nq] : L.nMin;
        L.nMax = L.n[L.nq] > L.nMax ? L.n[L.nq] : L.nMax;
        L.nq++;
      }
    for (int l = L.nq; l < kLanes; l++) {
      L.q[l] = L.q[L.nq - 1];
      L.out[l] = L.out[L.nq - 1];
      L.n[l] = L.n[L.nq - 1];
    }
    if (kv.type == GgmlType::F16) attend(fp16_t{}, L, g);
    else attend(0.0f, L, g);
  }
}

}  // namespace kiln

// Scalar definitions of the elementwise, normalization, RoPE and attention ops.
// They follow ggml's CPU semantics (double accumulation in RMSNorm, float RoPE angles).
#include "ops.h"

#include <cmath>
#include <cstring>

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
    for (int64_t i = 0; i < width; i++) sum += (double)xr[i] * (double)xr[i];
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
      v[a] = x0 * c - x1 * s;
      v[b] = x0 * s + x1 * c;
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
  float* scores = scratch + (int64_t)ith * (kv.capacity + p.headDim);
  float* acc = scores + kv.capacity;
  int64_t r0, r1;
  splitRange(rows, ith, nth, &r0, &r1);
  for (int64_t r = r0; r < r1; r++) {
    const int64_t t = r / p.nHeads;
    const int h = (int)(r % p.nHeads);
    const int kvh = h / group;
    const float* qh = q + t * (int64_t)p.nHeads * p.headDim + (int64_t)h * p.headDim;
    const int64_t n = (int64_t)positions[t] + 1;
    float maxScore = -INFINITY;
    for (int64_t j = 0; j < n; j++) {
      const int64_t base = j * kvWidth + (int64_t)kvh * p.headDim;
      float dot = 0.0f;
      for (int d = 0; d < p.headDim; d++) dot += qh[d] * kvAt(kv.k, kv.type, base + d);
      scores[j] = dot * p.scale;
      if (scores[j] > maxScore) maxScore = scores[j];
    }
    double sum = 0.0;
    for (int64_t j = 0; j < n; j++) {
      scores[j] = std::exp(scores[j] - maxScore);
      sum += scores[j];
    }
    const float inv = (float)(1.0 / sum);
    std::memset(acc, 0, sizeof(float) * p.headDim);
    for (int64_t j = 0; j < n; j++) {
      const int64_t base = j * kvWidth + (int64_t)kvh * p.headDim;
      const float w = scores[j] * inv;
      for (int d = 0; d < p.headDim; d++) acc[d] += w * kvAt(kv.v, kv.type, base + d);
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

const OpKernels& opKernels() {
  static const OpKernels generic{rmsNormRows, ropeRows, kvStoreRows, attentionRows, swigluRows, addRows};
#if defined(__x86_64__) || defined(__i386__)
  static const OpKernels avx2{rmsNormRows_avx2, ropeRows_avx2, kvStoreRows_avx2, attentionRows_avx2, swigluRows_avx2, addRows_avx2};
  const CpuFeatures& f = cpuFeatures();
  if (kernelLevel() == KernelLevel::Best && f.avx2 && f.fma && f.f16c) return avx2;
#endif
  return generic;
}

}  // namespace kiln

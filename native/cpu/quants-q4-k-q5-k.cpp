// Q4_K and Q5_K: super-blocks of 256 in 8 sub-blocks of 32, x = d * scale_j * q - dmin * min_j with
// 6-bit scales and mins. Q5_K is Q4_K with a fifth bit per value, so both share one implementation
// parameterised by the bit count. Multiplied with Q8_K activations.
#include <algorithm>
#include <cmath>

#include "quants.h"

namespace kiln {

namespace {

constexpr int kSubBlocks = QK_K / 32;

// Fits x ~ scale * l - offset with l in [0, nmax], weighting each value by w. Starting from the
// rounding that spans [min(x, 0), max(x)], it tries nstep + 1 inverse scales around it and keeps
// the weighted least-squares (scale, offset) of the rounding with the smallest error (the search
// of ggml's make_qkx2_quants). Returns the scale; *offset >= 0.
float fitScaleOffset(const float* x, const float* w, int nmax, float rmin, float rdelta, int nstep,
                     float* offset) {
  constexpr int n = 32;
  float min = x[0], max = x[0];
  float sumW = w[0], sumX = w[0] * x[0];
  for (int i = 1; i < n; i++) {
    if (x[i] < min) min = x[i];
    if (x[i] > max) max = x[i];
    sumW += w[i];
    sumX += w[i] * x[i];
  }
  if (min > 0) min = 0;
  if (max == min) {
    *offset = -min;
    return 0;
  }
  float iscale = nmax / (max - min);
  float scale = 1 / iscale;
  float bestError = 0;
  for (int i = 0; i < n; i++) {
    const int l = std::clamp(nearestInt(iscale * (x[i] - min)), 0, nmax);
    const float diff = scale * l + min - x[i];
    bestError += w[i] * (diff * diff);
  }
  uint8_t L[n];
  for (int step = 0; step <= nstep; step++) {
    // min is the best fit so far, as in ggml: later steps search around it.
    iscale = (rmin + rdelta * step + nmax) / (max - min);
    float sumL = 0, sumL2 = 0, sumXL = 0;
    for (int i = 0; i < n; i++) {
      const int l = std::clamp(nearestInt(iscale * (x[i] - min)), 0, nmax);
      L[i] = (uint8_t)l;
      sumL += w[i] * l;
      sumL2 += w[i] * l * l;
      sumXL += w[i] * l * x[i];
    }
    const float det = sumW * sumL2 - sumL * sumL;
    if (!(det > 0)) continue;
    float thisScale = (sumW * sumXL - sumX * sumL) / det;
    float thisMin = (sumL2 * sumX - sumL * sumXL) / det;
    if (thisMin > 0) {  // the offset may only lower values: refit the scale alone
      thisMin = 0;
      thisScale = sumXL / sumL2;
    }
    float error = 0;
    for (int i = 0; i < n; i++) {
      const float diff = thisScale * L[i] + thisMin - x[i];
      error += w[i] * (diff * diff);
    }
    if (error < bestError) {
      bestError = error;
      scale = thisScale;
      min = thisMin;
    }
  }
  *offset = -min;
  return scale;
}

template <int kBits>
struct ScaleMinK;

template <>
struct ScaleMinK<4> {
  using Block = BlockQ4_K;
  // The search grid of ggml's quantize_row_q4_K_ref.
  static constexpr float kRmin = -1.0f, kRdelta = 0.1f;
  static constexpr int kSteps = 20;
  // The 256 values in element order: value 64g + l (l < 32) is the low nibble of qs[32g + l],
  // value 64g + 32 + l its high nibble.
  static void decode(const Block& b, uint8_t* q) {
    for (int g = 0; g < QK_K / 64; g++) {
      for (int l = 0; l < 32; l++) {
        q[64 * g + l] = b.qs[32 * g + l] & 0x0f;
        q[64 * g + 32 + l] = b.qs[32 * g + l] >> 4;
      }
    }
  }
  static void pack(const uint8_t* L, Block& b) {
    for (int g = 0; g < QK_K / 64; g++)
      for (int l = 0; l < 32; l++) b.qs[32 * g + l] = (uint8_t)(L[64 * g + l] | L[64 * g + 32 + l] << 4);
  }
};

template <>
struct ScaleMinK<5> {
  using Block = BlockQ5_K;
  // The search grid of ggml's quantize_row_q5_K_ref.
  static constexpr float kRmin = -0.5f, kRdelta = 0.1f;
  static constexpr int kSteps = 15;
  // As Q4_K, with the fifth bit of values 64g + l and 64g + 32 + l in bits 2g and 2g + 1 of qh[l].
  static void decode(const Block& b, uint8_t* q) {
    for (int g = 0; g < QK_K / 64; g++) {
      for (int l = 0; l < 32; l++) {
        q[64 * g + l] = (uint8_t)((b.qs[32 * g + l] & 0x0f) | ((b.qh[l] >> (2 * g)) & 1) << 4);
        q[64 * g + 32 + l] = (uint8_t)((b.qs[32 * g + l] >> 4) | ((b.qh[l] >> (2 * g + 1)) & 1) << 4);
      }
    }
  }
  static void pack(const uint8_t* L, Block& b) {
    std::memset(b.qh, 0, sizeof b.qh);
    for (int g = 0; g < QK_K / 64; g++) {
      for (int l = 0; l < 32; l++) {
        const uint8_t lo = L[64 * g + l], hi = L[64 * g + 32 + l];
        b.qs[32 * g + l] = (uint8_t)((lo & 0x0f) | (hi & 0x0f) << 4);
        b.qh[l] |= (uint8_t)((lo >> 4) << (2 * g) | (hi >> 4) << (2 * g + 1));
      }
    }
  }
};

template <int kBits>
void toFloatScaleMinK(const void* src, float* dst, int64_t n) {
  using K = ScaleMinK<kBits>;
  const typename K::Block* x = static_cast<const typename K::Block*>(src);
  for (int64_t b = 0; b < n / QK_K; b++) {
    const float d = fp16ToFloat(x[b].d), dmin = fp16ToFloat(x[b].dmin);
    uint8_t sm[2 * kSubBlocks], q[QK_K];
    unpackScalesMinsK4(x[b].scales, sm);
    K::decode(x[b], q);
    for (int j = 0; j < kSubBlocks; j++) {
      const float dj = d * sm[j], mj = dmin * sm[kSubBlocks + j];
      for (int l = 0; l < 32; l++) dst[b * QK_K + 32 * j + l] = dj * q[32 * j + l] - mj;
    }
  }
}

template <int kBits>
void fromFloatScaleMinK(const float* src, void* dst, int64_t n) {
  using K = ScaleMinK<kBits>;
  constexpr int nmax = (1 << kBits) - 1;
  typename K::Block* y = static_cast<typename K::Block*>(dst);
  for (int64_t b = 0; b < n / QK_K; b++) {
    const float* x = src + b * QK_K;
    float scales[kSubBlocks], mins[kSubBlocks], w[32];
    float maxScale = 0, maxMin = 0;
    for (int j = 0; j < kSubBlocks; j++) {
      const float* xs = x + 32 * j;
      // ggml's weighting: errors on large values cost more, but every value counts.
      float sumX2 = 0;
      for (int l = 0; l < 32; l++) sumX2 += xs[l] * xs[l];
      const float avX = std::sqrt(sumX2 / 32);
      for (int l = 0; l < 32; l++) w[l] = avX + std::fabs(xs[l]);
      scales[j] = fitScaleOffset(xs, w, nmax, K::kRmin, K::kRdelta, K::kSteps, &mins[j]);
      if (scales[j] > maxScale) maxScale = scales[j];
      if (mins[j] > maxMin) maxMin = mins[j];
    }
    // Scales and mins are stored as 6-bit multiples of d and dmin.
    const float invScale = maxScale > 0 ? 63 / maxScale : 0;
    const float invMin = maxMin > 0 ? 63 / maxMin : 0;
    uint8_t ls[kSubBlocks], lm[kSubBlocks];
    for (int j = 0; j < kSubBlocks; j++) {
      ls[j] = (uint8_t)std::clamp(nearestInt(invScale * scales[j]), 0, 63);
      lm[j] = (uint8_t)std::clamp(nearestInt(invMin * mins[j]), 0, 63);
    }
    packScalesMinsK4(ls, lm, y[b].scales);
    y[b].d = floatToFp16(maxScale / 63);
    y[b].dmin = floatToFp16(maxMin / 63);
    // Round each value again against the scale and min as stored.
    const float d = fp16ToFloat(y[b].d), dmin = fp16ToFloat(y[b].dmin);
    uint8_t L[QK_K];
    for (int j = 0; j < kSubBlocks; j++) {
      const float dj = d * ls[j], mj = dmin * lm[j];
      for (int l = 0; l < 32; l++) {
        L[32 * j + l] = dj != 0 ? (uint8_t)std::clamp(nearestInt((x[32 * j + l] + mj) / dj), 0, nmax) : 0;
      }
    }
    K::pack(L, y[b]);
  }
}

// Integer sums per sub-block, then d * sum(scale_j * q.y) - dmin * sum(min_j * sum(y)), the sums of
// y coming from the Q8_K block's bsums.
template <int kBits>
void vecDotScaleMinK(int64_t n, float* s, const void* vx, const void* vy) {
  using K = ScaleMinK<kBits>;
  const typename K::Block* x = static_cast<const typename K::Block*>(vx);
  const BlockQ8_K* y = static_cast<const BlockQ8_K*>(vy);
  float sum = 0;
  for (int64_t b = 0; b < n / QK_K; b++) {
    uint8_t sm[2 * kSubBlocks], q[QK_K];
    unpackScalesMinsK4(x[b].scales, sm);
    K::decode(x[b], q);
    int sumi = 0, summ = 0;
    for (int j = 0; j < kSubBlocks; j++) {
      int dot = 0;
      for (int l = 0; l < 32; l++) dot += q[32 * j + l] * y[b].qs[32 * j + l];
      sumi += sm[j] * dot;
      summ += sm[kSubBlocks + j] * (y[b].bsums[2 * j] + y[b].bsums[2 * j + 1]);
    }
    const float d = y[b].d * fp16ToFloat(x[b].d), dmin = y[b].d * fp16ToFloat(x[b].dmin);
    sum += d * sumi - dmin * summ;
  }
  *s = sum;
}

}  // namespace

void toFloatQ4_K(const void* src, float* dst, int64_t n) { toFloatScaleMinK<4>(src, dst, n); }
void fromFloatQ4_K(const float* src, void* dst, int64_t n) { fromFloatScaleMinK<4>(src, dst, n); }
void vecDotQ4_K_generic(int64_t n, float* s, const void* x, const void* y) { vecDotScaleMinK<4>(n, s, x, y); }
void toFloatQ5_K(const void* src, float* dst, int64_t n) { toFloatScaleMinK<5>(src, dst, n); }
void fromFloatQ5_K(const float* src, void* dst, int64_t n) { fromFloatScaleMinK<5>(src, dst, n); }
void vecDotQ5_K_generic(int64_t n, float* s, const void* x, const void* y) { vecDotScaleMinK<5>(n, s, x, y); }

}  // namespace kiln

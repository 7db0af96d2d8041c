// Q6_K: super-blocks of 256 in 16 sub-blocks of 16, x = d * scale_j * (q - 32) with int8 scales and
// 6-bit q split into ql (low 4 bits) and qh (high 2 bits). Multiplied with Q8_K activations.
#include <algorithm>
#include <cmath>

#include "quants.h"

namespace kiln {

namespace {

constexpr int kSubBlocks = QK_K / 16;

// Below this largest magnitude a sub-block (or a super-block's largest scale) counts as zero.
constexpr float kZeroGroup = 1e-15f;

// The 256 signed values of a block in element order: within each half of 128, element l (l < 32)
// and l + 64 share ql[l], l + 32 and l + 96 share ql[l + 32], and all four share qh[l].
void decodeQ6_K(const BlockQ6_K& b, int8_t* q) {
  for (int h = 0; h < 2; h++) {
    const uint8_t* ql = b.ql + 64 * h;
    const uint8_t* qh = b.qh + 32 * h;
    int8_t* out = q + 128 * h;
    for (int l = 0; l < 32; l++) {
      out[l] = (int8_t)(((ql[l] & 0x0f) | ((qh[l] >> 0) & 3) << 4) - 32);
      out[l + 32] = (int8_t)(((ql[l + 32] & 0x0f) | ((qh[l] >> 2) & 3) << 4) - 32);
      out[l + 64] = (int8_t)(((ql[l] >> 4) | ((qh[l] >> 4) & 3) << 4) - 32);
      out[l + 96] = (int8_t)(((ql[l + 32] >> 4) | ((qh[l] >> 6) & 3) << 4) - 32);
    }
  }
}

// Fits x ~ scale * l with l in [-32, 31], weighting each value by x^2: rounds at the scale that maps
// the value of largest magnitude to -32, tries 18 scales around it and keeps the least-squares
// scale of the best rounding (ggml's make_qx_quants with rmse_type 1).
float fitScale(const float* x) {
  constexpr int n = 16, nmax = 32;
  float max = 0, amax = 0;
  for (int i = 0; i < n; i++) {
    if (std::fabs(x[i]) > amax) {
      amax = std::fabs(x[i]);
      max = x[i];
    }
  }
  if (amax < kZeroGroup) return 0;
  float sumLX = 0, sumL2 = 0;
  auto accumulate = [&](float iscale) {
    sumLX = 0;
    sumL2 = 0;
    for (int i = 0; i < n; i++) {
      const int l = std::clamp(nearestInt(iscale * x[i]), -nmax, nmax - 1);
      const float w = x[i] * x[i];
      sumLX += w * x[i] * l;
      sumL2 += w * l * l;
    }
  };
  accumulate(-nmax / max);
  float scale = sumL2 != 0 ? sumLX / sumL2 : 0;
  float best = scale * sumLX;
  for (int step = -9; step <= 9; step++) {
    if (step == 0) continue;
    accumulate(-(nmax + 0.1f * step) / max);
    if (sumL2 > 0 && sumLX * sumLX > best * sumL2) {
      scale = sumLX / sumL2;
      best = scale * sumLX;
    }
  }
  return scale;
}

}  // namespace

void toFloatQ6_K(const void* src, float* dst, int64_t n) {
  const BlockQ6_K* x = static_cast<const BlockQ6_K*>(src);
  int8_t q[QK_K];
  for (int64_t b = 0; b < n / QK_K; b++) {
    const float d = fp16ToFloat(x[b].d);
    decodeQ6_K(x[b], q);
    for (int i = 0; i < QK_K; i++) dst[b * QK_K + i] = d * x[b].scales[i / 16] * q[i];
  }
}

void fromFloatQ6_K(const float* src, void* dst, int64_t n) {
  BlockQ6_K* y = static_cast<BlockQ6_K*>(dst);
  for (int64_t b = 0; b < n / QK_K; b++) {
    const float* x = src + b * QK_K;
    float scales[kSubBlocks];
    float maxScale = 0, maxAbsScale = 0;
    for (int j = 0; j < kSubBlocks; j++) {
      scales[j] = fitScale(x + 16 * j);
      if (std::fabs(scales[j]) > maxAbsScale) {
        maxAbsScale = std::fabs(scales[j]);
        maxScale = scales[j];
      }
    }
    std::memset(&y[b], 0, sizeof(BlockQ6_K));
    if (maxAbsScale < kZeroGroup) continue;  // all zero: d = 0 and every q = 0 decode to 0
    // The largest scale maps to -128, the int8 end with room for it.
    const float iscale = -128 / maxScale;
    y[b].d = floatToFp16(1 / iscale);
    for (int j = 0; j < kSubBlocks; j++) y[b].scales[j] = (int8_t)std::clamp(nearestInt(iscale * scales[j]), -128, 127);
    // Round each value again against the scale as stored.
    const float d = fp16ToFloat(y[b].d);
    uint8_t L[QK_K];
    for (int j = 0; j < kSubBlocks; j++) {
      const float dj = d * y[b].scales[j];
      for (int l = 0; l < 16; l++) {
        L[16 * j + l] = (uint8_t)(dj != 0 ? std::clamp(nearestInt(x[16 * j + l] / dj), -32, 31) + 32 : 32);
      }
    }
    for (int h = 0; h < 2; h++) {
      const uint8_t* Lh = L + 128 * h;
      for (int l = 0; l < 32; l++) {
        y[b].ql[64 * h + l] = (uint8_t)((Lh[l] & 0x0f) | (Lh[l + 64] & 0x0f) << 4);
        y[b].ql[64 * h + l + 32] = (uint8_t)((Lh[l + 32] & 0x0f) | (Lh[l + 96] & 0x0f) << 4);
        y[b].qh[32 * h + l] = (uint8_t)(Lh[l] >> 4 | (Lh[l + 32] >> 4) << 2 | (Lh[l + 64] >> 4) << 4 | (Lh[l + 96] >> 4) << 6);
      }
    }
  }
}

void vecDotQ6_K_generic(int64_t n, float* s, const void* vx, const void* vy) {
  const BlockQ6_K* x = static_cast<const BlockQ6_K*>(vx);
  const BlockQ8_K* y = static_cast<const BlockQ8_K*>(vy);
  int8_t q[QK_K];
  float sum = 0;
  for (int64_t b = 0; b < n / QK_K; b++) {
    decodeQ6_K(x[b], q);
    int sumi = 0;
    for (int j = 0; j < kSubBlocks; j++) {
      int dot = 0;
      for (int l = 0; l < 16; l++) dot += q[16 * j + l] * y[b].qs[16 * j + l];
      sumi += x[b].scales[j] * dot;
    }
    sum += y[b].d * fp16ToFloat(x[b].d) * sumi;
  }
  *s = sum;
}

}  // namespace kiln

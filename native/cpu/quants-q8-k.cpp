// Q8_K: the activation type of K-quant dot products. 256 int8 values with a float scale and the sums
// of each 16, which fold the K-quants' mins and offsets into one multiply per sub-block.
#include <algorithm>
#include <cmath>

#include "quants.h"

namespace kiln {

void toFloatQ8_K(const void* src, float* dst, int64_t n) {
  const BlockQ8_K* x = static_cast<const BlockQ8_K*>(src);
  for (int64_t b = 0; b < n / QK_K; b++)
    for (int i = 0; i < QK_K; i++) dst[b * QK_K + i] = x[b].d * x[b].qs[i];
}

// ggml's quantize_row_q8_K_ref: the signed value of largest magnitude maps to -127 exactly.
void fromFloatQ8_K(const float* src, void* dst, int64_t n) {
  BlockQ8_K* y = static_cast<BlockQ8_K*>(dst);
  for (int64_t b = 0; b < n / QK_K; b++) {
    const float* x = src + b * QK_K;
    float max = 0, amax = 0;
    for (int i = 0; i < QK_K; i++) {
      if (std::fabs(x[i]) > amax) {
        amax = std::fabs(x[i]);
        max = x[i];
      }
    }
    if (amax == 0) {
      std::memset(&y[b], 0, sizeof(BlockQ8_K));
      continue;
    }
    const float iscale = -127 / max;
    for (int i = 0; i < QK_K; i++) y[b].qs[i] = (int8_t)std::clamp(nearestInt(iscale * x[i]), -127, 127);
    for (int j = 0; j < QK_K / 16; j++) {
      int sum = 0;
      for (int i = 0; i < 16; i++) sum += y[b].qs[16 * j + i];
      y[b].bsums[j] = (int16_t)sum;
    }
    y[b].d = 1 / iscale;
  }
}

}  // namespace kiln

// Q8_0: blocks of 32 int8 with one fp16 scale. The weight type of Q8_0 files and the activation
// type that Q8_0 and Q4_0 weights are multiplied with.
#include <cmath>

#include "quants.h"

namespace kiln {

void toFloatQ8_0(const void* src, float* dst, int64_t n) {
  const BlockQ8_0* x = static_cast<const BlockQ8_0*>(src);
  for (int64_t b = 0; b < n / QK8_0; b++) {
    const float d = fp16ToFloat(x[b].d);
    for (int j = 0; j < QK8_0; j++) dst[b * QK8_0 + j] = x[b].qs[j] * d;
  }
}

// ggml's quantize_row_q8_0_ref: the largest magnitude maps to +-127, rounding half away from zero.
// The clamp only matters where 1/d overflows (subnormal blocks) or the input is not finite; it
// keeps every float-to-int conversion defined.
void fromFloatQ8_0(const float* src, void* dst, int64_t n) {
  BlockQ8_0* y = static_cast<BlockQ8_0*>(dst);
  for (int64_t b = 0; b < n / QK8_0; b++) {
    const float* x = src + b * QK8_0;
    float amax = 0;
    for (int j = 0; j < QK8_0; j++) amax = std::fmax(amax, std::fabs(x[j]));
    const float d = amax / 127;
    const float id = d != 0 ? 1 / d : 0;
    y[b].d = floatToFp16(d);
    for (int j = 0; j < QK8_0; j++) {
      const float v = std::round(x[j] * id);
      y[b].qs[j] = (int8_t)(v > -127 ? (v < 127 ? (int)v : 127) : -127);
    }
  }
}

void vecDotQ8_0_generic(int64_t n, float* s, const void* vx, const void* vy) {
  const BlockQ8_0* x = static_cast<const BlockQ8_0*>(vx);
  const BlockQ8_0* y = static_cast<const BlockQ8_0*>(vy);
  float sum = 0;
  for (int64_t b = 0; b < n / QK8_0; b++) {
    int sumi = 0;
    for (int j = 0; j < QK8_0; j++) sumi += x[b].qs[j] * y[b].qs[j];
    sum += sumi * (fp16ToFloat(x[b].d) * fp16ToFloat(y[b].d));
  }
  *s = sum;
}

}  // namespace kiln

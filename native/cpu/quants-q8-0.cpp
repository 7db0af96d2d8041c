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

// The activation quantizer of llama.cpp's x86 builds (quantize_row_q8_0 with AVX or AVX2, and
// ggml_quantize_mat_q8_0_4x8 in front of the repacked Q4_0 kernels): the reference's scale, but
// values are multiplied by 127 / amax instead of 1 / d and rounded half to even. The two differ by
// one step where x * id lies within a rounding of a half. That is rare for most activations, but an
// RMS-normed Q4_0 embedding row (with unit norm weights) is a scaled copy of 4-bit integers, so
// nearly every block holds a value at 4/8 of its largest, 63.5 steps; which level it gets moved
// tiny-llama-q4_0's log-probabilities by up to 0.1 against llama.cpp's.
void fromFloatActivationsQ8_0(const float* src, void* dst, int64_t n) {
  BlockQ8_0* y = static_cast<BlockQ8_0*>(dst);
  for (int64_t b = 0; b < n / QK8_0; b++) {
    const float* x = src + b * QK8_0;
    float amax = 0;
    for (int j = 0; j < QK8_0; j++) amax = std::fmax(amax, std::fabs(x[j]));
    const float id = amax != 0 ? 127 / amax : 0;
    y[b].d = floatToFp16(amax / 127);
    // nearestInt needs |v| < 2^22. As in the reference quantizer, the bounds keep the result
    // defined where 127 / amax overflows (amax below 127 / FLT_MAX) or the input is not finite.
    for (int j = 0; j < QK8_0; j++) {
      const float v = x[j] * id;
      y[b].qs[j] = (int8_t)(v > -127 ? (v < 127 ? nearestInt(v) : 127) : -127);
    }
  }
}

// llama.cpp's order on x86 (ggml_vec_dot_q8_0_q8_0 with AVX2, and llamafile's tinyBLAS_Q0_AVX
// for batches), so that kiln's sums round as the reference's do: eight running sums, lane l taking
// the products of values 4l..4l+3 of every block with one FMA per block, added up at the end in
// the order of ggml's hsum_float_8. vecDotQ8_0_avx2 computes the same bits.
void vecDotQ8_0_generic(int64_t n, float* s, const void* vx, const void* vy) {
  const BlockQ8_0* x = static_cast<const BlockQ8_0*>(vx);
  const BlockQ8_0* y = static_cast<const BlockQ8_0*>(vy);
  float lane[8] = {};
  for (int64_t b = 0; b < n / QK8_0; b++) {
    const float d = fp16ToFloat(x[b].d) * fp16ToFloat(y[b].d);
    for (int l = 0; l < 8; l++) {
      int sumi = 0;
      for (int j = 4 * l; j < 4 * l + 4; j++) sumi += x[b].qs[j] * y[b].qs[j];
      lane[l] = std::fma((float)sumi, d, lane[l]);
    }
  }
  *s = ((lane[0] + lane[4]) + (lane[2] + lane[6])) + ((lane[1] + lane[5]) + (lane[3] + lane[7]));
}

}  // namespace kiln

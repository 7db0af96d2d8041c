// Q4_0: blocks of 32 4-bit values (offset by 8) with one fp16 scale, multiplied with Q8_0
// activations.
#include <cmath>

#include "quants.h"

namespace kiln {

void toFloatQ4_0(const void* src, float* dst, int64_t n) {
  const BlockQ4_0* x = static_cast<const BlockQ4_0*>(src);
  for (int64_t b = 0; b < n / QK4_0; b++) {
    const float d = fp16ToFloat(x[b].d);
    float* out = dst + b * QK4_0;
    for (int j = 0; j < QK4_0 / 2; j++) {
      out[j] = ((x[b].qs[j] & 0x0f) - 8) * d;
      out[j + QK4_0 / 2] = ((x[b].qs[j] >> 4) - 8) * d;
    }
  }
}

// ggml's quantize_row_q4_0_ref: the signed value of largest magnitude maps to -8, so the block
// uses the asymmetric end of [-8, 7] for it and 7 steps on the other side.
void fromFloatQ4_0(const float* src, void* dst, int64_t n) {
  BlockQ4_0* y = static_cast<BlockQ4_0*>(dst);
  for (int64_t b = 0; b < n / QK4_0; b++) {
    const float* x = src + b * QK4_0;
    float amax = 0, max = 0;
    for (int j = 0; j < QK4_0; j++) {
      if (std::fabs(x[j]) > amax) {
        amax = std::fabs(x[j]);
        max = x[j];
      }
    }
    const float d = max / -8;
    const float id = d != 0 ? 1 / d : 0;
    y[b].d = floatToFp16(d);
    // x * id + 8.5 lies in [0, 16.5] and truncates to [0, 16], clamped to 15; the explicit bounds
    // only matter where 1/d overflows (subnormal blocks) and keep the conversion defined.
    auto level = [id](float v) {
      const float u = v * id + 8.5f;
      return u < 15 ? (u > 0 ? (int)u : 0) : 15;
    };
    for (int j = 0; j < QK4_0 / 2; j++) y[b].qs[j] = (uint8_t)(level(x[j]) | level(x[j + QK4_0 / 2]) << 4);
  }
}

// llama.cpp's order on x86 with AVX2, where every Q4_0 matrix with a multiple of 8 rows is
// repacked and multiplied by ggml_gemv/gemm_q4_0_8x8_q8_0: each block's exact integer sum, then one
// FMA per block. vecDotQ4_0_avx2 computes the same bits.
void vecDotQ4_0_generic(int64_t n, float* s, const void* vx, const void* vy) {
  const BlockQ4_0* x = static_cast<const BlockQ4_0*>(vx);
  const BlockQ8_0* y = static_cast<const BlockQ8_0*>(vy);
  float sum = 0;
  for (int64_t b = 0; b < n / QK4_0; b++) {
    int sumi = 0;
    for (int j = 0; j < QK4_0 / 2; j++) {
      sumi += ((x[b].qs[j] & 0x0f) - 8) * y[b].qs[j];
      sumi += ((x[b].qs[j] >> 4) - 8) * y[b].qs[j + QK4_0 / 2];
    }
    sum = std::fma((float)sumi, fp16ToFloat(x[b].d) * fp16ToFloat(y[b].d), sum);
  }
  *s = sum;
}

}  // namespace kiln

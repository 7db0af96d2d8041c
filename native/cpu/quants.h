// The functions behind the type traits table. quants-*.cpp hold the scalar definitions (and the
// reference quantizers, which src/reference/quantize.ts reproduces byte for byte); *-avx2.cpp hold
// SIMD variants that keep the generic function's name with the instruction set as suffix.
#pragma once
#include <cstdint>
#include <cstring>

#include "../common/quant-blocks.h"

// Dequantizers and reference quantizers must round exactly as the TS reference does, so the
// compiler may not fuse a*b+c into one FMA, which GCC and Clang do wherever FMA exists (ARM, and
// x86 files built with -mfma; baseline x86-64 has none).
#if defined(__clang__)
#pragma clang fp contract(off)
#elif defined(__GNUC__) && (defined(__FMA__) || defined(__ARM_FEATURE_FMA))
#pragma GCC optimize("fp-contract=off")
#endif

namespace kiln {

// Q8_0 and Q4_0 weights meet Q8_0 activations; F16 and BF16 weights meet activations of their own
// type, as in llama.cpp, so kiln's logits round the way the reference logits do.
void toFloatF32(const void* src, float* dst, int64_t n);
void fromFloatF32(const float* src, void* dst, int64_t n);
void vecDotF32_generic(int64_t n, float* s, const void* x, const void* y);
void toFloatF16(const void* src, float* dst, int64_t n);
void fromFloatF16(const float* src, void* dst, int64_t n);
void vecDotF16_generic(int64_t n, float* s, const void* x, const void* y);
void toFloatBF16(const void* src, float* dst, int64_t n);
void fromFloatBF16(const float* src, void* dst, int64_t n);
void vecDotBF16_generic(int64_t n, float* s, const void* x, const void* y);

void toFloatQ8_0(const void* src, float* dst, int64_t n);
void fromFloatQ8_0(const float* src, void* dst, int64_t n);
void fromFloatActivationsQ8_0(const float* src, void* dst, int64_t n);
void vecDotQ8_0_generic(int64_t n, float* s, const void* x, const void* y);
void toFloatQ4_0(const void* src, float* dst, int64_t n);
void fromFloatQ4_0(const float* src, void* dst, int64_t n);
void vecDotQ4_0_generic(int64_t n, float* s, const void* x, const void* y);

void toFloatQ4_K(const void* src, float* dst, int64_t n);
void fromFloatQ4_K(const float* src, void* dst, int64_t n);
void vecDotQ4_K_generic(int64_t n, float* s, const void* x, const void* y);
void toFloatQ5_K(const void* src, float* dst, int64_t n);
void fromFloatQ5_K(const float* src, void* dst, int64_t n);
void vecDotQ5_K_generic(int64_t n, float* s, const void* x, const void* y);
void toFloatQ6_K(const void* src, float* dst, int64_t n);
void fromFloatQ6_K(const float* src, void* dst, int64_t n);
void vecDotQ6_K_generic(int64_t n, float* s, const void* x, const void* y);
void toFloatQ8_K(const void* src, float* dst, int64_t n);
void fromFloatQ8_K(const float* src, void* dst, int64_t n);

#if defined(__x86_64__) || defined(__i386__)
// Need AVX2, FMA and F16C (cpuFeatures()).
void vecDotF32_avx2(int64_t n, float* s, const void* x, const void* y);
void vecDotF16_avx2(int64_t n, float* s, const void* x, const void* y);
void vecDotBF16_avx2(int64_t n, float* s, const void* x, const void* y);
void vecDotQ8_0_avx2(int64_t n, float* s, const void* x, const void* y);
void vecDotQ4_0_avx2(int64_t n, float* s, const void* x, const void* y);
void vecDotQ4_K_avx2(int64_t n, float* s, const void* x, const void* y);
void vecDotQ5_K_avx2(int64_t n, float* s, const void* x, const void* y);
void vecDotQ6_K_avx2(int64_t n, float* s, const void* x, const void* y);
void fromFloatActivationsQ8_0_avx2(const float* src, void* dst, int64_t n);
void fromFloatQ8_K_avx2(const float* src, void* dst, int64_t n);
void fromFloatF16_avx2(const float* src, void* dst, int64_t n);
// mat-mul-avx2.cpp: tiles of the dots above (VecDotManyFn).
void vecDotManyF32_avx2(int64_t n, int64_t nr, int64_t nt, float* s, int64_t ldS, const void* x, size_t xStride,
                        const void* y, size_t yStride);
void vecDotManyF16_avx2(int64_t n, int64_t nr, int64_t nt, float* s, int64_t ldS, const void* x, size_t xStride,
                        const void* y, size_t yStride);
void vecDotManyBF16_avx2(int64_t n, int64_t nr, int64_t nt, float* s, int64_t ldS, const void* x, size_t xStride,
                         const void* y, size_t yStride);
void vecDotManyQ8_0_avx2(int64_t n, int64_t nr, int64_t nt, float* s, int64_t ldS, const void* x, size_t xStride,
                         const void* y, size_t yStride);
// mat-mul-k-avx2.cpp: Q4_K, Q5_K and Q6_K tiles with the bits of vecDotQ4_K_avx2 /
// vecDotQ5_K_avx2 / vecDotQ6_K_avx2, prepared tiles of tokens; the tokens left over and decode
// through the row tiles of quants-avx2.cpp (vecDotFew*, the same bits).
void vecDotManyQ4_K_avx2(int64_t n, int64_t nr, int64_t nt, float* s, int64_t ldS, const void* x, size_t xStride,
                         const void* y, size_t yStride);
void vecDotManyQ5_K_avx2(int64_t n, int64_t nr, int64_t nt, float* s, int64_t ldS, const void* x, size_t xStride,
                         const void* y, size_t yStride);
void vecDotManyQ6_K_avx2(int64_t n, int64_t nr, int64_t nt, float* s, int64_t ldS, const void* x, size_t xStride,
                         const void* y, size_t yStride);
void vecDotFewQ4_K_avx2(int64_t n, int64_t nr, int64_t nt, float* s, int64_t ldS, const void* x, size_t xStride,
                        const void* y, size_t yStride);
void vecDotFewQ5_K_avx2(int64_t n, int64_t nr, int64_t nt, float* s, int64_t ldS, const void* x, size_t xStride,
                        const void* y, size_t yStride);
void vecDotFewQ6_K_avx2(int64_t n, int64_t nr, int64_t nt, float* s, int64_t ldS, const void* x, size_t xStride,
                        const void* y, size_t yStride);
// mat-mul-avx512.cpp (AVX-512 F/BW/VL + VNNI): Q8_0 with the bits above, F16 with 16-lane sums.
void vecDotManyQ8_0_avx512(int64_t n, int64_t nr, int64_t nt, float* s, int64_t ldS, const void* x, size_t xStride,
                           const void* y, size_t yStride);
void vecDotManyF16_avx512(int64_t n, int64_t nr, int64_t nt, float* s, int64_t ldS, const void* x, size_t xStride,
                          const void* y, size_t yStride);
// mat-mul-k-avx512.cpp: Q4_K, Q5_K and Q6_K tiles with the bits of vecDotQ4_K_avx2 /
// vecDotQ5_K_avx2 / vecDotQ6_K_avx2.
void vecDotManyQ4_K_avx512(int64_t n, int64_t nr, int64_t nt, float* s, int64_t ldS, const void* x, size_t xStride,
                           const void* y, size_t yStride);
void vecDotManyQ5_K_avx512(int64_t n, int64_t nr, int64_t nt, float* s, int64_t ldS, const void* x, size_t xStride,
                           const void* y, size_t yStride);
void vecDotManyQ6_K_avx512(int64_t n, int64_t nr, int64_t nt, float* s, int64_t ldS, const void* x, size_t xStride,
                           const void* y, size_t yStride);
#endif

// Helpers shared by the generic and the SIMD files. They are `static` on purpose: an inline
// function with external linkage, emitted out of line by the AVX2 file, could be the copy the
// linker keeps and then run on a CPU without AVX2.

// Round to nearest, ties to even, for |x| < 2^22 (ggml's nearest_int). Outside that range (and for
// NaN) the result is meaningless but fully defined, which keeps the reference quantizers
// deterministic on any input; src/reference/quantize.ts reproduces the same bits.
static inline int nearestInt(float x) {
  const float v = x + 12582912.f;  // 1.5 * 2^23: the sum's last mantissa bit is the units digit
  int32_t i;
  std::memcpy(&i, &v, sizeof i);
  return (i & 0x007fffff) - 0x00400000;
}

// The 6-bit scales and mins of Q4_K / Q5_K, unpacked to bytes: out[0..8) scales, out[8..16) mins.
// Sub-blocks 0-3 keep their values in the low 6 bits of bytes 0-3 (scales) and 4-7 (mins);
// sub-blocks 4-7 keep their low 4 bits in bytes 8-11 and their top 2 bits in the spare top bits
// of bytes 0-7.
static inline void unpackScalesMinsK4(const uint8_t* packed, uint8_t* out) {
  uint32_t w[3];
  std::memcpy(w, packed, 12);
  const uint32_t low6 = 0x3f3f3f3f, low4 = 0x0f0f0f0f, low2 = 0x03030303;
  const uint32_t u[4] = {
      w[0] & low6,
      (w[2] & low4) | (((w[0] >> 6) & low2) << 4),
      w[1] & low6,
      ((w[2] >> 4) & low4) | (((w[1] >> 6) & low2) << 4),
  };
  std::memcpy(out, u, 16);
}

// The inverse of unpackScalesMinsK4: 8 scales ls and 8 mins lm (6 bits each) into 12 bytes.
static inline void packScalesMinsK4(const uint8_t* ls, const uint8_t* lm, uint8_t* packed) {
  for (int j = 0; j < 4; j++) {
    packed[j] = ls[j];
    packed[j + 4] = lm[j];
  }
  for (int j = 4; j < 8; j++) {
    packed[j + 4] = (uint8_t)((ls[j] & 0x0f) | (lm[j] & 0x0f) << 4);
    packed[j - 4] |= (uint8_t)((ls[j] >> 4) << 6);
    packed[j] |= (uint8_t)((lm[j] >> 4) << 6);
  }
}

}  // namespace kiln

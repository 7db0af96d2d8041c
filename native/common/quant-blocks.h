// GGML weight block layouts, described once for CPU, CUDA and Metal code.
// Byte-for-byte what llama.cpp writes into GGUF files; each size is pinned by a static_assert.
#pragma once
#include <cstdint>

#if defined(__CUDACC__)
#define KILN_HD __host__ __device__
#else
#define KILN_HD
#endif

namespace kiln {

// Numeric ids as stored in GGUF tensor infos (ggml_type).
enum class GgmlType : int32_t {
  F32 = 0,
  F16 = 1,
  Q4_0 = 2,
  Q4_1 = 3,
  Q5_0 = 6,
  Q5_1 = 7,
  Q8_0 = 8,
  Q8_1 = 9,
  Q2_K = 10,
  Q3_K = 11,
  Q4_K = 12,
  Q5_K = 13,
  Q6_K = 14,
  Q8_K = 15,
  BF16 = 30,
};

using fp16_t = uint16_t;  // IEEE half, stored as bits
using bf16_t = uint16_t;  // bfloat16, stored as bits

constexpr int QK4_0 = 32;
constexpr int QK8_0 = 32;
constexpr int QK_K = 256;          // super-block size of the K-quants
constexpr int K_SCALE_SIZE = 12;   // packed 6-bit scales and mins of Q4_K / Q5_K

// d * q, q in [-8, 7] stored as nibbles: low nibbles hold elements 0..15, high nibbles 16..31.
struct BlockQ4_0 {
  fp16_t d;
  uint8_t qs[QK4_0 / 2];
};
static_assert(sizeof(BlockQ4_0) == 2 + QK4_0 / 2, "wrong q4_0 block size");

// d * q, q in [-127, 127].
struct BlockQ8_0 {
  fp16_t d;
  int8_t qs[QK8_0];
};
static_assert(sizeof(BlockQ8_0) == 2 + QK8_0, "wrong q8_0 block size");

// 8 sub-blocks of 32: x = d * scale_j * q - dmin * min_j, 6-bit scales and mins packed in 12 bytes.
struct BlockQ4_K {
  fp16_t d;
  fp16_t dmin;
  uint8_t scales[K_SCALE_SIZE];
  uint8_t qs[QK_K / 2];
};
static_assert(sizeof(BlockQ4_K) == 2 * 2 + K_SCALE_SIZE + QK_K / 2, "wrong q4_K block size");

// As Q4_K with a fifth bit per weight in qh.
struct BlockQ5_K {
  fp16_t d;
  fp16_t dmin;
  uint8_t scales[K_SCALE_SIZE];
  uint8_t qh[QK_K / 8];
  uint8_t qs[QK_K / 2];
};
static_assert(sizeof(BlockQ5_K) == 2 * 2 + K_SCALE_SIZE + QK_K / 2 + QK_K / 8, "wrong q5_K block size");

// 16 sub-blocks of 16: x = d * scale_j * (q - 32), q 6 bits split in ql (low 4) and qh (high 2).
struct BlockQ6_K {
  uint8_t ql[QK_K / 2];
  uint8_t qh[QK_K / 4];
  int8_t scales[QK_K / 16];
  fp16_t d;
};
static_assert(sizeof(BlockQ6_K) == QK_K / 2 + QK_K / 4 + QK_K / 16 + 2, "wrong q6_K block size");

// Activations for K-quant dot products: float scale, 256 int8 values, sums of each 16.
struct BlockQ8_K {
  float d;
  int8_t qs[QK_K];
  int16_t bsums[QK_K / 16];
};
static_assert(sizeof(BlockQ8_K) == 4 + QK_K + QK_K / 16 * 2, "wrong q8_K block size");

KILN_HD inline float fp16ToFloat(fp16_t h) {
  const uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t mant = h & 0x3ffu;
  uint32_t bits;
  if (exp == 0) {
    if (mant == 0) {
      bits = sign;
    } else {  // subnormal: normalise
      exp = 127 - 15 + 1;
      while ((mant & 0x400u) == 0) { mant <<= 1; exp--; }
      mant &= 0x3ffu;
      bits = sign | (exp << 23) | (mant << 13);
    }
  } else if (exp == 31) {
    bits = sign | 0x7f800000u | (mant << 13);
  } else {
    bits = sign | ((exp + 127 - 15) << 23) | (mant << 13);
  }
  float f;
  __builtin_memcpy(&f, &bits, 4);
  return f;
}

// Round to nearest even, as ggml's GGML_FP32_TO_FP16 does.
KILN_HD inline fp16_t floatToFp16(float f) {
  uint32_t x;
  __builtin_memcpy(&x, &f, 4);
  const uint32_t sign = (x >> 16) & 0x8000u;
  const uint32_t absx = x & 0x7fffffffu;
  if (absx >= 0x7f800000u) return (fp16_t)(sign | 0x7c00u | (absx > 0x7f800000u ? 0x200u : 0));
  if (absx >= 0x477ff000u) return (fp16_t)(sign | 0x7c00u);  // overflows to inf after rounding
  if (absx < 0x38800000u) {                                 // subnormal or zero in half
    if (absx < 0x33000000u) return (fp16_t)sign;
    const uint32_t e = absx >> 23;
    const uint32_t m = (absx & 0x7fffffu) | 0x800000u;
    const uint32_t shift = 126 - e;  // 14 + (113 - e)
    uint32_t r = m >> shift;
    const uint32_t rem = m & ((1u << shift) - 1);
    const uint32_t half = 1u << (shift - 1);
    if (rem > half || (rem == half && (r & 1))) r++;
    return (fp16_t)(sign | r);
  }
  uint32_t r = ((absx - 0x38000000u) >> 13);
  const uint32_t rem = absx & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (r & 1))) r++;
  return (fp16_t)(sign | r);
}

KILN_HD inline float bf16ToFloat(bf16_t h) {
  const uint32_t bits = (uint32_t)h << 16;
  float f;
  __builtin_memcpy(&f, &bits, 4);
  return f;
}

// Round to nearest even; NaN stays a quiet NaN (ggml_compute_fp32_to_bf16).
KILN_HD inline bf16_t floatToBf16(float f) {
  uint32_t x;
  __builtin_memcpy(&x, &f, 4);
  if ((x & 0x7fffffffu) > 0x7f800000u) return (bf16_t)((x >> 16) | 64);
  return (bf16_t)((x + (0x7fffu + ((x >> 16) & 1))) >> 16);
}

}  // namespace kiln

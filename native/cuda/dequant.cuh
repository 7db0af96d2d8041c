// The device side of the CPU's toFloat* functions: the value of element k of a row in each weight
// type, one at a time or 8 at a time. The arithmetic is the CPU's, with products rounded before
// subtractions (no fused multiply-add), so a row decodes to the same floats on both.
#pragma once
#include "device-common.cuh"

namespace kiln::cuda {

template <GgmlType T>
struct Decode;

namespace detail {

__device__ __forceinline__ void unpackHalves(uint4 h, float* v) {
  const uint32_t w[4] = {h.x, h.y, h.z, h.w};
#pragma unroll
  for (int i = 0; i < 4; i++) {
    v[2 * i] = halfToFloat((uint16_t)(w[i] & 0xffffu));
    v[2 * i + 1] = halfToFloat((uint16_t)(w[i] >> 16));
  }
}

__device__ __forceinline__ void unpackBf16(uint4 h, float* v) {
  const uint32_t w[4] = {h.x, h.y, h.z, h.w};
#pragma unroll
  for (int i = 0; i < 4; i++) {
    v[2 * i] = bf16ToFloatDev((uint16_t)(w[i] & 0xffffu));
    v[2 * i + 1] = bf16ToFloatDev((uint16_t)(w[i] >> 16));
  }
}

}  // namespace detail

// Scale and min of sub-block j of a Q4_K / Q5_K block from its 12 packed bytes (ggml's
// get_scale_min_k4; the same unpacking as unpackScalesMinsK4 on the CPU).
__device__ __forceinline__ void scaleMinK4(const uint8_t* q, int j, int* sc, int* m) {
  if (j < 4) {
    *sc = q[j] & 63;
    *m = q[j + 4] & 63;
  } else {
    *sc = (q[j + 4] & 0x0f) | ((q[j - 4] >> 6) << 4);
    *m = (q[j + 4] >> 4) | ((q[j] >> 6) << 4);
  }
}

// Every decoder: kBlock elements per block; eight(row, k, v) writes elements k..k+7 (k a multiple
// of 8; for the float types the row is 16-byte aligned, which cols % 8 == 0 gives).
template <>
struct Decode<GgmlType::F32> {
  static constexpr int kBlock = 1;
  __device__ static float at(const uint8_t* row, int64_t k) { return reinterpret_cast<const float*>(row)[k]; }
  __device__ static void eight(const uint8_t* row, int64_t k, float* v) {
    const float4* p = reinterpret_cast<const float4*>(row + 4 * k);
    const float4 a = p[0], b = p[1];
    v[0] = a.x, v[1] = a.y, v[2] = a.z, v[3] = a.w, v[4] = b.x, v[5] = b.y, v[6] = b.z, v[7] = b.w;
  }
};

template <>
struct Decode<GgmlType::F16> {
  static constexpr int kBlock = 1;
  __device__ static float at(const uint8_t* row, int64_t k) { return halfToFloat(loadU16(row + 2 * k)); }
  __device__ static void eight(const uint8_t* row, int64_t k, float* v) {
    detail::unpackHalves(*reinterpret_cast<const uint4*>(row + 2 * k), v);
  }
};

template <>
struct Decode<GgmlType::BF16> {
  static constexpr int kBlock = 1;
  __device__ static float at(const uint8_t* row, int64_t k) { return bf16ToFloatDev(loadU16(row + 2 * k)); }
  __device__ static void eight(const uint8_t* row, int64_t k, float* v) {
    detail::unpackBf16(*reinterpret_cast<const uint4*>(row + 2 * k), v);
  }
};

template <>
struct Decode<GgmlType::Q8_0> {
  static constexpr int kBlock = QK8_0;
  __device__ static void eight(const uint8_t* row, int64_t k, float* v) {
    const uint8_t* blk = row + (k / QK8_0) * sizeof(BlockQ8_0);
    const float d = halfToFloat(loadU16(blk));
    const uint8_t* qs = blk + 2 + k % QK8_0;
    const int w[2] = {loadInt2(qs), loadInt2(qs + 4)};
#pragma unroll
    for (int i = 0; i < 8; i++) v[i] = (float)(int8_t)(w[i / 4] >> (8 * (i % 4))) * d;
  }
};

template <>
struct Decode<GgmlType::Q4_0> {
  static constexpr int kBlock = QK4_0;
  // Low nibbles of qs[0..16) are elements 0..15, high nibbles elements 16..31.
  __device__ static void eight(const uint8_t* row, int64_t k, float* v) {
    const uint8_t* blk = row + (k / QK4_0) * sizeof(BlockQ4_0);
    const float d = halfToFloat(loadU16(blk));
    const int j = (int)(k % QK4_0);
    const uint8_t* qs = blk + 2 + (j & 15);
    const int shift = j < 16 ? 0 : 4;
    const uint32_t w[2] = {(uint32_t)loadInt2(qs), (uint32_t)loadInt2(qs + 4)};
#pragma unroll
    for (int i = 0; i < 8; i++) v[i] = (float)((int)((w[i / 4] >> (8 * (i % 4) + shift)) & 0x0f) - 8) * d;
  }
};

namespace detail {

// Q4_K and Q5_K: value 64g + l (l < 32) is the low nibble of qs[32g + l], value 64g + 32 + l its
// high nibble; Q5_K adds bit 2g (or 2g + 1) of qh[l] as the fifth bit.
template <bool kFifthBit>
__device__ __forceinline__ void eightScaleMinK(const uint8_t* blk, const uint8_t* qh, const uint8_t* qs, int64_t k,
                                               float* v) {
  const int i = (int)(k % QK_K);
  const int g = i / 64, l = i % 64, j = i / 32;
  const float d = halfToFloat(loadU16(blk)), dmin = halfToFloat(loadU16(blk + 2));
  int sc, m;
  scaleMinK4(blk + 4, j, &sc, &m);
  const float dj = d * sc, mj = dmin * m;
  const int shift = l < 32 ? 0 : 4;
  const uint8_t* q = qs + 32 * g + (l % 32);
  const uint32_t w[2] = {(uint32_t)loadInt4(q), (uint32_t)loadInt4(q + 4)};
  uint32_t h[2] = {0, 0};
  if (kFifthBit) h[0] = (uint32_t)loadInt4(qh + (l % 32)), h[1] = (uint32_t)loadInt4(qh + (l % 32) + 4);
  const int hbit = 2 * g + (l < 32 ? 0 : 1);
#pragma unroll
  for (int e = 0; e < 8; e++) {
    int x = (int)((w[e / 4] >> (8 * (e % 4) + shift)) & 0x0f);
    if (kFifthBit) x |= (int)((h[e / 4] >> (8 * (e % 4) + hbit)) & 1) << 4;
    v[e] = __fsub_rn(__fmul_rn(dj, (float)x), mj);
  }
}

}  // namespace detail

template <>
struct Decode<GgmlType::Q4_K> {
  static constexpr int kBlock = QK_K;
  __device__ static void eight(const uint8_t* row, int64_t k, float* v) {
    const uint8_t* blk = row + (k / QK_K) * sizeof(BlockQ4_K);
    detail::eightScaleMinK<false>(blk, nullptr, blk + offsetof(BlockQ4_K, qs), k, v);
  }
};

template <>
struct Decode<GgmlType::Q5_K> {
  static constexpr int kBlock = QK_K;
  __device__ static void eight(const uint8_t* row, int64_t k, float* v) {
    const uint8_t* blk = row + (k / QK_K) * sizeof(BlockQ5_K);
    detail::eightScaleMinK<true>(blk, blk + offsetof(BlockQ5_K, qh), blk + offsetof(BlockQ5_K, qs), k, v);
  }
};

// Q6_K: in each half of 128, element l (l < 32) and l + 64 share ql[l], l + 32 and l + 96 share
// ql[l + 32], and all four share qh[l]; value = d * scale[i / 16] * (q - 32).
template <>
struct Decode<GgmlType::Q6_K> {
  static constexpr int kBlock = QK_K;
  __device__ static void eight(const uint8_t* row, int64_t k, float* v) {
    const uint8_t* blk = row + (k / QK_K) * sizeof(BlockQ6_K);
    const int i = (int)(k % QK_K);
    const int h = i / 128, quarter = (i % 128) / 32, l = i % 32;
    const uint8_t* ql = blk + offsetof(BlockQ6_K, ql) + 64 * h + 32 * (quarter & 1) + l;
    const uint8_t* qh = blk + offsetof(BlockQ6_K, qh) + 32 * h + l;
    const int lowShift = 4 * (quarter >> 1), highShift = 2 * quarter;
    const float d = halfToFloat(loadU16(blk + offsetof(BlockQ6_K, d)));
    const float ds = d * (float)(int8_t)blk[offsetof(BlockQ6_K, scales) + i / 16];
    const uint32_t lo[2] = {(uint32_t)loadInt2(ql), (uint32_t)loadInt2(ql + 4)};
    const uint32_t hi[2] = {(uint32_t)loadInt2(qh), (uint32_t)loadInt2(qh + 4)};
#pragma unroll
    for (int e = 0; e < 8; e++) {
      const int q = (int)((lo[e / 4] >> (8 * (e % 4) + lowShift)) & 0x0f) |
                    (int)((hi[e / 4] >> (8 * (e % 4) + highShift)) & 3) << 4;
      v[e] = ds * (float)(q - 32);
    }
  }
};

// Calls f(Decode<T>{}) for weight type t; false when t has no decoder.
template <typename F>
bool withDecoder(GgmlType t, F&& f) {
  switch (t) {
    case GgmlType::F32: f(Decode<GgmlType::F32>{}); return true;
    case GgmlType::F16: f(Decode<GgmlType::F16>{}); return true;
    case GgmlType::BF16: f(Decode<GgmlType::BF16>{}); return true;
    case GgmlType::Q8_0: f(Decode<GgmlType::Q8_0>{}); return true;
    case GgmlType::Q4_0: f(Decode<GgmlType::Q4_0>{}); return true;
    case GgmlType::Q4_K: f(Decode<GgmlType::Q4_K>{}); return true;
    case GgmlType::Q5_K: f(Decode<GgmlType::Q5_K>{}); return true;
    case GgmlType::Q6_K: f(Decode<GgmlType::Q6_K>{}); return true;
    default: return false;
  }
}

}  // namespace kiln::cuda

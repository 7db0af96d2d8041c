// The integer dot products of the decode kernels, unit by unit: for each quantized weight type, how
// a unit of a weight row (32 or 64 values) is decoded and multiplied with int8 activations in
// blocks of 32 (quantizeQ8Blocks). They follow the CPU's generic dot products
// (native/cpu/quants-*.cpp): integer sums per block, scaled by the weight's and activation's scales.
#pragma once
#include <cstddef>
#include <type_traits>

#include "dequant.cuh"

namespace kiln::cuda {

constexpr int kLowNibbles = 0x0f0f0f0f;

// The 8 ints (32 int8 activations) of activation block `b` of a row.
struct ActBlock {
  int v[8];
  __device__ explicit ActBlock(const int8_t* row, int64_t b) {
    const int4* p = reinterpret_cast<const int4*>(row + 32 * b);
    const int4 lo = p[0], hi = p[1];
    v[0] = lo.x, v[1] = lo.y, v[2] = lo.z, v[3] = lo.w, v[4] = hi.x, v[5] = hi.y, v[6] = hi.z, v[7] = hi.w;
  }
  __device__ int sum() const {
    int s = 0;
#pragma unroll
    for (int i = 0; i < 8; i++) s = __dp4a(v[i], 0x01010101, s);
    return s;
  }
};

// Each integer type: kUnit values per unit; load(row, u) decodes unit u of a weight row;
// dot(unit, activations, scales, u) is its product with one token's activation row.
template <GgmlType T>
struct VecDot;

template <>
struct VecDot<GgmlType::Q8_0> {
  static constexpr int kUnit = 32;
  struct Unit {
    float d;
    int v[8];
  };
  __device__ static Unit load(const uint8_t* row, int64_t u) {
    const uint8_t* blk = row + u * sizeof(BlockQ8_0);
    Unit w;
    w.d = halfToFloat(loadU16(blk));
#pragma unroll
    for (int i = 0; i < 8; i++) w.v[i] = loadInt2(blk + 2 + 4 * i);
    return w;
  }
  __device__ static float dot(const Unit& w, const int8_t* q, const float* d, int64_t u) {
    const ActBlock a(q, u);
    int s = 0;
#pragma unroll
    for (int i = 0; i < 8; i++) s = __dp4a(w.v[i], a.v[i], s);
    return (float)s * (w.d * d[u]);
  }
};

template <>
struct VecDot<GgmlType::Q4_0> {
  static constexpr int kUnit = 32;
  struct Unit {
    float d;
    uint32_t v[4];  // nibbles of values i (low) and 16 + i (high)
  };
  __device__ static Unit load(const uint8_t* row, int64_t u) {
    const uint8_t* blk = row + u * sizeof(BlockQ4_0);
    Unit w;
    w.d = halfToFloat(loadU16(blk));
#pragma unroll
    for (int i = 0; i < 4; i++) w.v[i] = (uint32_t)loadInt2(blk + 2 + 4 * i);
    return w;
  }
  // sum((q - 8) * a) = sum(q * a) - 8 * sum(a)
  __device__ static float dot(const Unit& w, const int8_t* q, const float* d, int64_t u) {
    const ActBlock a(q, u);
    int s = 0;
#pragma unroll
    for (int i = 0; i < 4; i++) {
      s = __dp4a((int)(w.v[i] & kLowNibbles), a.v[i], s);
      s = __dp4a((int)((w.v[i] >> 4) & kLowNibbles), a.v[i + 4], s);
    }
    return (float)(s - 8 * a.sum()) * (w.d * d[u]);
  }
};

// Q4_K / Q5_K: a unit is 64 values, sub-blocks 2g and 2g + 1 of a super-block, which share the 32
// bytes qs[32g, 32g + 32) (low and high nibbles). x = d * sc * q - dmin * m.
template <bool kFifthBit>
struct VecDotScaleMinK {
  static constexpr int kUnit = 64;
  using Block = typename std::conditional<kFifthBit, BlockQ5_K, BlockQ4_K>::type;
  struct Unit {
    float dsc[2], dm[2];
    int lo[8], hi[8];  // values of sub-block 2g and 2g + 1
  };
  __device__ static Unit load(const uint8_t* row, int64_t u) {
    const uint8_t* blk = row + (u / 4) * sizeof(Block);
    const int g = (int)(u % 4);
    const float d = halfToFloat(loadU16(blk)), dmin = halfToFloat(loadU16(blk + 2));
    Unit w;
#pragma unroll
    for (int s = 0; s < 2; s++) {
      int sc, m;
      scaleMinK4(blk + 4, 2 * g + s, &sc, &m);
      w.dsc[s] = d * (float)sc;
      w.dm[s] = dmin * (float)m;
    }
    const int4* qs = reinterpret_cast<const int4*>(blk + offsetof(Block, qs) + 32 * g);
    const int4 q0 = qs[0], q1 = qs[1];
    const int raw[8] = {q0.x, q0.y, q0.z, q0.w, q1.x, q1.y, q1.z, q1.w};
#pragma unroll
    for (int i = 0; i < 8; i++) {
      w.lo[i] = raw[i] & kLowNibbles;
      w.hi[i] = (int)(((uint32_t)raw[i] >> 4) & kLowNibbles);
    }
    if constexpr (kFifthBit) {
      const int4* qh = reinterpret_cast<const int4*>(blk + offsetof(BlockQ5_K, qh));
      const int4 h0 = qh[0], h1 = qh[1];
      const uint32_t h[8] = {(uint32_t)h0.x, (uint32_t)h0.y, (uint32_t)h0.z, (uint32_t)h0.w,
                             (uint32_t)h1.x, (uint32_t)h1.y, (uint32_t)h1.z, (uint32_t)h1.w};
#pragma unroll
      for (int i = 0; i < 8; i++) {
        w.lo[i] |= (int)(((h[i] >> (2 * g)) & 0x01010101u) << 4);
        w.hi[i] |= (int)(((h[i] >> (2 * g + 1)) & 0x01010101u) << 4);
      }
    }
    return w;
  }
  __device__ static float dot(const Unit& w, const int8_t* q, const float* d, int64_t u) {
    const ActBlock a0(q, 2 * u), a1(q, 2 * u + 1);
    int s0 = 0, s1 = 0;
#pragma unroll
    for (int i = 0; i < 8; i++) {
      s0 = __dp4a(w.lo[i], a0.v[i], s0);
      s1 = __dp4a(w.hi[i], a1.v[i], s1);
    }
    return d[2 * u] * (w.dsc[0] * (float)s0 - w.dm[0] * (float)a0.sum()) +
           d[2 * u + 1] * (w.dsc[1] * (float)s1 - w.dm[1] * (float)a1.sum());
  }
};

template <>
struct VecDot<GgmlType::Q4_K> : VecDotScaleMinK<false> {};
template <>
struct VecDot<GgmlType::Q5_K> : VecDotScaleMinK<true> {};

// Q6_K: a unit is a quarter q of a half h of a super-block (32 values, two sub-blocks of 16):
// low 4 bits from ql[64h + 32(q & 1) + l] (nibble q >> 1), high 2 bits from qh[32h + l] (bits 2q).
template <>
struct VecDot<GgmlType::Q6_K> {
  static constexpr int kUnit = 32;
  struct Unit {
    float d;
    int sc[2];
    int v[8];  // q - 32 as signed bytes
  };
  __device__ static Unit load(const uint8_t* row, int64_t u) {
    const uint8_t* blk = row + (u / 8) * sizeof(BlockQ6_K);
    const int h = (int)(u % 8) / 4, quarter = (int)(u % 4);
    const uint8_t* ql = blk + offsetof(BlockQ6_K, ql) + 64 * h + 32 * (quarter & 1);
    const uint8_t* qh = blk + offsetof(BlockQ6_K, qh) + 32 * h;
    const int lowShift = 4 * (quarter >> 1), highShift = 2 * quarter;
    Unit w;
    w.d = halfToFloat(loadU16(blk + offsetof(BlockQ6_K, d)));
    const int8_t* scales = reinterpret_cast<const int8_t*>(blk + offsetof(BlockQ6_K, scales)) + 8 * h + 2 * quarter;
    w.sc[0] = scales[0];
    w.sc[1] = scales[1];
#pragma unroll
    for (int i = 0; i < 8; i++) {
      const uint32_t lo = ((uint32_t)loadInt2(ql + 4 * i) >> lowShift) & kLowNibbles;
      const uint32_t hi = (((uint32_t)loadInt2(qh + 4 * i) >> highShift) & 0x03030303u) << 4;
      w.v[i] = __vsubss4((int)(lo | hi), 0x20202020);
    }
    return w;
  }
  __device__ static float dot(const Unit& w, const int8_t* q, const float* d, int64_t u) {
    const ActBlock a(q, u);
    int s0 = 0, s1 = 0;
#pragma unroll
    for (int i = 0; i < 4; i++) {
      s0 = __dp4a(w.v[i], a.v[i], s0);
      s1 = __dp4a(w.v[i + 4], a.v[i + 4], s1);
    }
    return (float)(w.sc[0] * s0 + w.sc[1] * s1) * (w.d * d[u]);
  }
};

}  // namespace kiln::cuda

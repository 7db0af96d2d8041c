// Decode products: a warp per weight row, lanes striding over the row in units of 32 or 64
// values; the row's units are decoded once and meet every token's activations. The integer types
// follow the CPU's generic dot products (native/cpu/quants-*.cpp): integer sums per block of 32
// activations, scaled by the weight's and the activation's scales.
#include <type_traits>

#include "cuda-check.h"
#include "dequant.cuh"
#include "mat-vec.h"

namespace kiln::cuda {

namespace {

constexpr int kRowsPerBlock = 4;
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

template <int kTokens>
__device__ __forceinline__ void storeRow(float* acc, int nTokens, const float* bias, float* y, int64_t rows, int64_t row) {
#pragma unroll
  for (int t = 0; t < kTokens; t++) acc[t] = warpSum(acc[t]);
  if (threadIdx.x == 0) {
    const float b = bias ? bias[row] : 0.0f;
#pragma unroll
    for (int t = 0; t < kTokens; t++)
      if (t < nTokens) y[t * rows + row] = acc[t] + b;
  }
}

template <typename V, int kTokens>
__global__ void __launch_bounds__(kWarpSize * kRowsPerBlock)
    matVecQ8Kernel(const uint8_t* __restrict__ w, size_t rowBytes, int64_t rows, int64_t cols,
                   const int8_t* __restrict__ q, const float* __restrict__ d, int nTokens,
                   const float* __restrict__ bias, float* __restrict__ y) {
  const int64_t row = (int64_t)blockIdx.x * kRowsPerBlock + threadIdx.y;
  if (row >= rows) return;  // the whole warp leaves together
  const uint8_t* wr = w + row * rowBytes;
  const int64_t nUnits = cols / V::kUnit, blocksPerRow = cols / 32;
  float acc[kTokens];
#pragma unroll
  for (int t = 0; t < kTokens; t++) acc[t] = 0.0f;
  for (int64_t u = threadIdx.x; u < nUnits; u += kWarpSize) {
    const typename V::Unit unit = V::load(wr, u);
#pragma unroll
    for (int t = 0; t < kTokens; t++)
      if (t < nTokens) acc[t] += V::dot(unit, q + t * cols, d + t * blocksPerRow, u);
  }
  storeRow<kTokens>(acc, nTokens, bias, y, rows, row);
}

template <typename D, int kTokens>
__global__ void __launch_bounds__(kWarpSize * kRowsPerBlock)
    matVecFloatKernel(const uint8_t* __restrict__ w, size_t rowBytes, int64_t rows, int64_t cols,
                      const float* __restrict__ x, int nTokens, const float* __restrict__ bias, float* __restrict__ y) {
  const int64_t row = (int64_t)blockIdx.x * kRowsPerBlock + threadIdx.y;
  if (row >= rows) return;
  const uint8_t* wr = w + row * rowBytes;
  float acc[kTokens];
#pragma unroll
  for (int t = 0; t < kTokens; t++) acc[t] = 0.0f;
  if (cols % 8 == 0) {
    for (int64_t k = 8 * threadIdx.x; k < cols; k += 8 * kWarpSize) {
      float wv[8];
      D::eight(wr, k, wv);
#pragma unroll
      for (int t = 0; t < kTokens; t++) {
        if (t >= nTokens) continue;
        const float4* xp = reinterpret_cast<const float4*>(x + t * cols + k);
        const float4 a = xp[0], b = xp[1];
        acc[t] += wv[0] * a.x + wv[1] * a.y + wv[2] * a.z + wv[3] * a.w + wv[4] * b.x + wv[5] * b.y + wv[6] * b.z + wv[7] * b.w;
      }
    }
  } else {
    for (int64_t k = threadIdx.x; k < cols; k += kWarpSize) {
      const float wv = D::at(wr, k);
#pragma unroll
      for (int t = 0; t < kTokens; t++)
        if (t < nTokens) acc[t] += wv * x[t * cols + k];
    }
  }
  storeRow<kTokens>(acc, nTokens, bias, y, rows, row);
}

template <typename V>
void launchQ8(const MatVecArgs& a, dim3 grid, dim3 block, cudaStream_t stream) {
  if (a.nTokens == 1) {
    matVecQ8Kernel<V, 1><<<grid, block, 0, stream>>>(a.w, a.rowBytes, a.rows, a.cols, a.q, a.d, 1, a.bias, a.y);
  } else {
    matVecQ8Kernel<V, kMaxMatVecTokens><<<grid, block, 0, stream>>>(a.w, a.rowBytes, a.rows, a.cols, a.q, a.d,
                                                                    (int)a.nTokens, a.bias, a.y);
  }
}

template <typename D>
void launchFloat(const MatVecArgs& a, dim3 grid, dim3 block, cudaStream_t stream) {
  if (a.nTokens == 1) {
    matVecFloatKernel<D, 1><<<grid, block, 0, stream>>>(a.w, a.rowBytes, a.rows, a.cols, a.x, 1, a.bias, a.y);
  } else {
    matVecFloatKernel<D, kMaxMatVecTokens><<<grid, block, 0, stream>>>(a.w, a.rowBytes, a.rows, a.cols, a.x,
                                                                       (int)a.nTokens, a.bias, a.y);
  }
}

}  // namespace

bool matVecTakesQ8(GgmlType type) {
  switch (type) {
    case GgmlType::Q8_0:
    case GgmlType::Q4_0:
    case GgmlType::Q4_K:
    case GgmlType::Q5_K:
    case GgmlType::Q6_K: return true;
    default: return false;
  }
}

void matVec(const MatVecArgs& a, cudaStream_t stream) {
  const dim3 block(kWarpSize, kRowsPerBlock);
  const dim3 grid(ceilDiv(a.rows, kRowsPerBlock));
  switch (a.type) {
    case GgmlType::F32: launchFloat<Decode<GgmlType::F32>>(a, grid, block, stream); break;
    case GgmlType::F16: launchFloat<Decode<GgmlType::F16>>(a, grid, block, stream); break;
    case GgmlType::BF16: launchFloat<Decode<GgmlType::BF16>>(a, grid, block, stream); break;
    case GgmlType::Q8_0: launchQ8<VecDot<GgmlType::Q8_0>>(a, grid, block, stream); break;
    case GgmlType::Q4_0: launchQ8<VecDot<GgmlType::Q4_0>>(a, grid, block, stream); break;
    case GgmlType::Q4_K: launchQ8<VecDot<GgmlType::Q4_K>>(a, grid, block, stream); break;
    case GgmlType::Q5_K: launchQ8<VecDot<GgmlType::Q5_K>>(a, grid, block, stream); break;
    case GgmlType::Q6_K: launchQ8<VecDot<GgmlType::Q6_K>>(a, grid, block, stream); break;
    default: throw CudaError("mul_mat: no CUDA kernel for this weight type");
  }
  checkLaunch("mul_mat (decode)");
}

}  // namespace kiln::cuda

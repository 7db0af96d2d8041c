// Device helpers shared by the kernels: warp reductions and loads from GGML blocks, whose odd
// sizes (18, 34, 210 bytes) leave their fields only 2-byte aligned.
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "../common/quant-blocks.h"

namespace kiln::cuda {

constexpr int kWarpSize = 32;
constexpr unsigned kFullMask = 0xffffffffu;

template <typename T>
__device__ __forceinline__ T warpSum(T v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(kFullMask, v, o);
  return v;
}

__device__ __forceinline__ float warpMax(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(kFullMask, v, o));
  return v;
}

// Sum over a block of blockDim.x threads (a multiple of 32, at most 1024); every thread gets it.
// `scratch` holds 32 floats; the block must not use it concurrently.
template <typename T>
__device__ __forceinline__ T blockSum(T v, T* scratch) {
  const int lane = threadIdx.x % kWarpSize, warp = threadIdx.x / kWarpSize;
  v = warpSum(v);
  __syncthreads();  // scratch may still be read by a previous call
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  const int nWarps = blockDim.x / kWarpSize;
  v = lane < nWarps ? scratch[lane] : T(0);
  return warpSum(v);
}

__device__ __forceinline__ float blockMax(float v, float* scratch) {
  const int lane = threadIdx.x % kWarpSize, warp = threadIdx.x / kWarpSize;
  v = warpMax(v);
  __syncthreads();
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  const int nWarps = blockDim.x / kWarpSize;
  v = lane < nWarps ? scratch[lane] : -INFINITY;
  return warpMax(v);
}

__device__ __forceinline__ float halfToFloat(uint16_t bits) { return __half2float(__ushort_as_half(bits)); }
__device__ __forceinline__ float bf16ToFloatDev(uint16_t bits) { return __uint_as_float((uint32_t)bits << 16); }

// 4 bytes from a 2-byte aligned address, little-endian, as one int for __dp4a.
__device__ __forceinline__ int loadInt2(const uint8_t* p) {
  const uint16_t* q = reinterpret_cast<const uint16_t*>(p);
  return (int)((uint32_t)q[0] | ((uint32_t)q[1] << 16));
}

__device__ __forceinline__ int loadInt4(const uint8_t* p) { return *reinterpret_cast<const int*>(p); }

__device__ __forceinline__ uint16_t loadU16(const uint8_t* p) { return *reinterpret_cast<const uint16_t*>(p); }

// Sum of the 4 signed bytes of x.
__device__ __forceinline__ int byteSum(int x) { return __dp4a(x, 0x01010101, 0); }

inline int ceilDiv(int64_t a, int64_t b) { return (int)((a + b - 1) / b); }

}  // namespace kiln::cuda

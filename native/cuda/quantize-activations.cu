// Activation conversions for the matrix products: a warp per block of 32 for int8, a block per
// row for the scaled 16-bit copy.
#include "cuda-check.h"
#include "quantize-activations.h"
#include "quantize-block.cuh"

namespace kiln::cuda {

namespace {

constexpr int kWarpsPerBlock = 8;
constexpr int kRowThreads = 256;

__global__ void quantizeQ8BlocksKernel(const float* __restrict__ x, int64_t blocksPerRow, int8_t* __restrict__ q,
                                       float* __restrict__ d) {
  const int64_t b = (int64_t)blockIdx.x * kWarpsPerBlock + threadIdx.x / kWarpSize;
  if (b >= blocksPerRow) return;  // the whole warp leaves together
  const int64_t block = blockIdx.y * blocksPerRow + b;
  quantizeWarpBlock(x[block * 32 + threadIdx.x % kWarpSize], q + block * 32, d + block);
}

__global__ void toHalfRowsKernel(const float* __restrict__ x, int64_t cols, bool bf16, uint16_t* __restrict__ xh,
                                 float* __restrict__ scale) {
  __shared__ float scratch[32];
  const float* xr = x + (int64_t)blockIdx.x * cols;
  uint16_t* out = xh + (int64_t)blockIdx.x * cols;
  float amax = 0.0f;
  for (int64_t i = threadIdx.x; i < cols; i += kRowThreads) amax = fmaxf(amax, fabsf(xr[i]));
  amax = blockMax(amax, scratch);
  const float s = amax > 0.0f && amax < INFINITY ? amax : 1.0f;
  const float inv = 1.0f / s;
  for (int64_t i = threadIdx.x; i < cols; i += kRowThreads) {
    const float v = xr[i] * inv;
    out[i] = bf16 ? __bfloat16_as_ushort(__float2bfloat16_rn(v)) : __half_as_ushort(__float2half_rn(v));
  }
  if (threadIdx.x == 0) scale[blockIdx.x] = s;
}

}  // namespace

void quantizeQ8Blocks(const float* x, int64_t nTokens, int64_t cols, int8_t* q, float* d, cudaStream_t stream) {
  const int64_t blocksPerRow = cols / 32;
  quantizeQ8BlocksKernel<<<dim3(ceilDiv(blocksPerRow, kWarpsPerBlock), (unsigned)nTokens), kWarpsPerBlock * kWarpSize, 0,
                           stream>>>(x, blocksPerRow, q, d);
  checkLaunch("quantize activations");
}

void toHalfRows(const float* x, int64_t nTokens, int64_t cols, bool bf16, uint16_t* xh, float* scale, cudaStream_t stream) {
  toHalfRowsKernel<<<(unsigned)nTokens, kRowThreads, 0, stream>>>(x, cols, bf16, xh, scale);
  checkLaunch("convert activations");
}

}  // namespace kiln::cuda

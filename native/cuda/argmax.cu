// argmax: a block per row; each thread scans a strided part in increasing order, then the block
// keeps the larger value, or the lower index of equal ones.
#include <climits>

#include "argmax.h"
#include "cuda-check.h"
#include "device-common.cuh"

namespace kiln::cuda {

namespace {

constexpr int kThreads = 256;

__device__ __forceinline__ void better(float& best, int& index, float v, int i) {
  if (v > best || (v == best && i < index)) best = v, index = i;
}

__global__ void argmaxKernel(const float* __restrict__ x, int64_t cols, int32_t* __restrict__ out) {
  __shared__ float bestValues[kThreads / kWarpSize];
  __shared__ int bestIndices[kThreads / kWarpSize];
  const float* row = x + (int64_t)blockIdx.x * cols;
  float best = -INFINITY;
  int index = INT_MAX;
  for (int64_t i = threadIdx.x; i < cols; i += kThreads)
    if (row[i] > best) best = row[i], index = (int)i;
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) {
    const float v = __shfl_xor_sync(kFullMask, best, o);
    const int i = __shfl_xor_sync(kFullMask, index, o);
    better(best, index, v, i);
  }
  const int lane = threadIdx.x % kWarpSize, warp = threadIdx.x / kWarpSize;
  if (lane == 0) bestValues[warp] = best, bestIndices[warp] = index;
  __syncthreads();
  if (threadIdx.x == 0) {
    for (int w = 1; w < kThreads / kWarpSize; w++) better(best, index, bestValues[w], bestIndices[w]);
    out[blockIdx.x] = index == INT_MAX ? 0 : index;
  }
}

}  // namespace

void argmax(const float* x, int64_t nRows, int64_t cols, int32_t* out, cudaStream_t stream) {
  argmaxKernel<<<(unsigned)nRows, kThreads, 0, stream>>>(x, cols, out);
  checkLaunch("argmax");
}

}  // namespace kiln::cuda

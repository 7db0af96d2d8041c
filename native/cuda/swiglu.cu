// swiglu: y = gate / (1 + exp(-gate)) * up, elementwise, with the CPU's order of operations.
#include "cuda-check.h"
#include "device-common.cuh"
#include "swiglu.h"

namespace kiln::cuda {

namespace {

constexpr int kThreads = 256;

__global__ void swigluKernel(const float* __restrict__ gate, const float* __restrict__ up, float* __restrict__ y, int64_t n) {
  const int64_t i = (int64_t)blockIdx.x * kThreads + threadIdx.x;
  if (i < n) y[i] = gate[i] / (1.0f + expf(-gate[i])) * up[i];
}

}  // namespace

void swiglu(const float* gate, const float* up, float* y, int64_t n, cudaStream_t stream) {
  swigluKernel<<<ceilDiv(n, kThreads), kThreads, 0, stream>>>(gate, up, y, n);
  checkLaunch("swiglu");
}

}  // namespace kiln::cuda

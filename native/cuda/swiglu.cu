// swiglu: y = gate / (1 + exp(-gate)) * up, elementwise, with the CPU's order of operations.
#include "cuda-check.h"
#include "quantize-block.cuh"
#include "swiglu.h"

namespace kiln::cuda {

namespace {

constexpr int kThreads = 256;

__global__ void swigluKernel(const float* __restrict__ gate, const float* __restrict__ up, float* __restrict__ y, int64_t n,
                             int8_t* __restrict__ q, float* __restrict__ d) {
  const int64_t i = (int64_t)blockIdx.x * kThreads + threadIdx.x;
  if (i >= n) return;  // with q, n is a multiple of 32: whole warps leave
  const float v = gate[i] / (1.0f + expf(-gate[i])) * up[i];
  y[i] = v;
  if (q) quantizeWarpBlock(v, q + (i - i % 32), d + i / 32);
}

}  // namespace

void swiglu(const float* gate, const float* up, float* y, int64_t n, int8_t* q, float* d, cudaStream_t stream) {
  swigluKernel<<<ceilDiv(n, kThreads), kThreads, 0, stream>>>(gate, up, y, n, q, d);
  checkLaunch("swiglu");
}

}  // namespace kiln::cuda

// add: y = a + b, elementwise.
#include "add.h"
#include "cuda-check.h"
#include "device-common.cuh"

namespace kiln::cuda {

namespace {

constexpr int kThreads = 256;

__global__ void addKernel(const float* a, const float* b, float* y, int64_t n) {
  const int64_t i = (int64_t)blockIdx.x * kThreads + threadIdx.x;
  if (i < n) y[i] = a[i] + b[i];
}

}  // namespace

void add(const float* a, const float* b, float* y, int64_t n, cudaStream_t stream) {
  addKernel<<<ceilDiv(n, kThreads), kThreads, 0, stream>>>(a, b, y, n);
  checkLaunch("add");
}

}  // namespace kiln::cuda

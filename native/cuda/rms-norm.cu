// rms_norm: one block per group; float squares summed in double, as ggml's CPU code (where the
// reference logits come from) sums them: on an RMS-normed row of a 4-bit embedding table many
// values sit exactly half a step between two int8 levels, and the last bit of the scale decides
// how the next product's activations round.
#include "cuda-check.h"
#include "device-common.cuh"
#include "rms-norm.h"

namespace kiln::cuda {

namespace {

__global__ void rmsNormKernel(const float* __restrict__ x, const float* __restrict__ w, float* __restrict__ y,
                              int64_t width, float eps) {
  __shared__ double scratch[32];
  const float* xr = x + (int64_t)blockIdx.x * width;
  float* yr = y + (int64_t)blockIdx.x * width;
  double sum = 0.0;
  for (int64_t i = threadIdx.x; i < width; i += blockDim.x) sum += (double)(xr[i] * xr[i]);
  sum = blockSum(sum, scratch);
  const float scale = 1.0f / sqrtf((float)(sum / (double)width) + eps);
  for (int64_t i = threadIdx.x; i < width; i += blockDim.x) yr[i] = xr[i] * scale * w[i];
}

}  // namespace

void rmsNorm(const float* x, const float* w, float* y, int64_t nGroups, int64_t width, float eps, cudaStream_t stream) {
  // A warp per short group (Q/K norms of one head), a full block for model rows.
  const int threads = width <= 128 ? 32 : width <= 1024 ? 128 : 256;
  rmsNormKernel<<<(unsigned)nGroups, threads, 0, stream>>>(x, w, y, width, eps);
  checkLaunch("rms_norm");
}

}  // namespace kiln::cuda

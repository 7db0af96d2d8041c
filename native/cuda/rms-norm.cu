// rms_norm: one block per group; float squares summed in double, as ggml's CPU code (where the
// reference logits come from) sums them: on an RMS-normed row of a 4-bit embedding table many
// values sit exactly half a step between two int8 levels, and the last bit of the scale decides
// how the next product's activations round.
#include "cuda-check.h"
#include "quantize-block.cuh"
#include "rms-norm.h"

namespace kiln::cuda {

namespace {

__global__ void rmsNormKernel(const float* __restrict__ x, const float* __restrict__ w, float* __restrict__ y,
                              int64_t width, float eps, int8_t* __restrict__ q, float* __restrict__ d) {
  __shared__ double scratch[32];
  const int64_t group = blockIdx.x;
  const float* xr = x + group * width;
  float* yr = y + group * width;
  double sum = 0.0;
  for (int64_t i = threadIdx.x; i < width; i += blockDim.x) sum += (double)(xr[i] * xr[i]);
  sum = blockSum(sum, scratch);
  const float scale = 1.0f / sqrtf((float)(sum / (double)width) + eps);
  if (!q) {
    for (int64_t i = threadIdx.x; i < width; i += blockDim.x) yr[i] = xr[i] * scale * w[i];
    return;
  }
  // A warp per block of 32, so each block is quantized as it is written.
  const int lane = threadIdx.x % kWarpSize, nWarps = blockDim.x / kWarpSize;
  for (int64_t b = threadIdx.x / kWarpSize; b < width / 32; b += nWarps) {
    const int64_t i = 32 * b + lane;
    const float v = xr[i] * scale * w[i];
    yr[i] = v;
    quantizeWarpBlock(v, q + group * width + 32 * b, d + group * (width / 32) + b);
  }
}

}  // namespace

void rmsNorm(const float* x, const float* w, float* y, int64_t nGroups, int64_t width, float eps, int8_t* q, float* d,
             cudaStream_t stream) {
  // A warp per short group (Q/K norms of one head), a full block for model rows.
  const int threads = width <= 128 ? 32 : width <= 1024 ? 128 : 256;
  rmsNormKernel<<<(unsigned)nGroups, threads, 0, stream>>>(x, w, y, width, eps, q, d);
  checkLaunch("rms_norm");
}

}  // namespace kiln::cuda

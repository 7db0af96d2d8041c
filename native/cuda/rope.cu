// rope: one thread per rotated pair (or per pair of pass-through values). The angle of pair i is
// built by i float multiplications and the rotation rounded as the CPU rounds it, so both rotate
// alike.
#include "cuda-check.h"
#include "device-common.cuh"
#include "rope.h"

namespace kiln::cuda {

namespace {

constexpr int kThreads = 256;

__global__ void ropeKernel(const float* __restrict__ x, float* __restrict__ y, int64_t nPairs,
                           const int32_t* __restrict__ positions, RopeArgs a, const float* __restrict__ freqFactors) {
  const int64_t idx = (int64_t)blockIdx.x * kThreads + threadIdx.x;
  if (idx >= nPairs) return;
  const int pairsPerHead = (a.headDim + 1) / 2;
  const int64_t headRow = idx / pairsPerHead;  // token * nHeads + head
  const int i = (int)(idx % pairsPerHead);
  const float* v = x + headRow * a.headDim;
  float* out = y + headRow * a.headDim;
  const int half = a.nRot / 2;
  if (i >= half) {  // dimensions past nRot pass through, two per thread
    const int d = a.nRot + 2 * (i - half);
    if (d < a.headDim) out[d] = v[d];
    if (d + 1 < a.headDim) out[d + 1] = v[d + 1];
    return;
  }
  float thetaBase = (float)positions[headRow / a.nHeads];
  for (int j = 0; j < i; j++) thetaBase *= a.thetaScale;
  const float ff = freqFactors ? freqFactors[i] : 1.0f;
  const float theta = a.freqScale * (thetaBase / ff);
  const float c = cosf(theta), s = sinf(theta);
  const int p = a.neox ? i : 2 * i;
  const int q = a.neox ? i + half : 2 * i + 1;
  const float x0 = v[p], x1 = v[q];
  // As the CPU (and ggml's CPU build) computes x0 * c - x1 * s: the second product rounded, the
  // first fused.
  out[p] = __fmaf_rn(x0, c, -__fmul_rn(x1, s));
  out[q] = __fmaf_rn(x0, s, __fmul_rn(x1, c));
}

}  // namespace

void rope(const float* x, float* y, int64_t nTokens, const int32_t* positions, const RopeArgs& a,
          const float* freqFactors, cudaStream_t stream) {
  const int64_t nPairs = nTokens * a.nHeads * ((a.headDim + 1) / 2);
  ropeKernel<<<ceilDiv(nPairs, kThreads), kThreads, 0, stream>>>(x, y, nPairs, positions, a, freqFactors);
  checkLaunch("rope");
}

}  // namespace kiln::cuda

// A classic shared-memory tiled product: a block computes 64 weight rows x 64 tokens, each of its
// 256 threads a 4 x 4 patch, over steps of 16 values of the row.
#include "cuda-check.h"
#include "dequant.cuh"
#include "mat-mul-tiled.h"

namespace kiln::cuda {

namespace {

constexpr int kTile = 64, kStep = 16, kThreads = 256;

template <typename D>
__global__ void __launch_bounds__(kThreads)
    matMulTiledKernel(const uint8_t* __restrict__ w, size_t rowBytes, int64_t rows, int64_t cols,
                      const float* __restrict__ x, int64_t nTokens, const float* __restrict__ bias,
                      float* __restrict__ y) {
  __shared__ float sW[kStep][kTile + 1];
  __shared__ float sX[kStep][kTile + 1];
  const int64_t m0 = (int64_t)blockIdx.x * kTile, n0 = (int64_t)blockIdx.y * kTile;
  const int tr = threadIdx.x % 16, tt = threadIdx.x / 16;  // rows tr + 16i, tokens tt + 16j
  float acc[4][4] = {};
  for (int64_t k0 = 0; k0 < cols; k0 += kStep) {
#pragma unroll
    for (int i = 0; i < kTile * kStep / kThreads; i++) {
      const int p = threadIdx.x + i * kThreads;
      const int r = p / kStep, k = p % kStep;
      const bool inK = k0 + k < cols;
      sW[k][r] = m0 + r < rows && inK ? D::at(w + (m0 + r) * rowBytes, k0 + k) : 0.0f;
      sX[k][r] = n0 + r < nTokens && inK ? x[(n0 + r) * cols + k0 + k] : 0.0f;
    }
    __syncthreads();
#pragma unroll
    for (int k = 0; k < kStep; k++) {
      float a[4], b[4];
#pragma unroll
      for (int i = 0; i < 4; i++) a[i] = sW[k][tr + 16 * i], b[i] = sX[k][tt + 16 * i];
#pragma unroll
      for (int i = 0; i < 4; i++)
#pragma unroll
        for (int j = 0; j < 4; j++) acc[i][j] += a[i] * b[j];
    }
    __syncthreads();
  }
#pragma unroll
  for (int j = 0; j < 4; j++) {
    const int64_t t = n0 + tt + 16 * j;
#pragma unroll
    for (int i = 0; i < 4; i++) {
      const int64_t r = m0 + tr + 16 * i;
      if (r < rows && t < nTokens) y[t * rows + r] = acc[i][j] + (bias ? bias[r] : 0.0f);
    }
  }
}

template <typename D>
void launch(const MatMulTiledArgs& a, cudaStream_t stream) {
  const dim3 grid(ceilDiv(a.rows, kTile), ceilDiv(a.nTokens, kTile));
  matMulTiledKernel<D><<<grid, kThreads, 0, stream>>>(a.w, a.rowBytes, a.rows, a.cols, a.x, a.nTokens, a.bias, a.y);
}

}  // namespace

void matMulTiled(const MatMulTiledArgs& a, cudaStream_t stream) {
  switch (a.type) {
    case GgmlType::F32: launch<Decode<GgmlType::F32>>(a, stream); break;
    case GgmlType::F16: launch<Decode<GgmlType::F16>>(a, stream); break;
    case GgmlType::BF16: launch<Decode<GgmlType::BF16>>(a, stream); break;
    default: throw CudaError("mul_mat: the tiled F32 kernel takes float weights only");
  }
  checkLaunch("mul_mat (prefill, tiled)");
}

}  // namespace kiln::cuda

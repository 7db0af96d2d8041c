// Prefill products with WMMA (16x16x16, fp16/bf16 in, F32 accumulate). A block computes 64 weight
// rows x 64 tokens in 4 warps of 32 x 32, over steps of 32 values of the row.
#include <mma.h>

#include "cuda-check.h"
#include "dequant.cuh"
#include "mat-mul-half.h"

namespace kiln::cuda {

namespace {

using namespace nvcuda;

constexpr int kTileRows = 64, kTileTokens = 64, kTileK = 32;
constexpr int kPad = 8;  // keeps rows 16-byte aligned and staggers shared-memory banks
constexpr int kThreads = 128;
constexpr int kRunsPerThread = kTileRows * (kTileK / 8) / kThreads;  // runs of 8 values

template <typename T>
__device__ __forceinline__ uint32_t pack2(float a, float b);

template <>
__device__ __forceinline__ uint32_t pack2<__half>(float a, float b) {
  return (uint32_t)__half_as_ushort(__float2half_rn(a)) | ((uint32_t)__half_as_ushort(__float2half_rn(b)) << 16);
}

template <>
__device__ __forceinline__ uint32_t pack2<__nv_bfloat16>(float a, float b) {
  return (uint32_t)__bfloat16_as_ushort(__float2bfloat16_rn(a)) | ((uint32_t)__bfloat16_as_ushort(__float2bfloat16_rn(b)) << 16);
}

template <typename D, typename T>
__global__ void __launch_bounds__(kThreads)
    matMulHalfKernel(const uint8_t* __restrict__ w, size_t rowBytes, int64_t rows, int64_t cols,
                    const uint16_t* __restrict__ xh, const float* __restrict__ xScale, int64_t nTokens,
                    const float* __restrict__ bias, float* __restrict__ y) {
  __shared__ __align__(32) T sW[kTileRows][kTileK + kPad];
  __shared__ __align__(32) T sX[kTileTokens][kTileK + kPad];
  __shared__ __align__(32) float sY[kTileTokens][kTileRows + 4];
  const int64_t m0 = (int64_t)blockIdx.x * kTileRows, n0 = (int64_t)blockIdx.y * kTileTokens;
  const int warp = threadIdx.x / kWarpSize;
  const int wm = (warp % 2) * 32, wn = (warp / 2) * 32;

  wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc[2][2];
#pragma unroll
  for (int i = 0; i < 2; i++)
#pragma unroll
    for (int j = 0; j < 2; j++) wmma::fill_fragment(acc[i][j], 0.0f);

  for (int64_t k0 = 0; k0 < cols; k0 += kTileK) {
#pragma unroll
    for (int i = 0; i < kRunsPerThread; i++) {
      const int p = threadIdx.x + i * kThreads;
      const int r = p / (kTileK / 8), g = p % (kTileK / 8);
      float v[8] = {0, 0, 0, 0, 0, 0, 0, 0};
      if (m0 + r < rows) D::eight(w + (m0 + r) * rowBytes, k0 + 8 * g, v);
      *reinterpret_cast<uint4*>(&sW[r][8 * g]) =
          make_uint4(pack2<T>(v[0], v[1]), pack2<T>(v[2], v[3]), pack2<T>(v[4], v[5]), pack2<T>(v[6], v[7]));
      const int64_t t = n0 + r;  // the token tile has as many rows as the weight tile
      *reinterpret_cast<uint4*>(&sX[r][8 * g]) =
          t < nTokens ? *reinterpret_cast<const uint4*>(xh + t * cols + k0 + 8 * g) : make_uint4(0, 0, 0, 0);
    }
    __syncthreads();
#pragma unroll
    for (int kk = 0; kk < kTileK; kk += 16) {
      wmma::fragment<wmma::matrix_a, 16, 16, 16, T, wmma::row_major> a[2];
      wmma::fragment<wmma::matrix_b, 16, 16, 16, T, wmma::col_major> b[2];
#pragma unroll
      for (int i = 0; i < 2; i++) wmma::load_matrix_sync(a[i], &sW[wm + 16 * i][kk], kTileK + kPad);
#pragma unroll
      for (int j = 0; j < 2; j++) wmma::load_matrix_sync(b[j], &sX[wn + 16 * j][kk], kTileK + kPad);
#pragma unroll
      for (int i = 0; i < 2; i++)
#pragma unroll
        for (int j = 0; j < 2; j++) wmma::mma_sync(acc[i][j], a[i], b[j], acc[i][j]);
    }
    __syncthreads();
  }

  // Through shared memory, so the partial tiles at the edges, the row scales and the bias are
  // applied with plain bounds checks; consecutive threads write consecutive rows of a token.
#pragma unroll
  for (int i = 0; i < 2; i++)
#pragma unroll
    for (int j = 0; j < 2; j++)
      wmma::store_matrix_sync(&sY[wn + 16 * j][wm + 16 * i], acc[i][j], kTileRows + 4, wmma::mem_col_major);
  __syncthreads();
  for (int p = threadIdx.x; p < kTileRows * kTileTokens; p += kThreads) {
    const int t = p / kTileRows, r = p % kTileRows;
    if (m0 + r < rows && n0 + t < nTokens)
      y[(n0 + t) * rows + m0 + r] = sY[t][r] * xScale[n0 + t] + (bias ? bias[m0 + r] : 0.0f);
  }
}

static_assert(kTileTokens == kTileRows, "weights and activations share one loading loop");

template <typename D, typename T>
void launch(const MatMulHalfArgs& a, cudaStream_t stream) {
  const dim3 grid(ceilDiv(a.rows, kTileRows), ceilDiv(a.nTokens, kTileTokens));
  matMulHalfKernel<D, T><<<grid, kThreads, 0, stream>>>(a.w, a.rowBytes, a.rows, a.cols, a.xh, a.xScale, a.nTokens,
                                                       a.bias, a.y);
}

}  // namespace

bool matMulHalfSupports(GgmlType type, int64_t cols) {
  return cols % kTileK == 0 && (type == GgmlType::F16 || type == GgmlType::BF16);
}

void matMulHalf(const MatMulHalfArgs& a, cudaStream_t stream) {
  switch (a.type) {
    case GgmlType::F16: launch<Decode<GgmlType::F16>, __half>(a, stream); break;
    case GgmlType::BF16: launch<Decode<GgmlType::BF16>, __nv_bfloat16>(a, stream); break;
    default: throw CudaError("mul_mat: the half-precision tensor-core kernel takes F16 and BF16 weights");
  }
  checkLaunch("mul_mat (prefill, tensor cores)");
}

}  // namespace kiln::cuda

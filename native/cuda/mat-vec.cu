// Decode products: a warp per weight row, lanes striding over the row in units of 32 or 64 values
// (vec-dot.cuh); each unit is decoded once and meets every token's activations.
#include "cuda-check.h"
#include "mat-vec.h"
#include "vec-dot.cuh"

namespace kiln::cuda {

namespace {

constexpr int kRowsPerBlock = 4;

// The matrix and row this warp computes: the launch's blocks cover the matrices one after another.
__device__ __forceinline__ const MatVecMatrix* rowOf(const MatVecArgs& a, int64_t* row) {
  int64_t b = blockIdx.x;
  int i = 0;
  for (; i < a.count - 1; i++) {
    const int64_t blocks = (a.m[i].rows + kRowsPerBlock - 1) / kRowsPerBlock;
    if (b < blocks) break;
    b -= blocks;
  }
  *row = b * kRowsPerBlock + threadIdx.y;
  return &a.m[i];
}

template <int kTokens>
__device__ __forceinline__ void storeRow(float* acc, int nTokens, const float* bias, float* y, int64_t rows, int64_t row) {
#pragma unroll
  for (int t = 0; t < kTokens; t++) acc[t] = warpSum(acc[t]);
  if (threadIdx.x == 0) {
    const float b = bias ? bias[row] : 0.0f;
#pragma unroll
    for (int t = 0; t < kTokens; t++)
      if (t < nTokens) y[t * rows + row] = acc[t] + b;
  }
}

template <typename V, int kTokens>
__global__ void __launch_bounds__(kWarpSize * kRowsPerBlock) matVecQ8Kernel(const MatVecArgs a) {
  int64_t row;
  const MatVecMatrix* m = rowOf(a, &row);
  if (row >= m->rows) return;  // the whole warp leaves together
  const uint8_t* wr = m->w + row * a.rowBytes;
  const int64_t nUnits = a.cols / V::kUnit, blocksPerRow = a.cols / 32;
  const int nTokens = (int)a.nTokens;
  float acc[kTokens];
#pragma unroll
  for (int t = 0; t < kTokens; t++) acc[t] = 0.0f;
  for (int64_t u = threadIdx.x; u < nUnits; u += kWarpSize) {
    const typename V::Unit unit = V::load(wr, u);
#pragma unroll
    for (int t = 0; t < kTokens; t++)
      if (t < nTokens) acc[t] += V::dot(unit, a.q + t * a.cols, a.d + t * blocksPerRow, u);
  }
  storeRow<kTokens>(acc, nTokens, m->bias, m->y, m->rows, row);
}

template <typename D, int kTokens>
__global__ void __launch_bounds__(kWarpSize * kRowsPerBlock) matVecFloatKernel(const MatVecArgs a) {
  int64_t row;
  const MatVecMatrix* m = rowOf(a, &row);
  if (row >= m->rows) return;
  const uint8_t* wr = m->w + row * a.rowBytes;
  const int64_t cols = a.cols;
  const float* x = a.x;
  const int nTokens = (int)a.nTokens;
  float acc[kTokens];
#pragma unroll
  for (int t = 0; t < kTokens; t++) acc[t] = 0.0f;
  if (cols % 8 == 0) {
    for (int64_t k = 8 * threadIdx.x; k < cols; k += 8 * kWarpSize) {
      float wv[8];
      D::eight(wr, k, wv);
#pragma unroll
      for (int t = 0; t < kTokens; t++) {
        if (t >= nTokens) continue;
        const float4* xp = reinterpret_cast<const float4*>(x + t * cols + k);
        const float4 a = xp[0], b = xp[1];
        acc[t] += wv[0] * a.x + wv[1] * a.y + wv[2] * a.z + wv[3] * a.w + wv[4] * b.x + wv[5] * b.y + wv[6] * b.z + wv[7] * b.w;
      }
    }
  } else {
    for (int64_t k = threadIdx.x; k < cols; k += kWarpSize) {
      const float wv = D::at(wr, k);
#pragma unroll
      for (int t = 0; t < kTokens; t++)
        if (t < nTokens) acc[t] += wv * x[t * cols + k];
    }
  }
  storeRow<kTokens>(acc, nTokens, m->bias, m->y, m->rows, row);
}

template <typename V>
void launchQ8(const MatVecArgs& a, dim3 grid, dim3 block, cudaStream_t stream) {
  if (a.nTokens == 1) matVecQ8Kernel<V, 1><<<grid, block, 0, stream>>>(a);
  else matVecQ8Kernel<V, kMaxMatVecTokens><<<grid, block, 0, stream>>>(a);
}

template <typename D>
void launchFloat(const MatVecArgs& a, dim3 grid, dim3 block, cudaStream_t stream) {
  if (a.nTokens == 1) matVecFloatKernel<D, 1><<<grid, block, 0, stream>>>(a);
  else matVecFloatKernel<D, kMaxMatVecTokens><<<grid, block, 0, stream>>>(a);
}

}  // namespace

bool matVecTakesQ8(GgmlType type) {
  switch (type) {
    case GgmlType::Q8_0:
    case GgmlType::Q4_0:
    case GgmlType::Q4_K:
    case GgmlType::Q5_K:
    case GgmlType::Q6_K: return true;
    default: return false;
  }
}

void matVec(const MatVecArgs& a, cudaStream_t stream) {
  const dim3 block(kWarpSize, kRowsPerBlock);
  int64_t blocks = 0;
  for (int i = 0; i < a.count; i++) blocks += (a.m[i].rows + kRowsPerBlock - 1) / kRowsPerBlock;
  const dim3 grid((unsigned)blocks);
  switch (a.type) {
    case GgmlType::F32: launchFloat<Decode<GgmlType::F32>>(a, grid, block, stream); break;
    case GgmlType::F16: launchFloat<Decode<GgmlType::F16>>(a, grid, block, stream); break;
    case GgmlType::BF16: launchFloat<Decode<GgmlType::BF16>>(a, grid, block, stream); break;
    case GgmlType::Q8_0: launchQ8<VecDot<GgmlType::Q8_0>>(a, grid, block, stream); break;
    case GgmlType::Q4_0: launchQ8<VecDot<GgmlType::Q4_0>>(a, grid, block, stream); break;
    case GgmlType::Q4_K: launchQ8<VecDot<GgmlType::Q4_K>>(a, grid, block, stream); break;
    case GgmlType::Q5_K: launchQ8<VecDot<GgmlType::Q5_K>>(a, grid, block, stream); break;
    case GgmlType::Q6_K: launchQ8<VecDot<GgmlType::Q6_K>>(a, grid, block, stream); break;
    default: throw CudaError("mul_mat: no CUDA kernel for this weight type");
  }
  checkLaunch("mul_mat (decode)");
}

}  // namespace kiln::cuda

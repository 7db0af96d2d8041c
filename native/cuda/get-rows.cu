// get_rows: one thread per 8 values (one per value for float rows whose width is not a multiple
// of 8), so a row is read once, coalesced.
#include "cuda-check.h"
#include "dequant.cuh"
#include "get-rows.h"

namespace kiln::cuda {

namespace {

constexpr int kThreads = 256;

template <typename D>
__global__ void getRowsEight(const uint8_t* __restrict__ table, size_t rowBytes, int64_t cols,
                             const int32_t* __restrict__ tokens, float* __restrict__ y) {
  const int64_t t = blockIdx.y;
  const int64_t k = 8 * ((int64_t)blockIdx.x * kThreads + threadIdx.x);
  if (k >= cols) return;
  float v[8];
  D::eight(table + (size_t)tokens[t] * rowBytes, k, v);
  float4* out = reinterpret_cast<float4*>(y + t * cols + k);
  out[0] = make_float4(v[0], v[1], v[2], v[3]);
  out[1] = make_float4(v[4], v[5], v[6], v[7]);
}

template <typename D>
__global__ void getRowsOne(const uint8_t* __restrict__ table, size_t rowBytes, int64_t cols,
                           const int32_t* __restrict__ tokens, float* __restrict__ y) {
  const int64_t t = blockIdx.y;
  const int64_t k = (int64_t)blockIdx.x * kThreads + threadIdx.x;
  if (k < cols) y[t * cols + k] = D::at(table + (size_t)tokens[t] * rowBytes, k);
}

}  // namespace

void getRows(GgmlType type, const uint8_t* table, size_t rowBytes, int64_t cols, const int32_t* tokens,
             int64_t nTokens, float* y, cudaStream_t stream) {
  const bool known = withDecoder(type, [&](auto dec) {
    using D = decltype(dec);
    if (cols % 8 == 0) {
      getRowsEight<D><<<dim3(ceilDiv(cols / 8, kThreads), (unsigned)nTokens), kThreads, 0, stream>>>(table, rowBytes, cols, tokens, y);
    } else {
      if constexpr (D::kBlock == 1) {
        getRowsOne<D><<<dim3(ceilDiv(cols, kThreads), (unsigned)nTokens), kThreads, 0, stream>>>(table, rowBytes, cols, tokens, y);
      }
    }
  });
  if (!known) throw CudaError("get_rows: no CUDA decoder for this weight type");
  checkLaunch("get_rows");
}

}  // namespace kiln::cuda

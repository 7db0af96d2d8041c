// Prefill products with int8 WMMA (16x16x16, int32 accumulate). A block computes 64 weight rows x 64
// tokens in 4 warps of 32 x 32. Each step takes one block of 32 values of the row: the weights'
// integers (and their scale and min for that block) are decoded into shared memory next to the
// activations' int8 block; the tensor cores sum the integer products, and every output then adds
// sum * weight scale * activation scale - weight min * activation scale * activation sum. Q6_K
// changes scale every 16 values, so it takes that epilogue after each half of the block.
#include <mma.h>

#include "cuda-check.h"
#include "dequant.cuh"
#include "mat-mul-int8.h"

namespace kiln::cuda {

namespace {

using namespace nvcuda;

constexpr int kTile = 64;      // weight rows and tokens per block
constexpr int kThreads = 128;
constexpr int kAccStride = kTile + 4;

// Each type: decode(row, b, h, q, scale, min) writes the 16 integers of half h of 32-value block b
// of a row, and that half's scale and min (value = scale * q - min). kSplitScales: the halves of a
// block have scales of their own.
template <GgmlType T>
struct Int8Decode;

template <>
struct Int8Decode<GgmlType::Q8_0> {
  static constexpr bool kSplitScales = false, kHasMin = false;
  __device__ static void decode(const uint8_t* row, int64_t b, int h, int* q, float* scale, float* min) {
    const uint8_t* blk = row + b * sizeof(BlockQ8_0);
#pragma unroll
    for (int i = 0; i < 4; i++) q[i] = loadInt2(blk + 2 + 16 * h + 4 * i);
    *scale = halfToFloat(loadU16(blk));
    *min = 0.0f;
  }
};

template <>
struct Int8Decode<GgmlType::Q4_0> {
  static constexpr bool kSplitScales = false, kHasMin = false;
  // Half 0 is the low nibbles of qs[0..16), half 1 the high nibbles; q - 8 per byte.
  __device__ static void decode(const uint8_t* row, int64_t b, int h, int* q, float* scale, float* min) {
    const uint8_t* blk = row + b * sizeof(BlockQ4_0);
#pragma unroll
    for (int i = 0; i < 4; i++) q[i] = __vsubss4((int)(((uint32_t)loadInt2(blk + 2 + 4 * i) >> (4 * h)) & 0x0f0f0f0fu), 0x08080808);
    *scale = halfToFloat(loadU16(blk));
    *min = 0.0f;
  }
};

template <bool kFifthBit>
struct Int8DecodeScaleMinK {
  static constexpr bool kSplitScales = false, kHasMin = true;
  using Block = typename std::conditional<kFifthBit, BlockQ5_K, BlockQ4_K>::type;
  // Block b is sub-block j = b % 8 of super-block b / 8: nibble j % 2 of qs[32 (j / 2) + l].
  __device__ static void decode(const uint8_t* row, int64_t b, int h, int* q, float* scale, float* min) {
    const uint8_t* blk = row + (b / 8) * sizeof(Block);
    const int j = (int)(b % 8), g = j / 2, shift = 4 * (j % 2);
    const uint8_t* qs = blk + offsetof(Block, qs) + 32 * g + 16 * h;
#pragma unroll
    for (int i = 0; i < 4; i++) {
      uint32_t v = ((uint32_t)loadInt4(qs + 4 * i) >> shift) & 0x0f0f0f0fu;
      if constexpr (kFifthBit) {
        const uint32_t hb = (uint32_t)loadInt4(blk + offsetof(BlockQ5_K, qh) + 16 * h + 4 * i);
        v |= ((hb >> (2 * g + j % 2)) & 0x01010101u) << 4;
      }
      q[i] = (int)v;
    }
    int sc, m;
    scaleMinK4(blk + 4, j, &sc, &m);
    *scale = halfToFloat(loadU16(blk)) * (float)sc;
    *min = halfToFloat(loadU16(blk + 2)) * (float)m;
  }
};

template <>
struct Int8Decode<GgmlType::Q4_K> : Int8DecodeScaleMinK<false> {};
template <>
struct Int8Decode<GgmlType::Q5_K> : Int8DecodeScaleMinK<true> {};

template <>
struct Int8Decode<GgmlType::Q6_K> {
  static constexpr bool kSplitScales = true, kHasMin = false;
  // Block b is quarter b % 4 of half (b % 8) / 4 of super-block b / 8, as in VecDot<Q6_K>.
  __device__ static void decode(const uint8_t* row, int64_t b, int h, int* q, float* scale, float* min) {
    const uint8_t* blk = row + (b / 8) * sizeof(BlockQ6_K);
    const int half = (int)(b % 8) / 4, quarter = (int)(b % 4);
    const uint8_t* ql = blk + offsetof(BlockQ6_K, ql) + 64 * half + 32 * (quarter & 1) + 16 * h;
    const uint8_t* qh = blk + offsetof(BlockQ6_K, qh) + 32 * half + 16 * h;
#pragma unroll
    for (int i = 0; i < 4; i++) {
      const uint32_t lo = ((uint32_t)loadInt2(ql + 4 * i) >> (4 * (quarter >> 1))) & 0x0f0f0f0fu;
      const uint32_t hi = (((uint32_t)loadInt2(qh + 4 * i) >> (2 * quarter)) & 0x03030303u) << 4;
      q[i] = __vsubss4((int)(lo | hi), 0x20202020);
    }
    const int8_t sc = (int8_t)blk[offsetof(BlockQ6_K, scales) + 8 * half + 2 * quarter + h];
    *scale = halfToFloat(loadU16(blk + offsetof(BlockQ6_K, d))) * (float)sc;
    *min = 0.0f;
  }
};

using FragA = wmma::fragment<wmma::matrix_a, 16, 16, 16, signed char, wmma::row_major>;
using FragB = wmma::fragment<wmma::matrix_b, 16, 16, 16, signed char, wmma::col_major>;
using FragC = wmma::fragment<wmma::accumulator, 16, 16, 16, int>;

template <typename D>
__global__ void __launch_bounds__(kThreads)
    matMulInt8Kernel(const uint8_t* __restrict__ w, size_t rowBytes, int64_t rows, int64_t cols,
                     const int8_t* __restrict__ q, const float* __restrict__ d, int64_t nTokens,
                     const float* __restrict__ bias, float* __restrict__ y) {
  // Each half of a block in its own tile, 16 values per row, so that every fragment starts on a
  // 32-byte boundary.
  __shared__ __align__(32) int8_t sW[2][kTile][16];
  __shared__ __align__(32) int8_t sX[2][kTile][16];
  __shared__ __align__(32) int sAcc[kTile][kAccStride];  // [token][row]
  __shared__ float sWScale[2][kTile], sWMin[kTile], sXScale[kTile], sXSum[kTile];
  const int64_t m0 = (int64_t)blockIdx.x * kTile, n0 = (int64_t)blockIdx.y * kTile;
  const int warp = threadIdx.x / kWarpSize;
  const int wm = (warp % 2) * 32, wn = (warp / 2) * 32;
  // Loading: thread -> (row or token tid / 2, half tid % 2). Epilogue: token tid / 2, rows
  // 32 (tid % 2) .. + 32, accumulated in registers.
  const int li = threadIdx.x / 2, lh = threadIdx.x % 2;
  const int et = threadIdx.x / 2, er = 32 * (threadIdx.x % 2);
  const int64_t blocksPerRow = cols / 32;
  float acc[32];
#pragma unroll
  for (int i = 0; i < 32; i++) acc[i] = 0.0f;

  for (int64_t b = 0; b < blocksPerRow; b++) {
    {
      int v[4] = {0, 0, 0, 0};
      float scale = 0.0f, min = 0.0f;
      if (m0 + li < rows) D::decode(w + (m0 + li) * rowBytes, b, lh, v, &scale, &min);
      *reinterpret_cast<int4*>(&sW[lh][li][0]) = make_int4(v[0], v[1], v[2], v[3]);
      sWScale[lh][li] = scale;
      if (lh == 0) sWMin[li] = min;
      const int64_t t = n0 + li;
      int4 x = make_int4(0, 0, 0, 0);
      if (t < nTokens) x = *reinterpret_cast<const int4*>(q + t * cols + 32 * b + 16 * lh);
      *reinterpret_cast<int4*>(&sX[lh][li][0]) = x;
      if (lh == 0) sXScale[li] = t < nTokens ? d[t * blocksPerRow + b] : 0.0f;
    }
    __syncthreads();
    if constexpr (D::kHasMin) {
      if (threadIdx.x < kTile) {
        const int* xs = reinterpret_cast<const int*>(&sX[0][threadIdx.x][0]);
        const int* xs1 = reinterpret_cast<const int*>(&sX[1][threadIdx.x][0]);
        int sum = 0;
#pragma unroll
        for (int i = 0; i < 4; i++) sum = __dp4a(xs[i], 0x01010101, __dp4a(xs1[i], 0x01010101, sum));
        sXSum[threadIdx.x] = sXScale[threadIdx.x] * (float)sum;
      }
    }
    constexpr int kSteps = D::kSplitScales ? 2 : 1;
#pragma unroll
    for (int step = 0; step < kSteps; step++) {
      FragC c[2][2];
#pragma unroll
      for (int i = 0; i < 2; i++)
#pragma unroll
        for (int j = 0; j < 2; j++) wmma::fill_fragment(c[i][j], 0);
#pragma unroll
      for (int h = D::kSplitScales ? step : 0; h < (D::kSplitScales ? step + 1 : 2); h++) {
        FragA a[2];
        FragB bf[2];
#pragma unroll
        for (int i = 0; i < 2; i++) wmma::load_matrix_sync(a[i], &sW[h][wm + 16 * i][0], 16);
#pragma unroll
        for (int j = 0; j < 2; j++) wmma::load_matrix_sync(bf[j], &sX[h][wn + 16 * j][0], 16);
#pragma unroll
        for (int i = 0; i < 2; i++)
#pragma unroll
          for (int j = 0; j < 2; j++) wmma::mma_sync(c[i][j], a[i], bf[j], c[i][j]);
      }
#pragma unroll
      for (int i = 0; i < 2; i++)
#pragma unroll
        for (int j = 0; j < 2; j++)
          wmma::store_matrix_sync(&sAcc[wn + 16 * j][wm + 16 * i], c[i][j], kAccStride, wmma::mem_col_major);
      __syncthreads();
      const float xScale = sXScale[et];
#pragma unroll
      for (int i = 0; i < 32; i++) {
        float v = (float)sAcc[et][er + i] * (sWScale[step][er + i] * xScale);
        if constexpr (D::kHasMin) v -= sWMin[er + i] * sXSum[et];
        acc[i] += v;
      }
      __syncthreads();  // sAcc, and the tiles of this block, are free again
    }
  }

  const int64_t t = n0 + et;
  if (t < nTokens) {
#pragma unroll
    for (int i = 0; i < 32; i++) {
      const int64_t r = m0 + er + i;
      if (r < rows) y[t * rows + r] = acc[i] + (bias ? bias[r] : 0.0f);
    }
  }
}

template <GgmlType T>
void launch(const MatMulInt8Args& a, cudaStream_t stream) {
  const dim3 grid(ceilDiv(a.rows, kTile), ceilDiv(a.nTokens, kTile));
  matMulInt8Kernel<Int8Decode<T>><<<grid, kThreads, 0, stream>>>(a.w, a.rowBytes, a.rows, a.cols, a.q, a.d, a.nTokens,
                                                                 a.bias, a.y);
}

}  // namespace

void matMulInt8(const MatMulInt8Args& a, cudaStream_t stream) {
  switch (a.type) {
    case GgmlType::Q8_0: launch<GgmlType::Q8_0>(a, stream); break;
    case GgmlType::Q4_0: launch<GgmlType::Q4_0>(a, stream); break;
    case GgmlType::Q4_K: launch<GgmlType::Q4_K>(a, stream); break;
    case GgmlType::Q5_K: launch<GgmlType::Q5_K>(a, stream); break;
    case GgmlType::Q6_K: launch<GgmlType::Q6_K>(a, stream); break;
    default: throw CudaError("mul_mat: the int8 tensor-core kernel takes quantized weights only");
  }
  checkLaunch("mul_mat (prefill, int8 tensor cores)");
}

}  // namespace kiln::cuda

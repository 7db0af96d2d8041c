// Matrix products for a few tokens at a time (decode): each weight row is streamed from memory
// once for all of them. Quantized weights meet int8 activations (integer dot products, __dp4a);
// float weights meet F32 activations.
#pragma once
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "../common/quant-blocks.h"

namespace kiln::cuda {

// Steps with more tokens go to the tiled products (mat-mul-int8, mat-mul-half, mat-mul-tiled).
constexpr int64_t kMaxMatVecTokens = 8;

// Whether `type` reads int8 activations from quantizeQ8Blocks (otherwise F32 ones).
bool matVecTakesQ8(GgmlType type);

// Products that read the same activations (q, k and v; gate and up) share one launch.
constexpr int kMaxMatVecMatrices = 3;

struct MatVecMatrix {
  const uint8_t* w;   // (rows, cols)
  int64_t rows;
  const float* bias;  // rows floats, or null
  float* y;           // (nTokens, rows)
};

struct MatVecArgs {
  GgmlType type;      // of every matrix
  size_t rowBytes;
  int64_t cols;
  const float* x;     // F32 activations (nTokens, cols), for float weight types
  const int8_t* q;    // int8 activations and their block scales, for quantized types
  const float* d;
  int64_t nTokens;    // 1 .. kMaxMatVecTokens
  int count;          // matrices, 1 .. kMaxMatVecMatrices
  MatVecMatrix m[kMaxMatVecMatrices];
};

void matVec(const MatVecArgs& a, cudaStream_t stream);

}  // namespace kiln::cuda

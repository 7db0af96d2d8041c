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

struct MatVecArgs {
  GgmlType type;
  const uint8_t* w;   // (rows, cols) in `type`
  size_t rowBytes;
  int64_t rows, cols;
  const float* x;     // F32 activations (nTokens, cols), for float weight types
  const int8_t* q;    // int8 activations and their block scales, for quantized types
  const float* d;
  int64_t nTokens;    // 1 .. kMaxMatVecTokens
  const float* bias;  // rows floats, or null
  float* y;           // (nTokens, rows)
};

void matVec(const MatVecArgs& a, cudaStream_t stream);

}  // namespace kiln::cuda

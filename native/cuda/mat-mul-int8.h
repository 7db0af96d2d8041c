// Matrix products for many tokens (prefill) against quantized weights on int8 tensor cores: the
// weights' integer values meet the int8 activation blocks of quantizeQ8Blocks, so every product
// sums exactly what the decode kernels (and the CPU's Q8_0 dot products) sum.
#pragma once
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "../common/quant-blocks.h"

namespace kiln::cuda {

struct MatMulInt8Args {
  GgmlType type;      // Q8_0, Q4_0, Q4_K, Q5_K or Q6_K (matVecTakesQ8)
  const uint8_t* w;   // (rows, cols) in `type`
  size_t rowBytes;
  int64_t rows, cols;
  const int8_t* q;    // (nTokens, cols) int8 activations and their (nTokens, cols / 32) block scales
  const float* d;
  int64_t nTokens;
  const float* bias;  // rows floats, or null
  float* y;           // (nTokens, rows)
};

void matMulInt8(const MatMulInt8Args& a, cudaStream_t stream);

}  // namespace kiln::cuda

// Matrix products for many tokens against float weights (F32, and F16/BF16 rows whose width is not
// a multiple of 32) in F32 on the CUDA cores: exact float products, as the CPU computes them.
#pragma once
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "../common/quant-blocks.h"

namespace kiln::cuda {

struct MatMulTiledArgs {
  GgmlType type;       // F32, F16 or BF16
  const uint8_t* w;    // (rows, cols) in `type`
  size_t rowBytes;
  int64_t rows, cols;
  const float* x;      // (nTokens, cols)
  int64_t nTokens;
  const float* bias;   // rows floats, or null
  float* y;            // (nTokens, rows)
};

void matMulTiled(const MatMulTiledArgs& a, cudaStream_t stream);

}  // namespace kiln::cuda

// Matrix products for many tokens (prefill) against F16 and BF16 weights on tensor cores: weight
// tiles in shared memory meet activations that toHalfRows scaled into fp16 range (bf16 for BF16
// weights, as the CPU rounds them), with F32 accumulation. Quantized weights go to mat-mul-int8.
#pragma once
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "../common/quant-blocks.h"

namespace kiln::cuda {

// F16 and BF16 rows of a multiple of 32 values; the rest goes to matMulTiled.
bool matMulHalfSupports(GgmlType type, int64_t cols);
// Whether the activations must be bf16 (BF16 weights) rather than fp16.
inline bool matMulHalfTakesBf16(GgmlType type) { return type == GgmlType::BF16; }

struct MatMulHalfArgs {
  GgmlType type;      // F16 or BF16
  const uint8_t* w;     // (rows, cols) in `type`
  size_t rowBytes;
  int64_t rows, cols;
  const uint16_t* xh;   // (nTokens, cols) fp16 or bf16 bits, row t divided by xScale[t]
  const float* xScale;
  int64_t nTokens;
  const float* bias;    // rows floats, or null
  float* y;             // (nTokens, rows)
};

void matMulHalf(const MatMulHalfArgs& a, cudaStream_t stream);

}  // namespace kiln::cuda

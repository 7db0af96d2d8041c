// Matrix products for many tokens (prefill) on tensor cores: tiles of weights are decoded to fp16
// (bf16 for BF16 weights) in shared memory and multiplied, with F32 accumulation, by activations
// that toHalfRows scaled into fp16 range.
#pragma once
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "../common/quant-blocks.h"

namespace kiln::cuda {

// F32 weights (and rows whose width is not a multiple of 32) go to matMulTiled instead.
bool matMulMmaSupports(GgmlType type, int64_t cols);
// Whether the activations must be bf16 (BF16 weights) rather than fp16.
inline bool matMulMmaTakesBf16(GgmlType type) { return type == GgmlType::BF16; }

struct MatMulMmaArgs {
  GgmlType type;
  const uint8_t* w;     // (rows, cols) in `type`
  size_t rowBytes;
  int64_t rows, cols;
  const uint16_t* xh;   // (nTokens, cols) fp16 or bf16 bits, row t divided by xScale[t]
  const float* xScale;
  int64_t nTokens;
  const float* bias;    // rows floats, or null
  float* y;             // (nTokens, rows)
};

void matMulMma(const MatMulMmaArgs& a, cudaStream_t stream);

}  // namespace kiln::cuda

// Activations in the forms the matrix products read: int8 blocks of 32 for the integer dot
// products of decode, and 16-bit floats with a per-row scale for the tensor cores of prefill.
#pragma once
#include <cuda_runtime_api.h>

#include <cstdint>

namespace kiln::cuda {

// Per block of 32 values: d = amax / 127 rounded to fp16, q = x * 127 / amax rounded half to even
// (the CPU's Q8_0 activation quantizer). q: (nTokens, cols) int8; d: (nTokens, cols / 32) floats.
// cols is a multiple of 32.
void quantizeQ8Blocks(const float* x, int64_t nTokens, int64_t cols, int8_t* q, float* d, cudaStream_t stream);

// Each row divided by its largest magnitude (so no value overflows fp16), as fp16 or bf16 bits:
// xh (nTokens, cols); scale (nTokens) receives the divisor.
void toHalfRows(const float* x, int64_t nTokens, int64_t cols, bool bf16, uint16_t* xh, float* scale, cudaStream_t stream);

}  // namespace kiln::cuda

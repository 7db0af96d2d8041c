// argmax on the device: greedy decoding without copying the logits back.
#pragma once
#include <cuda_runtime_api.h>

#include <cstdint>

namespace kiln::cuda {

// out[r] = index of the largest of x[r * cols .. (r + 1) * cols), the lowest on ties; NaN never
// wins and a row without a comparable value gives 0 (src/sampling/greedy.ts).
void argmax(const float* x, int64_t nRows, int64_t cols, int32_t* out, cudaStream_t stream);

}  // namespace kiln::cuda

// swiglu on the device.
#pragma once
#include <cuda_runtime_api.h>

#include <cstdint>

namespace kiln::cuda {

// y = silu(gate) * up over n values. With q and d, y is also quantized to int8 blocks of 32 as
// quantizeQ8Blocks would (n a multiple of 32), for the product that reads it next.
void swiglu(const float* gate, const float* up, float* y, int64_t n, int8_t* q, float* d, cudaStream_t stream);

}  // namespace kiln::cuda

// swiglu on the device.
#pragma once
#include <cuda_runtime_api.h>

#include <cstdint>

namespace kiln::cuda {

// y = silu(gate) * up over n values.
void swiglu(const float* gate, const float* up, float* y, int64_t n, cudaStream_t stream);

}  // namespace kiln::cuda

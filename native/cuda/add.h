// add on the device.
#pragma once
#include <cuda_runtime_api.h>

#include <cstdint>

namespace kiln::cuda {

// y = a + b over n values; y may equal a or b.
void add(const float* a, const float* b, float* y, int64_t n, cudaStream_t stream);

}  // namespace kiln::cuda

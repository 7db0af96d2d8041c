// rms_norm on the device.
#pragma once
#include <cuda_runtime_api.h>

#include <cstdint>

namespace kiln::cuda {

// y = x / sqrt(mean(x^2) + eps) * w over each of nGroups contiguous groups of `width` values
// (a whole row, or one head for Q/K norms); w holds `width` floats. With q and d, y is also
// quantized to int8 blocks of 32 as quantizeQ8Blocks would (width a multiple of 32), for the
// product that reads it next.
void rmsNorm(const float* x, const float* w, float* y, int64_t nGroups, int64_t width, float eps, int8_t* q, float* d,
             cudaStream_t stream);

}  // namespace kiln::cuda

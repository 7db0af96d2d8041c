// rope on the device.
#pragma once
#include <cuda_runtime_api.h>

#include <cstdint>

namespace kiln::cuda {

struct RopeArgs {
  int nHeads;
  int headDim;
  int nRot;         // rotated dimensions per head (<= headDim, even)
  bool neox;        // pairs (i, i + nRot/2) instead of (2i, 2i+1)
  float thetaScale; // freqBase^(-2/nRot), computed on the host as the CPU does
  float freqScale;
};

// y = x (nTokens, nHeads * headDim) rotated by the angles of `positions` (device memory);
// freqFactors: nRot/2 divisors or null. y may equal x.
void rope(const float* x, float* y, int64_t nTokens, const int32_t* positions, const RopeArgs& a,
          const float* freqFactors, cudaStream_t stream);

}  // namespace kiln::cuda

// One block of 32 activations quantized by a warp, each lane holding one value: the arithmetic of
// quantizeQ8Blocks, for kernels that quantize the activations they produce on the way out.
#pragma once
#include "device-common.cuh"

namespace kiln::cuda {

// Lane i's value v becomes q[i]: v * 127 / amax rounded half to even; lane 0 writes the block's
// scale, amax / 127 rounded to fp16 (the CPU's Q8_0 activation quantizer).
__device__ __forceinline__ void quantizeWarpBlock(float v, int8_t* q, float* d) {
  const int lane = threadIdx.x % kWarpSize;
  const float amax = warpMax(fabsf(v));
  const float id = amax != 0.0f ? 127.0f / amax : 0.0f;
  const float s = v * id;
  // The bounds keep the conversion defined where 127 / amax overflows or v is not finite.
  q[lane] = (int8_t)(s > -127.0f ? (s < 127.0f ? __float2int_rn(s) : 127) : -127);
  if (lane == 0) *d = __half2float(__float2half_rn(amax / 127.0f));
}

}  // namespace kiln::cuda

// F32, F16 and BF16: conversions and the scalar dot products that define correct for them.
#include "quants.h"

namespace kiln {

void toFloatF32(const void* src, float* dst, int64_t n) { std::memcpy(dst, src, sizeof(float) * n); }

void fromFloatF32(const float* src, void* dst, int64_t n) { std::memcpy(dst, src, sizeof(float) * n); }

// The float dot products sum in double (as ggml's scalar path does): the definition of correct
// should be the most accurate one, and SIMD versions are held to it within a tolerance.
void vecDotF32_generic(int64_t n, float* s, const void* vx, const void* vy) {
  const float* x = static_cast<const float*>(vx);
  const float* y = static_cast<const float*>(vy);
  double sum = 0;
  for (int64_t i = 0; i < n; i++) sum += (double)x[i] * (double)y[i];
  *s = (float)sum;
}

void toFloatF16(const void* src, float* dst, int64_t n) {
  const fp16_t* x = static_cast<const fp16_t*>(src);
  for (int64_t i = 0; i < n; i++) dst[i] = fp16ToFloat(x[i]);
}

void fromFloatF16(const float* src, void* dst, int64_t n) {
  fp16_t* y = static_cast<fp16_t*>(dst);
  for (int64_t i = 0; i < n; i++) y[i] = floatToFp16(src[i]);
}

void vecDotF16_generic(int64_t n, float* s, const void* vx, const void* vy) {
  const fp16_t* x = static_cast<const fp16_t*>(vx);
  const fp16_t* y = static_cast<const fp16_t*>(vy);
  double sum = 0;
  for (int64_t i = 0; i < n; i++) sum += (double)fp16ToFloat(x[i]) * (double)fp16ToFloat(y[i]);
  *s = (float)sum;
}

void toFloatBF16(const void* src, float* dst, int64_t n) {
  const bf16_t* x = static_cast<const bf16_t*>(src);
  for (int64_t i = 0; i < n; i++) dst[i] = bf16ToFloat(x[i]);
}

void fromFloatBF16(const float* src, void* dst, int64_t n) {
  bf16_t* y = static_cast<bf16_t*>(dst);
  for (int64_t i = 0; i < n; i++) y[i] = floatToBf16(src[i]);
}

void vecDotBF16_generic(int64_t n, float* s, const void* vx, const void* vy) {
  const bf16_t* x = static_cast<const bf16_t*>(vx);
  const bf16_t* y = static_cast<const bf16_t*>(vy);
  double sum = 0;
  for (int64_t i = 0; i < n; i++) sum += (double)bf16ToFloat(x[i]) * (double)bf16ToFloat(y[i]);
  *s = (float)sum;
}

}  // namespace kiln

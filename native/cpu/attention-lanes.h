// Helpers of the SIMD attention kernels (attention-avx2.cpp, attention-avx512.cpp): widening a block
// of the cache and the lane-wise steps that reproduce the scalar definition's horizontal sums.
// Needs -mavx2 -mfma -mf16c; every helper is `static` (see quants.h).
#pragma once
#include <immintrin.h>

#include <cstdint>
#include <type_traits>

#include "../common/quant-blocks.h"
#include "simd-avx2.h"

namespace kiln {

// Queries the grouped kernels take at once: the float lanes.
constexpr int kAttentionLanes = 8;

// Keys or values of positions [j0, j0 + count) as floats: the cache itself when it holds floats,
// else widened (exactly) into `buffer`; *rowStride is their stride.
static inline const float* widened(const float* src, int64_t, int64_t stride, int, float*, int64_t* rowStride) {
  *rowStride = stride;
  return src;
}
static inline const float* widened(const fp16_t* src, int64_t count, int64_t stride, int headDim, float* buffer, int64_t* rowStride) {
  const int d8 = headDim / 8 * 8;
  for (int64_t j = 0; j < count; j++) {
    const fp16_t* s = src + j * stride;
    float* d = buffer + j * headDim;
    int i = 0;
    for (; i < d8; i += 8) _mm256_storeu_ps(d + i, simd::loadF16(s + i));
    for (; i < headDim; i++) d[i] = simd::fp16(s[i]);
  }
  *rowStride = headDim;
  return buffer;
}

// Asks for the cache lines of rows [0, count) (stride apart, headDim values each) before they are
// read: a decode step finds the cache in memory (the weights streamed since evicted it), and the
// kernels' own loads come too few at a time to hide that.
template <typename T>
static inline void prefetchRows(const T* src, int64_t count, int64_t stride, int headDim) {
  const int64_t bytes = (int64_t)headDim * (int64_t)sizeof(T);
  for (int64_t j = 0; j < count; j++) {
    const char* p = reinterpret_cast<const char*>(src + j * stride);
    for (int64_t b = 0; b < bytes; b += 64) _mm_prefetch(p + b, _MM_HINT_T0);
    _mm_prefetch(p + bytes - 1, _MM_HINT_T0);
  }
}

// Eight rows of accumulators summed lane by lane in hsum's order.
static inline __m256 sumRows(const __m256* a) {
  return _mm256_add_ps(_mm256_add_ps(_mm256_add_ps(a[0], a[4]), _mm256_add_ps(a[2], a[6])),
                       _mm256_add_ps(_mm256_add_ps(a[1], a[5]), _mm256_add_ps(a[3], a[7])));
}

// The 8 queries' dot products from their 8-lane sums a[l], as attendOne finishes one: low half plus
// high half (two queries per vector), then two horizontal adds (lanes [q0 q2 q4 q6 | q1 q3 q5 q7]),
// put in query order.
static inline __m256 laneDots(const __m256* a) {
  __m256 t[4];
  for (int m = 0; m < 4; m++)
    t[m] = _mm256_add_ps(_mm256_permute2f128_ps(a[2 * m], a[2 * m + 1], 0x20), _mm256_permute2f128_ps(a[2 * m], a[2 * m + 1], 0x31));
  const __m256 dots = _mm256_hadd_ps(_mm256_hadd_ps(t[0], t[1]), _mm256_hadd_ps(t[2], t[3]));
  return _mm256_permutevar8x32_ps(dots, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
}

// Runs f with the head size known when compiling for the common sizes 64 and 128, so each
// position's loops over it unroll (Zen 5, Qwen2.5-0.5B prefill of 512 tokens: attention at the
// AVX2 tier 221 -> 166 ms; on 512-bit vectors, with the KQV of one load per position, 178 -> 100),
// else with 0 (read at run time); the order of every sum is the same.
template <typename F>
static inline auto byHeadDim(int headDim, F f) {
  if (headDim == 64) return f(std::integral_constant<int, 64>());
  if (headDim == 128) return f(std::integral_constant<int, 128>());
  return f(std::integral_constant<int, 0>());
}

// attention-avx512.cpp, for head sizes that are whole steps of 32: the grouped kernel's K*Q and
// KQV on 512-bit vectors, with the bits of their AVX2 versions.
__m256 groupScores_avx512(const float* const* ql, const float* k, int64_t n, int64_t stride, int headDim, float scale,
                          float* scores, float* rows);
__m256 groupScores_avx512(const float* const* ql, const fp16_t* k, int64_t n, int64_t stride, int headDim, float scale,
                          float* scores, float* rows);
void groupValues_avx512(const float* scores, int nq, const float* v, int64_t n, int64_t stride, int headDim, float* rows,
                        float* acc, float* out, int64_t outStride);
void groupValues_avx512(const float* scores, int nq, const fp16_t* v, int64_t n, int64_t stride, int headDim, float* rows,
                        float* acc, float* out, int64_t outStride);

}  // namespace kiln

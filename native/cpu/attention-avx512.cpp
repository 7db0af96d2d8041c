// The grouped attention kernel's K*Q and KQV (attention-avx2.cpp) on 512-bit vectors, for head
// sizes that are whole steps of 32. Each 512-bit vector holds two of the AVX2 kernel's 8-lane
// vectors side by side (accumulators a0 | a1 and a2 | a3 of a dot product; two 8-dimension slices
// of an output), so every FMA and add is one the AVX2 kernel does, two per instruction: the same
// bits. Compiled with -mavx512f -mavx512bw -mavx512vl -mavx512vnni (and AVX2/FMA/F16C).
#include <immintrin.h>

#include <cmath>

#include "attention-lanes.h"
#include "ops.h"
#include "simd-avx2.h"

namespace kiln {

using namespace simd;

namespace {

constexpr int kLanes = kAttentionLanes;
constexpr int kBlock = kAttentionBlock;

inline __m256 low8(__m512 v) { return _mm512_castps512_ps256(v); }
inline __m256 high8(__m512 v) { return _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1)); }

// Eight rows of accumulators summed lane by lane in hsum's order (sumRows on 16 lanes).
inline __m512 sumRows16(const __m512* a) {
  return _mm512_add_ps(_mm512_add_ps(_mm512_add_ps(a[0], a[4]), _mm512_add_ps(a[2], a[6])),
                       _mm512_add_ps(_mm512_add_ps(a[1], a[5]), _mm512_add_ps(a[3], a[7])));
}

template <typename T, int kHeadDim>
__m256 scores(const float* const* ql, const T* k, int64_t n, int64_t stride, int headDimArg, float scale, float* out, float* rows) {
  const int headDim = kHeadDim ? kHeadDim : headDimArg;
  const __m256 vscale = _mm256_set1_ps(scale);
  __m256 vmax = _mm256_set1_ps(-INFINITY);
  for (int64_t j0 = 0; j0 < n; j0 += kBlock) {
    const int64_t count = n - j0 < kBlock ? n - j0 : kBlock;
    if (j0 + kBlock < n) prefetchRows(k + (j0 + kBlock) * stride, n - j0 - kBlock < kBlock ? n - j0 - kBlock : kBlock, stride, headDim);
    int64_t ks = 0;
    const float* kf = widened(k + j0 * stride, count, stride, headDim, rows, &ks);
    for (int64_t jj = 0; jj < count; jj++) {
      const float* kj = kf + jj * ks;
      __m256 a[kLanes];
      for (int l = 0; l < kLanes; l++) {
        // [a0 | a1] and [a2 | a3] of the AVX2 kernel; then (a0 + a2) + (a1 + a3).
        __m512 a01 = _mm512_setzero_ps(), a23 = a01;
        for (int i = 0; i < headDim; i += 32) {
          a01 = _mm512_fmadd_ps(_mm512_loadu_ps(kj + i), _mm512_loadu_ps(ql[l] + i), a01);
          a23 = _mm512_fmadd_ps(_mm512_loadu_ps(kj + i + 16), _mm512_loadu_ps(ql[l] + i + 16), a23);
        }
        const __m512 w = _mm512_add_ps(a01, a23);
        a[l] = _mm256_add_ps(low8(w), high8(w));
      }
      const __m256 s = _mm256_mul_ps(laneDots(a), vscale);
      _mm256_storeu_ps(out + (j0 + jj) * kLanes, s);
      vmax = _mm256_max_ps(s, vmax);
    }
  }
  return vmax;
}

// Outputs go 32 dimensions at a time: per row of accumulators (positions j % 8), the 8 lanes x two
// vectors.
template <typename T, int kHeadDim>
void values(const float* scores, int nq, const T* v, int64_t n, int64_t stride, int headDimArg, float* rows, float* acc, float* out,
            int64_t outStride) {
  const int headDim = kHeadDim ? kHeadDim : headDimArg;
  for (int64_t j0 = 0; j0 < n; j0 += kBlock) {
    const int64_t j1 = j0 + kBlock < n ? j0 + kBlock : n;
    if (j1 < n) prefetchRows(v + j1 * stride, n - j1 < kBlock ? n - j1 : kBlock, stride, headDim);
    int64_t vs = 0;
    const float* vf = widened(v + j0 * stride, j1 - j0, stride, headDim, rows, &vs) - j0 * vs;
    // As the AVX2 kernel: accumulator row m of every query takes the positions j = m (mod 8) in
    // order, one load of a position's values feeding the eight lanes' chains; the first block starts
    // them at zero.
    for (int m = 0; m < 8; m++) {
      for (int d = 0; d < headDim; d += 32) {
        __m512 a[kLanes][2];
        for (int l = 0; l < kLanes; l++)
          for (int h = 0; h < 2; h++) a[l][h] = j0 == 0 ? _mm512_setzero_ps() : _mm512_loadu_ps(acc + (l * 8 + m) * headDim + d + 16 * h);
        for (int64_t j = j0 + m; j < j1; j += 8) {
          const __m512 v0 = _mm512_loadu_ps(vf + j * vs + d), v1 = _mm512_loadu_ps(vf + j * vs + d + 16);
          for (int l = 0; l < kLanes; l++) {
            const __m512 s = _mm512_set1_ps(scores[j * kLanes + l]);
            a[l][0] = _mm512_fmadd_ps(v0, s, a[l][0]);
            a[l][1] = _mm512_fmadd_ps(v1, s, a[l][1]);
          }
        }
        for (int l = 0; l < kLanes; l++)
          for (int h = 0; h < 2; h++) _mm512_storeu_ps(acc + (l * 8 + m) * headDim + d + 16 * h, a[l][h]);
      }
    }
  }
  for (int l = 0; l < nq; l++) {
    const float* al = acc + l * 8 * headDim;
    for (int d = 0; d < headDim; d += 16) {
      __m512 a[8];
      for (int m = 0; m < 8; m++) a[m] = _mm512_loadu_ps(al + m * headDim + d);
      _mm512_storeu_ps(out + l * outStride + d, sumRows16(a));
    }
  }
}

}  // namespace

__m256 groupScores_avx512(const float* const* ql, const float* k, int64_t n, int64_t stride, int headDim, float scale,
                          float* out, float* rows) {
  return byHeadDim(headDim, [&](auto known) { return scores<float, decltype(known)::value>(ql, k, n, stride, headDim, scale, out, rows); });
}
__m256 groupScores_avx512(const float* const* ql, const fp16_t* k, int64_t n, int64_t stride, int headDim, float scale,
                          float* out, float* rows) {
  return byHeadDim(headDim, [&](auto known) { return scores<fp16_t, decltype(known)::value>(ql, k, n, stride, headDim, scale, out, rows); });
}
void groupValues_avx512(const float* scores, int nq, const float* v, int64_t n, int64_t stride, int headDim, float* rows,
                        float* acc, float* out, int64_t outStride) {
  byHeadDim(headDim, [&](auto known) { values<float, decltype(known)::value>(scores, nq, v, n, stride, headDim, rows, acc, out, outStride); });
}
void groupValues_avx512(const float* scores, int nq, const fp16_t* v, int64_t n, int64_t stride, int headDim, float* rows,
                        float* acc, float* out, int64_t outStride) {
  byHeadDim(headDim, [&](auto known) { values<fp16_t, decltype(known)::value>(scores, nq, v, n, stride, headDim, rows, acc, out, outStride); });
}

}  // namespace kiln

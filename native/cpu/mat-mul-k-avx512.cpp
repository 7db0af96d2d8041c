// AVX-512 VNNI tiles of Q4_K and Q6_K matrix products (prefill), with the bits of their AVX2 row dots
// (vecDotQ4_K_avx2, vecDotQ6_K_avx2), which decode keeps using.
// Each 512-bit vector holds the same 32 activation values of two tokens, one per 256-bit half, and a
// weight row's 32 values broadcast to both halves. Every integer lane is then the lane of the AVX2
// kernel's 256-bit vector for that token, and every float lane is that token's accumulator, so each
// entry gets exactly the AVX2 integers and FMAs, two tokens per instruction. vpdpwssd applies a
// sub-block's scale and adds in one step. Compiled with -mavx512f -mavx512bw -mavx512vl -mavx512vnni.
#include <immintrin.h>

#include "quants.h"
#include "simd-avx2.h"

namespace kiln {

using namespace simd;

namespace {

// Tokens per tile: two pairs.
constexpr int kPairs = 2;
constexpr int kTokens = 2 * kPairs;

// The same 32 bytes of two tokens' rows, token a in the low half.
inline __m512i pairOf(const int8_t* a, const int8_t* b) {
  return _mm512_inserti64x4(_mm512_castsi256_si512(load32(a)), load32(b), 1);
}

inline __m512i pairOf16(const int16_t* a, const int16_t* b) {
  return _mm512_inserti64x4(_mm512_castsi256_si512(load32(a)), load32(b), 1);
}

// Token k's 8-lane accumulator from its pair's vector.
inline __m256 half(__m512 v, int k) {
  return k == 0 ? _mm512_castps512_ps256(v) : _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1));
}

// R rows x 4 tokens of Q4_K x Q8_K. Per block and row: the scales as int16 pairs for vpdpwssd,
// the mins; per group of 64 values the row's low and high nibbles (sub-blocks 2g and 2g + 1).
// The mins term of 4 tokens shares one vector per row: lanes 4k..4k+3 are token k's 4-lane
// accumulator of minsTerm.
template <int R>
void q4KTile(int64_t n, float* s, int64_t ldS, const char* x, size_t xStride, const char* y, size_t yStride) {
  const __m512i low4 = _mm512_set1_epi8(0x0f);
  __m512 acc[R][kPairs], accMins[R];
  for (int r = 0; r < R; r++) {
    accMins[r] = _mm512_setzero_ps();
    for (int p = 0; p < kPairs; p++) acc[r][p] = _mm512_setzero_ps();
  }
  for (int64_t b = 0; b < n / QK_K; b++) {
    const BlockQ4_K* xb[R];
    const BlockQ8_K* yb[kTokens];
    for (int r = 0; r < R; r++) xb[r] = reinterpret_cast<const BlockQ4_K*>(x + r * xStride) + b;
    for (int t = 0; t < kTokens; t++) yb[t] = reinterpret_cast<const BlockQ8_K*>(y + t * yStride) + b;

    // Each token's 8 sums of 32 activations (pairs of its 16 sums of 16, which fit int16) in one
    // 128-bit lane, for the mins; the tokens' scales, negated for the mins in 4 lanes each.
    const __m512i ones = _mm512_set1_epi16(1);
    const __m256i sums01 = _mm512_cvtepi32_epi16(_mm512_madd_epi16(pairOf16(yb[0]->bsums, yb[1]->bsums), ones));
    const __m256i sums23 = _mm512_cvtepi32_epi16(_mm512_madd_epi16(pairOf16(yb[2]->bsums, yb[3]->bsums), ones));
    const __m512i sums = _mm512_inserti64x4(_mm512_castsi256_si512(sums01), sums23, 1);
    const __m512 d4 = _mm512_castps128_ps512(_mm_setr_ps(yb[0]->d, yb[1]->d, yb[2]->d, yb[3]->d));
    const __m512 negDy = _mm512_castsi512_ps(_mm512_xor_si512(
        _mm512_castps_si512(_mm512_permutexvar_ps(_mm512_setr_epi32(0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3), d4)),
        _mm512_set1_epi32(INT32_MIN)));
    const __m512 dy[kPairs] = {_mm512_permutexvar_ps(_mm512_setr_epi32(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1), d4),
                               _mm512_permutexvar_ps(_mm512_setr_epi32(2, 2, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3), d4)};

    // Per row: the 8 scales as int16 pairs (vpdpwssd multiplies both values of a pair by one), and
    // the mins term.
    alignas(32) uint32_t sc[R][8];
#pragma GCC unroll 8
    for (int r = 0; r < R; r++) {
      alignas(16) uint8_t sm[16];
      unpackScalesMinsK4(xb[r]->scales, sm);
      const __m128i both = _mm_load_si128(reinterpret_cast<const __m128i*>(sm));
      const __m256i scales = _mm256_cvtepu8_epi32(both);
      _mm256_store_si256(reinterpret_cast<__m256i*>(sc[r]), _mm256_or_si256(scales, _mm256_slli_epi32(scales, 16)));
      const __m512i mins = _mm512_broadcast_i32x4(_mm_cvtepu8_epi16(_mm_srli_si128(both, 8)));
      const __m512 d = _mm512_mul_ps(_mm512_set1_ps(fp16(xb[r]->dmin)), negDy);
      accMins[r] = _mm512_fmadd_ps(d, _mm512_cvtepi32_ps(_mm512_madd_epi16(mins, sums)), accMins[r]);
    }

    __m512i sumi[R][kPairs];
    for (int r = 0; r < R; r++)
      for (int p = 0; p < kPairs; p++) sumi[r][p] = _mm512_setzero_si512();
    for (int g = 0; g < QK_K / 64; g++) {
      __m512i yLo[kPairs], yHi[kPairs];
      for (int p = 0; p < kPairs; p++) {
        yLo[p] = pairOf(yb[2 * p]->qs + 64 * g, yb[2 * p + 1]->qs + 64 * g);
        yHi[p] = pairOf(yb[2 * p]->qs + 64 * g + 32, yb[2 * p + 1]->qs + 64 * g + 32);
      }
      for (int r = 0; r < R; r++) {
        const __m512i bits = _mm512_broadcast_i64x4(load32(xb[r]->qs + 32 * g));
        const __m512i vLo = _mm512_and_si512(bits, low4);
        const __m512i vHi = _mm512_and_si512(_mm512_srli_epi16(bits, 4), low4);
        const __m512i scLo = _mm512_set1_epi32((int)sc[r][2 * g]), scHi = _mm512_set1_epi32((int)sc[r][2 * g + 1]);
        for (int p = 0; p < kPairs; p++) {
          sumi[r][p] = _mm512_dpwssd_epi32(sumi[r][p], _mm512_maddubs_epi16(vLo, yLo[p]), scLo);
          sumi[r][p] = _mm512_dpwssd_epi32(sumi[r][p], _mm512_maddubs_epi16(vHi, yHi[p]), scHi);
        }
      }
    }
    for (int r = 0; r < R; r++) {
      const __m512 dx = _mm512_set1_ps(fp16(xb[r]->d));
      for (int p = 0; p < kPairs; p++) acc[r][p] = _mm512_fmadd_ps(_mm512_mul_ps(dx, dy[p]), _mm512_cvtepi32_ps(sumi[r][p]), acc[r][p]);
    }
  }
  for (int r = 0; r < R; r++) {
    alignas(64) float mins[16];
    _mm512_store_ps(mins, accMins[r]);
    for (int t = 0; t < kTokens; t++)
      s[t * ldS + r] = hsum(half(acc[r][t / 2], t % 2)) + hsum(_mm_load_ps(mins + 4 * t));
  }
}

}  // namespace

void vecDotManyQ4_K_avx512(int64_t n, int64_t nr, int64_t nt, float* s, int64_t ldS, const void* vx, size_t xStride,
                           const void* vy, size_t yStride) {
  const char* x = static_cast<const char*>(vx);
  const char* y = static_cast<const char*>(vy);
  constexpr int R = 4;
  const int64_t full = nt / kTokens * kTokens;
  int64_t r = 0;
  for (; r + R <= nr; r += R)
    for (int64_t t = 0; t < full; t += kTokens) q4KTile<R>(n, s + t * ldS + r, ldS, x + r * xStride, xStride, y + t * yStride, yStride);
  for (; r < nr; r++)
    for (int64_t t = 0; t < full; t += kTokens) q4KTile<1>(n, s + t * ldS + r, ldS, x + r * xStride, xStride, y + t * yStride, yStride);
  if (full < nt) vecDotManyQ4_K_avx2(n, nr, nt - full, s + full * ldS, ldS, vx, xStride, y + full * yStride, yStride);
}

}  // namespace kiln

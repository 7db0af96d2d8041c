// Small AVX2/FMA/F16C helpers shared by the *-avx2.cpp files, and only by them (this header needs
// -mavx2 -mfma -mf16c). Every helper is `static` so that no copy compiled with AVX2 can become the
// one a file built for plain x86-64 links to (see quants.h).
#pragma once
#if !defined(__AVX2__) || !defined(__FMA__) || !defined(__F16C__)
#error "simd-avx2.h is for files compiled with -mavx2 -mfma -mf16c"
#endif
#include <immintrin.h>

#include <cstddef>
#include <cstdint>

#include "../common/quant-blocks.h"

namespace kiln {
namespace simd {

// How far ahead a decode kernel that reads its rows one at a time (one weight stream per thread)
// asks for its weights: about 8 KB, past what the hardware prefetcher is already fetching. Zen 5,
// TinyLlama Q4_K decode@0 on 2 threads (tok/s, three sets of alternating builds): the next row
// (1.2 KB) 54.8, none 57.0, 4 rows 59.2, 8 rows 61.4; 8 rows 66.2, 8 KB 68.8, 12 KB 69.0; 8 rows
// 62.8, 16 rows 61.0, 32 rows 57.8. Rows read side by side prefetch the next rows' blocks instead
// (R rows ahead): there the hardware prefetcher does not follow the short, interleaved streams
// (Zen 5, AVX-512 Q6_K decode of 4 rows side by side without it 43 -> 29 tok/s). On Zen 4 those 4
// rows still read memory at 19 GB/s against 43 for two streams asking this far ahead, so every
// decode kernel now reads a few long streams a thread (halfApart, FloatTile::streams).
constexpr int kRowStreamAheadBytes = 8192;

// Runs body(b) for each block b in [0, nb), ahead(b + 1) just before it: what a block's integer
// sums need of it (its scales widened, their products) is stored a block before they read it, into
// the other half of a double buffer, so no load waits on the store that made it. Made and read in
// the same block, the AVX2 Q8_0 prefill tile's scale products cost it 0.98 against 0.84 ns a pair
// (Zen 3, one thread from L1; see TileQ8_0Prefill).
template <typename Ahead, typename Body>
static inline void blocksOneAhead(int64_t nb, Ahead ahead, Body body) {
  if (nb > 0) ahead(0);
  for (int64_t b = 0; b < nb; b++) {
    if (b + 1 < nb) ahead(b + 1);
    body(b);
  }
}

// A decode chunk's units [0, n) (rows, or groups of packed rows) as two streams half a chunk apart:
// pair(i, i + n / 2) for each i < n / 2, then last(n - 1) when n is odd. Each unit's sums are its
// own, so the order does not change them. Units read side by side one after another made as many
// short streams as the tile took units, which the memory served worse (q8_0Rows in mat-mul-avx2.cpp);
// packed Q4_K and Q5_K rows one at a time, one stream, left the arithmetic of consecutive blocks
// waiting on each other (packedScaleMinKRows in mat-mul-k-avx2.cpp).
template <typename Pair, typename Last>
static inline void halfApart(int64_t n, Pair pair, Last last) {
  const int64_t h = n / 2;
  for (int64_t i = 0; i < h; i++) pair(i, i + h);
  if (n % 2) last(n - 1);
}

// halfApart over rows of xStride bytes from x, whose sums go to s[r]: pair(out, in) for rows i and
// i + n / 2 (out = {s + i, s + j}, in = their starts), then last(out, in) for an odd count's last row.
template <typename Pair, typename Last>
static inline void rowsHalfApart(int64_t n, float* s, const char* x, size_t xStride, Pair pair, Last last) {
  halfApart(
      n,
      [&](int64_t i, int64_t j) {
        float* out[2] = {s + i, s + j};
        const char* in[2] = {x + i * xStride, x + j * xStride};
        pair(out, in);
      },
      [&](int64_t i) {
        float* out[1] = {s + i};
        const char* in[1] = {x + i * xStride};
        last(out, in);
      });
}

// Asks for every cache line of the `Size` bytes at p + ahead. A walk over blocks of `Size` bytes
// that calls this per block asks for each line of its stream: a single prefetch per 144-byte packed
// Q4_0 block skipped about every other line, which then came late (decode 2048 -> 5632, 2 threads:
// 22.1-22.6 -> 25.4-26.2 GB/s).
template <size_t Size>
static inline void prefetchLines(const void* p, size_t ahead) {
  for (size_t l = 0; l < Size; l += 64) _mm_prefetch(static_cast<const char*>(p) + ahead + l, _MM_HINT_T0);
}

// Sum of 8 floats in ggml's order (hsum_float_8): low half plus high half, then pairs.
static inline float hsum(__m256 v) {
  __m128 r = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  r = _mm_add_ps(r, _mm_movehl_ps(r, r));
  r = _mm_add_ss(r, _mm_movehdup_ps(r));
  return _mm_cvtss_f32(r);
}

// Eight such sums at once, v[i]'s in lane i, each added in hsum's order (so the same bits): the
// halves of two vectors side by side, then their pairs two vectors at a time.
static inline __m256 hsum8(const __m256* v) {
  __m256 h[4];
  for (int i = 0; i < 4; i++)
    h[i] = _mm256_add_ps(_mm256_permute2f128_ps(v[2 * i], v[2 * i + 1], 0x20), _mm256_permute2f128_ps(v[2 * i], v[2 * i + 1], 0x31));
  // Per 128-bit lane: [x0 + x2, x1 + x3] of two vectors' halves.
  const __m256 a = _mm256_add_ps(_mm256_shuffle_ps(h[0], h[1], 0x44), _mm256_shuffle_ps(h[0], h[1], 0xee));
  const __m256 b = _mm256_add_ps(_mm256_shuffle_ps(h[2], h[3], 0x44), _mm256_shuffle_ps(h[2], h[3], 0xee));
  // Lanes [v0 v2 v4 v6 | v1 v3 v5 v7], then put in order.
  const __m256 sums = _mm256_add_ps(_mm256_shuffle_ps(a, b, 0x88), _mm256_shuffle_ps(a, b, 0xdd));
  return _mm256_permutevar8x32_ps(sums, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
}

static inline float hsum(__m128 v) {
  __m128 r = _mm_add_ps(v, _mm_movehl_ps(v, v));
  r = _mm_add_ss(r, _mm_movehdup_ps(r));
  return _mm_cvtss_f32(r);
}

static inline double hsum(__m256d v) {
  const __m128d r = _mm_add_pd(_mm256_castpd256_pd128(v), _mm256_extractf128_pd(v, 1));
  return _mm_cvtsd_f64(_mm_add_sd(r, _mm_unpackhi_pd(r, r)));
}

// ggml_v_expf for AVX2: the scalar definition's expGgml (ops.cpp) on eight lanes, bit for bit. The two-step scaling for
// |n| > 126 is computed only when some lane needs it, as ggml does.
static inline __m256 expGgml(__m256 x) {
  const __m256 r = _mm256_set1_ps(0x1.8p23f);
  const __m256 z = _mm256_fmadd_ps(x, _mm256_set1_ps(0x1.715476p+0f), r);
  const __m256 n = _mm256_sub_ps(z, r);
  const __m256 b = _mm256_fnmadd_ps(n, _mm256_set1_ps(0x1.7f7d1cp-20f), _mm256_fnmadd_ps(n, _mm256_set1_ps(0x1.62e4p-1f), x));
  const __m256i e = _mm256_slli_epi32(_mm256_castps_si256(z), 23);
  const __m256 k = _mm256_castsi256_ps(_mm256_add_epi32(e, _mm256_set1_epi32(0x3f800000)));
  const __m256 absN = _mm256_andnot_ps(_mm256_set1_ps(-0.0f), n);
  const __m256 c = _mm256_cmp_ps(absN, _mm256_set1_ps(126), _CMP_GT_OQ);
  const __m256 u = _mm256_mul_ps(b, b);
  const __m256 j = _mm256_fmadd_ps(
      _mm256_fmadd_ps(_mm256_fmadd_ps(_mm256_set1_ps(0x1.0e4020p-7f), b, _mm256_set1_ps(0x1.573e2ep-5f)), u,
                      _mm256_fmadd_ps(_mm256_set1_ps(0x1.555e66p-3f), b, _mm256_set1_ps(0x1.fffdb6p-2f))),
      u, _mm256_mul_ps(_mm256_set1_ps(0x1.ffffecp-1f), b));
  const __m256 y = _mm256_fmadd_ps(j, k, k);
  if (!_mm256_movemask_ps(c)) return y;
  const __m256i g = _mm256_and_si256(_mm256_castps_si256(_mm256_cmp_ps(n, _mm256_setzero_ps(), _CMP_LE_OQ)),
                                     _mm256_set1_epi32((int)0x82000000u));
  const __m256 s1 = _mm256_castsi256_ps(_mm256_add_epi32(g, _mm256_set1_epi32(0x7f000000)));
  const __m256 s2 = _mm256_castsi256_ps(_mm256_sub_epi32(e, g));
  const __m256 d = _mm256_cmp_ps(absN, _mm256_set1_ps(192), _CMP_GT_OQ);
  const __m256 scaled = _mm256_blendv_ps(y, _mm256_mul_ps(_mm256_fmadd_ps(s2, j, s2), s1), c);
  return _mm256_blendv_ps(scaled, _mm256_mul_ps(s1, s1), d);
}

static inline float fp16(fp16_t h) { return _cvtsh_ss(h); }

// a * b + c with one rounding. Not std::fma: that is an inline function with external linkage,
// and an AVX2 file's copy of it could be the one the linker keeps (see quants.h).
static inline float fmaSingle(float a, float b, float c) {
  return _mm_cvtss_f32(_mm_fmadd_ss(_mm_set_ss(a), _mm_set_ss(b), _mm_set_ss(c)));
}

static inline float bf16(bf16_t h) {
  const uint32_t bits = (uint32_t)h << 16;
  float f;
  __builtin_memcpy(&f, &bits, sizeof f);
  return f;
}

static inline __m256i load32(const void* p) { return _mm256_loadu_si256(static_cast<const __m256i*>(p)); }

// A Q8_K block's 8 sums of 32 values (int16), from its sums of 16: what the Q4_K and Q5_K mins
// terms multiply.
static inline __m128i sumsOf32(const BlockQ8_K& y) {
  const __m256i bsums = load32(y.bsums);
  return _mm_hadd_epi16(_mm256_castsi256_si128(bsums), _mm256_extracti128_si256(bsums, 1));
}

// Q6_K's offset of 32, taken off once per block instead of from every pair of values: -32 times
// each of the block's 16 scales (widened to int16; within -4096..4096), then per token
// q6KOffsetLanes with the token's 16 sums of 16 (BlockQ8_K::bsums). The 6-bit values (0..63) stay
// unsigned for maddubs, and every Q6_K kernel (the WebGPU ones too: q6k_offset) adds the same 8
// int32 lanes (lane i: -32 * (s[2i] * bsums[2i] + s[2i + 1] * bsums[2i + 1])) to its sums of
// scale * value * y, so every tier, token count and backend keeps the same bits.
static inline __m256i q6KNegScales32(__m256i scales16) {
  return _mm256_slli_epi16(_mm256_sub_epi16(_mm256_setzero_si256(), scales16), 5);
}
static inline __m256i q6KOffsetLanes(__m256i negScales32, __m256i bsums) { return _mm256_madd_epi16(negScales32, bsums); }

// The mins term taken off, the mins already widened (the high 8 bytes of scalesMinsK4's result),
// the block's sums of 32 (sumsOf32) and the scale y.d * dmin in every lane: -(scale * (mins .
// sums)) + acc, fused (the same bits as the FMA of the negated scale).
static inline __m128 minsTermNeg(__m128i mins16, __m128i sums32, __m128 scale, __m128 acc) {
  return _mm_fnmadd_ps(scale, _mm_cvtepi32_ps(_mm_madd_epi16(mins16, sums32)), acc);
}

// sum_j(min_j * sum(y_j)) of one Q4_K or Q5_K block as an exact integer, the mins widened to
// int16, from the block's sums of 32 (sumsOf32).
static inline int32_t minsSum(__m128i mins, __m128i sums32) {
  __m128i p = _mm_madd_epi16(mins, sums32);
  p = _mm_add_epi32(p, _mm_shuffle_epi32(p, 0x4e));
  p = _mm_add_epi32(p, _mm_shuffle_epi32(p, 0xb1));
  return _mm_cvtsi128_si32(p);
}
static inline __m256 loadF32(const float* p) { return _mm256_loadu_ps(p); }
static inline __m256 loadF16(const fp16_t* p) { return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))); }
static inline __m256 loadBf16(const bf16_t* p) {
  const __m256i wide = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  return _mm256_castsi256_ps(_mm256_slli_epi32(wide, 16));
}

// Eight 32-bit sums of four byte products each (values 4l..4l+3 in lane l). maddubs multiplies
// unsigned by signed bytes, so x's signs move onto y: |x| <= 127 (or -128 read as 128) keeps every
// pair sum within int16. absX = |x|, computed once per weight row by callers that reuse it.
static inline __m256i quadSumsI8(__m256i absX, __m256i x, __m256i y) {
  return _mm256_madd_epi16(_mm256_maddubs_epi16(absX, _mm256_sign_epi8(y, x)), _mm256_set1_epi16(1));
}

// unpackScalesMinsK4 (quants.h) in registers: the 8 scales in bytes 0-7, the 8 mins in 8-15. Reads
// 16 bytes from `packed` (the 12 packed bytes and 4 of what follows them in the block).
static inline __m128i scalesMinsK4(const uint8_t* packed) {
  const __m128i w = _mm_loadu_si128(reinterpret_cast<const __m128i*>(packed));
  // Lanes 0 and 2: w0 and w1 & 0x3f; lanes 1 and 3: the low and high nibbles of w2, with the top
  // 2 bits of w0 and w1 as bits 4-5.
  const __m128i low = _mm_and_si128(_mm_srlv_epi32(_mm_shuffle_epi32(w, _MM_SHUFFLE(2, 1, 2, 0)), _mm_setr_epi32(0, 0, 0, 4)),
                                    _mm_setr_epi32(0x3f3f3f3f, 0x0f0f0f0f, 0x3f3f3f3f, 0x0f0f0f0f));
  const __m128i high = _mm_and_si128(_mm_srli_epi32(_mm_shuffle_epi32(w, _MM_SHUFFLE(1, 1, 0, 0)), 2),
                                     _mm_setr_epi32(0, 0x30303030, 0, 0x30303030));
  return _mm_or_si128(low, high);
}

// The 32 low nibbles of 16 bytes, then the 32 high nibbles: Q4_0's element order.
static inline __m256i nibbles(const uint8_t* p) {
  const __m128i bytes = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
  const __m256i both = _mm256_set_m128i(_mm_srli_epi16(bytes, 4), bytes);
  return _mm256_and_si256(both, _mm256_set1_epi8(0x0f));
}

}  // namespace simd
}  // namespace kiln

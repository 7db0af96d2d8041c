// AVX2 tiles of dot products for matrix products: R weight rows x T activation rows per inner
// loop, so each weight block is loaded and unpacked once for T tokens and each activation block
// once for R rows (llama.cpp's tinyBLAS does the same). Every entry is computed as vecDot computes
// it (for Q8_0 the same bits: eight lanes of four-product sums, one FMA per block, ggml's final
// sum), only many at once. Compiled with -mavx2 -mfma -mf16c.
#include "simd-avx2.h"

#include <algorithm>
#include <vector>


#include "mat-mul-int-tiles.h"
#include "mat-mul-tiles.h"
#include "mat-mul.h"
#include "quants.h"

namespace kiln {

using namespace simd;

namespace {

// maddubs multiplies unsigned by signed bytes (x's signs moved onto y), int16 pair sums, madd to int32.
struct MaddubsSums {
  static __m256i quads(__m256i absX, __m256i x, __m256i y) { return quadSumsI8(absX, x, y); }
  // A packed Q4_0 block's 8 pieces per row summed in int16 (|sum| <= 16 * 15 * 127), then widened.
  static __m256i piece(__m256i acc, __m256i lo, __m256i hi, int32_t qLo, int32_t qHi) {
    return _mm256_add_epi16(acc, _mm256_add_epi16(_mm256_maddubs_epi16(lo, _mm256_set1_epi32(qLo)),
                                                  _mm256_maddubs_epi16(hi, _mm256_set1_epi32(qHi))));
  }
  static __m256i finish(__m256i acc, int32_t sum8) {
    return _mm256_sub_epi32(_mm256_madd_epi16(acc, _mm256_set1_epi16(1)), _mm256_set1_epi32(sum8));
  }
};

template <int R, int T>
using TileQ8_0 = Q8Tile<MaddubsSums>::Kernel<R, T>;
template <int R, int T>
using TileQ8_0Stream = Q8Tile<MaddubsSums, true>::Kernel<R, T>;

// One token against 8 Q8_0 rows (decode): 8 weight streams in flight, each prefetched at the same
// place in the next 8 rows, and the rows' scale products from one 8-wide multiply per block. Each
// row's lanes and FMAs are those of vecDotQ8_0_avx2, so the bits are too.
void q8_0EightRows(const TileArgs& a) {
  __m256 acc[8];
  for (int r = 0; r < 8; r++) acc[r] = _mm256_setzero_ps();
  const BlockQ8_0* y = reinterpret_cast<const BlockQ8_0*>(a.y);
  for (int64_t b = 0; b < a.n / QK8_0; b++) {
    uint64_t lo = 0, hi = 0;
    for (int r = 0; r < 4; r++) {
      lo |= (uint64_t)reinterpret_cast<const BlockQ8_0*>(a.x + r * a.xStride)[b].d << (16 * r);
      hi |= (uint64_t)reinterpret_cast<const BlockQ8_0*>(a.x + (r + 4) * a.xStride)[b].d << (16 * r);
    }
    const __m256 d = _mm256_mul_ps(_mm256_cvtph_ps(_mm_set_epi64x((long long)hi, (long long)lo)), _mm256_set1_ps(fp16(y[b].d)));
    const __m256i qy = load32(y[b].qs);
    for (int r = 0; r < 8; r++) {
      const BlockQ8_0& xb = reinterpret_cast<const BlockQ8_0*>(a.x + r * a.xStride)[b];
      _mm_prefetch(reinterpret_cast<const char*>(&xb) + 8 * a.xStride, _MM_HINT_T0);
      const __m256i qx = load32(xb.qs);
      const __m256 dr = _mm256_permutevar8x32_ps(d, _mm256_set1_epi32(r));
      acc[r] = _mm256_fmadd_ps(dr, _mm256_cvtepi32_ps(quadSumsI8(_mm256_sign_epi8(qx, qx), qx, qy)), acc[r]);
    }
  }
  for (int r = 0; r < 8; r++) a.s[r] = hsum(acc[r]);
}

// Q8_0 prefill in 16-bit halves. A block's 32 bytes widen to two vectors of 16 int16, its even
// bytes (E) and its odd ones (O); vpmaddwd of a row's E and O with a token's gives, in 32-bit lane
// l, x * y over bytes 4l and 4l + 2, and over 4l + 1 and 4l + 3, whose sum is quadSumsI8's lane l
// exactly. Both sides are widened once, outside the tile: a group of tokens once per chunk of rows,
// a tile's rows once per group of tokens. A pair and block then costs two multiplies, an add, a
// conversion and the FMA, where the byte tile (Q8Tile) also moves x's signs onto y and folds byte
// pairs to int32 (five operations on the two vector multiply ports instead of four; tinyBLAS spends
// the five too). Everything after the integers is Q8Tile's, so the bits are vecDotQ8_0_avx2's.
namespace halves {

// Rows per tile and tokens per tile: 12 accumulators, a token's two halves and two temporaries in
// the 16 registers (GFLOP/s of 512x2048 -> 5632 on 2 threads, against the byte tile's 124: 3x4 130,
// 4x3 135). A group of tokens takes at most kGroupBytes of halves (64 bytes a block), which stay in
// L2 while the rows of a chunk pass over them: 64 tokens of a 2048-wide row, 23 of a 5632-wide one.
constexpr int kRows = 4, kTokens = 3;
constexpr int64_t kGroupBytes = 256 * 1024, kMinGroup = 8, kMaxGroup = 64;

static inline void widen(const BlockQ8_0& b, __m256i* out) {
  const __m256i v = load32(b.qs);
  out[0] = _mm256_srai_epi16(_mm256_slli_epi16(v, 8), 8);
  out[1] = _mm256_srai_epi16(v, 8);
}

// R rows of the tile (kRows-strided halves: block b, row r at xh[(b * kRows + r) * 2]; the rows'
// scales 4 floats a block) against T tokens (token t, block b at yh[(t * nb + b) * 2]; scales yd).
template <int R, int T>
void tile(int64_t nb, const __m256i* xh, const float* xd, const __m256i* yh, const float* yd, float* s, int64_t ldS) {
  __m256 acc[R][T];
  for (int r = 0; r < R; r++)
    for (int t = 0; t < T; t++) acc[r][t] = _mm256_setzero_ps();
  for (int64_t b = 0; b < nb; b++) {
    const __m256i* xb = xh + b * kRows * 2;
    const __m128 dx = _mm_loadu_ps(xd + 4 * b);
    for (int t = 0; t < T; t++) {
      const __m256i* yb = yh + (t * nb + b) * 2;
      const __m256i ye = _mm256_load_si256(yb), yo = _mm256_load_si256(yb + 1);
      // The pairs' scale products through memory: each row's is then a broadcast load, not a shuffle.
      alignas(16) float d[4];
      _mm_store_ps(d, _mm_mul_ps(dx, _mm_set1_ps(yd[t * nb + b])));
      for (int r = 0; r < R; r++) {
        const __m256i sum = _mm256_add_epi32(_mm256_madd_epi16(ye, _mm256_load_si256(xb + 2 * r)),
                                             _mm256_madd_epi16(yo, _mm256_load_si256(xb + 2 * r + 1)));
        acc[r][t] = _mm256_fmadd_ps(_mm256_broadcast_ss(d + r), _mm256_cvtepi32_ps(sum), acc[r][t]);
      }
    }
  }
  for (int r = 0; r < R; r++)
    for (int t = 0; t < T; t++) s[t * ldS + r] = hsum(acc[r][t]);
}

// R rows against the group's tc tokens: kTokens at a time, then one by one.
template <int R>
void rowTile(int64_t nb, int64_t tc, const __m256i* xh, const float* xd, const __m256i* yh, const float* yd, float* s, int64_t ldS) {
  int64_t t = 0;
  for (; t + kTokens <= tc; t += kTokens) tile<R, kTokens>(nb, xh, xd, yh + t * nb * 2, yd + t * nb, s + t * ldS, ldS);
  for (; t < tc; t++) tile<R, 1>(nb, xh, xd, yh + t * nb * 2, yd + t * nb, s + t * ldS, ldS);
}

void product(const TileArgs& a, int64_t nr, int64_t nt) {
  const int64_t nb = a.n / QK8_0;
  const int64_t group = std::clamp<int64_t>(kGroupBytes / (nb * 64), kMinGroup, kMaxGroup);
  thread_local std::vector<__m256i> yh, xh;
  thread_local std::vector<float> yd, xd;
  if (yh.size() < (size_t)(group * nb * 2)) yh.resize((size_t)(group * nb * 2));
  if (yd.size() < (size_t)(group * nb)) yd.resize((size_t)(group * nb));
  if (xh.size() < (size_t)(kRows * nb * 2)) xh.resize((size_t)(kRows * nb * 2));
  if (xd.size() < (size_t)(4 * nb)) xd.resize((size_t)(4 * nb));
  for (int64_t t0 = 0; t0 < nt; t0 += group) {
    const int64_t tc = std::min<int64_t>(group, nt - t0);
    for (int64_t t = 0; t < tc; t++) {
      const BlockQ8_0* y = reinterpret_cast<const BlockQ8_0*>(a.y + (t0 + t) * a.yStride);
      for (int64_t b = 0; b < nb; b++) {
        widen(y[b], &yh[(t * nb + b) * 2]);
        yd[t * nb + b] = fp16(y[b].d);
      }
    }
    for (int64_t r0 = 0; r0 < nr; r0 += kRows) {
      const int rc = (int)std::min<int64_t>(kRows, nr - r0);
      for (int r = 0; r < rc; r++) {
        const BlockQ8_0* x = reinterpret_cast<const BlockQ8_0*>(a.x + (r0 + r) * a.xStride);
        for (int64_t b = 0; b < nb; b++) {
          widen(x[b], &xh[(b * kRows + r) * 2]);
          xd[4 * b + r] = fp16(x[b].d);
        }
      }
      float* s = a.s + t0 * a.ldS + r0;
      if (rc == 4) rowTile<4>(nb, tc, xh.data(), xd.data(), yh.data(), yd.data(), s, a.ldS);
      else if (rc == 3) rowTile<3>(nb, tc, xh.data(), xd.data(), yh.data(), yd.data(), s, a.ldS);
      else if (rc == 2) rowTile<2>(nb, tc, xh.data(), xd.data(), yh.data(), yd.data(), s, a.ldS);
      else rowTile<1>(nb, tc, xh.data(), xd.data(), yh.data(), yd.data(), s, a.ldS);
    }
  }
}

}  // namespace halves

// Eight float lanes, summed at the end in ggml's order (FloatTile's L).
struct Lanes8 {
  using V = __m256;
  static constexpr int kWidth = 8;
  static V zero() { return _mm256_setzero_ps(); }
  static V fmadd(V a, V b, V c) { return _mm256_fmadd_ps(a, b, c); }
  static void store(float* p, V v) { _mm256_storeu_ps(p, v); }
  static float hsum(V v) { return simd::hsum(v); }
};

// Element access of a float type: E, load(const E*) -> 8 floats (Lanes8::V), scalar(E) -> float. (A struct, not
// function-pointer template arguments, which would drop __m256's vector attributes.)
struct F32Elements {
  using E = float;
  static __m256 load(const E* p) { return loadF32(p); }
  static float scalar(E v) { return v; }
};
struct F16Elements {
  using E = fp16_t;
  static __m256 load(const E* p) { return loadF16(p); }
  static float scalar(E v) { return fp16(v); }
};
struct BF16Elements {
  using E = bf16_t;
  static __m256 load(const E* p) { return loadBf16(p); }
  static float scalar(E v) { return bf16(v); }
};

template <int R, int T>
using TileF32 = FloatTile<Lanes8, F32Elements, F32Elements>::Kernel<R, T>;
template <int R, int T>
using TileF16 = FloatTile<Lanes8, F16Elements, F16Elements>::Kernel<R, T>;
template <int R, int T>
using TileBF16 = FloatTile<Lanes8, BF16Elements, BF16Elements>::Kernel<R, T>;
// BF16 weights against activations already widened to float (exactly: every bf16 is a float),
// which takes the activations' conversions (two operations each) out of the inner loop.
template <int R, int T>
using TileBF16Wide = FloatTile<Lanes8, BF16Elements, F32Elements>::Kernel<R, T>;

// Tile shapes, measured on one thread of a 512-token product (GFLOP/s): Q8_0 3x4 78, 3x3 77,
// 2x4 74, 4x2 71 (4 rows spill accumulators to the stack); widened halves 3x4 79, 2x6 72, 4x3 63.
constexpr int kQ8Rows = 3, kQ8Tokens = 4;
// BF16 activations widened: one tile of tokens at a time, whose rows then stay in L1 while the
// weights stream; decode reads the halves in 4x3 tiles.
constexpr int kWideRows = 3, kWideTokens = 4;

// F16 weights and activations, both read as halves in every tile (so every token count gives the
// same bits): 4 rows at a time below 4 tokens (decode streams 4 rows), 3 rows x 4 tokens from
// there. Widening 4 tokens' activations to float first (as BF16 does, and the AVX-512 path) was
// slower for F16, whose conversion is one instruction: on Zen 5, 2 threads of 512x2048 -> 5632,
// 112-128 -> 200-205 GFLOP/s (BF16 read this way went 185 -> 161, so it keeps the widening).
void f16Product(const TileArgs& a, int64_t nr, int64_t nt) {
  if (nt < 4) tiles<TileF16, 4, 3>(a, nr, nt);
  else tiles<TileF16, 3, 4>(a, nr, nt);
}

}  // namespace

void gemmQ4_0x8_avx2(int64_t nb, int64_t nGroups, int64_t nt, float* s, int64_t ldS, const BlockQ4_0x8* x,
                     const BlockQ8_0* y, const Q8BlockSums* sums) {
  gemmQ4_0x8<MaddubsSums>(nb, nGroups, nt, s, ldS, x, y, sums);
}

void vecDotManyQ8_0_avx2(int64_t n, int64_t nr, int64_t nt, float* s, int64_t ldS, const void* x, size_t xStride,
                         const void* y, size_t yStride) {
  const TileArgs a{n, s, ldS, static_cast<const char*>(x), xStride, static_cast<const char*>(y), yStride};
  if (nt == 1) {
    int64_t r = 0;
    for (; r + 8 <= nr; r += 8) q8_0EightRows({n, s + r, ldS, a.x + r * xStride, xStride, a.y, yStride});
    if (r < nr) tiles<TileQ8_0, kQ8Rows, kQ8Tokens>({n, s + r, ldS, a.x + r * xStride, xStride, a.y, yStride}, nr - r, 1);
    return;
  }
  // A continuous-batching step of a few tokens reads each weight once, from memory.
  if (nt <= 8) tiles<TileQ8_0Stream, kQ8Rows, kQ8Tokens>(a, nr, nt);
  else halves::product(a, nr, nt);
}

void vecDotManyF32_avx2(int64_t n, int64_t nr, int64_t nt, float* s, int64_t ldS, const void* x, size_t xStride,
                        const void* y, size_t yStride) {
  tiles<TileF32, 4, 3>({n, s, ldS, static_cast<const char*>(x), xStride, static_cast<const char*>(y), yStride}, nr, nt);
}

void vecDotManyF16_avx2(int64_t n, int64_t nr, int64_t nt, float* s, int64_t ldS, const void* x, size_t xStride,
                        const void* y, size_t yStride) {
  f16Product({n, s, ldS, static_cast<const char*>(x), xStride, static_cast<const char*>(y), yStride}, nr, nt);
}

void vecDotManyBF16_avx2(int64_t n, int64_t nr, int64_t nt, float* s, int64_t ldS, const void* x, size_t xStride,
                         const void* y, size_t yStride) {
  halfTiles<Lanes8, BF16Elements, TileBF16, 4, 3, TileBF16Wide, kWideRows, kWideTokens>(
      {n, s, ldS, static_cast<const char*>(x), xStride, static_cast<const char*>(y), yStride}, nr, nt);
}

}  // namespace kiln

// AVX2 tiles of dot products for matrix products: R weight rows x T activation rows per inner
// loop, so each weight block is loaded and unpacked once for T tokens and each activation block
// once for R rows (llama.cpp's tinyBLAS does the same). Every entry is computed as vecDot computes
// it (for Q8_0 the same bits: eight lanes of four-product sums, one FMA per block, ggml's final
// sum), only many at once. Compiled with -mavx2 -mfma -mf16c.
#include "simd-avx2.h"


#include "mat-mul-tiles.h"
#include "mat-mul.h"
#include "quants.h"

namespace kiln {

using namespace simd;

namespace {

// Q8_0 weights x Q8_0 activations, as vecDotQ8_0_avx2. Per pair and block the integer work is
// sign, maddubs, madd and a conversion, then one FMA with the scales' product. The products come
// from one multiply per token and block (the R row scales side by side times the token's), each
// row's taken out with a shuffle, which runs on another port than the arithmetic (as tinyBLAS).
template <int R, int T>
struct TileQ8_0 {
  static_assert(R <= 4, "row scales share one 128-bit vector");
  static void run(const TileArgs& a) {
    __m256 acc[R][T];
    for (int r = 0; r < R; r++)
      for (int t = 0; t < T; t++) acc[r][t] = _mm256_setzero_ps();
    for (int64_t b = 0; b < a.n / QK8_0; b++) {
      __m256i qx[R], ax[R];
      uint64_t dxh = 0;  // the row scales side by side (built in a register: narrow stores read back wide would stall)
      for (int r = 0; r < R; r++) {
        const BlockQ8_0& xb = reinterpret_cast<const BlockQ8_0*>(a.x + r * a.xStride)[b];
        if (T == 1) _mm_prefetch(reinterpret_cast<const char*>(&xb) + kPrefetchBytes, _MM_HINT_T0);
        qx[r] = load32(xb.qs);
        ax[r] = _mm256_sign_epi8(qx[r], qx[r]);
        dxh |= (uint64_t)xb.d << (16 * r);
      }
      const __m128 dx = _mm_cvtph_ps(_mm_cvtsi64_si128((long long)dxh));
      for (int t = 0; t < T; t++) {
        const BlockQ8_0& yb = reinterpret_cast<const BlockQ8_0*>(a.y + t * a.yStride)[b];
        const __m256i qy = load32(yb.qs);
        const __m128 d4 = _mm_mul_ps(dx, _mm_set1_ps(fp16(yb.d)));
        const __m256 d = _mm256_set_m128(d4, d4);
        for (int r = 0; r < R; r++) {
          const __m256 dr = r == 0 ? _mm256_permute_ps(d, 0x00) : r == 1 ? _mm256_permute_ps(d, 0x55)
                          : r == 2 ? _mm256_permute_ps(d, 0xaa) : _mm256_permute_ps(d, 0xff);
          acc[r][t] = _mm256_fmadd_ps(dr, _mm256_cvtepi32_ps(quadSumsI8(ax[r], qx[r], qy)), acc[r][t]);
        }
      }
    }
    for (int r = 0; r < R; r++)
      for (int t = 0; t < T; t++) a.s[t * a.ldS + r] = hsum(acc[r][t]);
  }
};

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
// Half-precision weights against activations already widened to float (exactly: every half is a
// float), which takes the activations' conversions out of the inner loop.
template <int R, int T>
using TileF16Wide = FloatTile<Lanes8, F16Elements, F32Elements>::Kernel<R, T>;
template <int R, int T>
using TileBF16Wide = FloatTile<Lanes8, BF16Elements, F32Elements>::Kernel<R, T>;

// Tile shapes, measured on one thread of a 512-token product (GFLOP/s): Q8_0 3x4 78, 3x3 77,
// 2x4 74, 4x2 71 (4 rows spill accumulators to the stack); widened F16 3x4 79, 2x6 72, 4x3 63.
constexpr int kQ8Rows = 3, kQ8Tokens = 4;
// Widened activations: one tile of tokens at a time, whose rows then stay in L1 while the weights
// stream; decode reads the halves in 4x3 tiles.
constexpr int kWideRows = 3, kWideTokens = 4;


// T tokens against one group of 8 packed Q4_0 rows. Per block the rows' unsigned nibbles are
// unpacked once; per token, each 4-byte piece of its Q8_0 block is broadcast and multiplied with the
// matching 4 values of all 8 rows (maddubs), 8 pieces summed in int16 (|sum| <= 16 * 15 * 127),
// widened to one int32 per row, less 8 * sum(y) for the nibbles' offset of 8.
template <int T>
void q4_0x8Tile(int64_t nb, const BlockQ4_0x8* x, const BlockQ8_0* y, const Q8BlockSums* sums, float* s, int64_t ldS) {
  const __m256i low4 = _mm256_set1_epi8(0x0f);
  const __m256i ones = _mm256_set1_epi16(1);
  __m256 acc[T];
  for (int t = 0; t < T; t++) acc[t] = _mm256_setzero_ps();
  for (int64_t b = 0; b < nb; b++) {
    const BlockQ4_0x8& xb = x[b];
    if (T == 1) _mm_prefetch(reinterpret_cast<const char*>(&xb) + kPackedPrefetchBytes, _MM_HINT_T0);
    __m256i lo[4], hi[4];
    for (int c = 0; c < 4; c++) {
      const __m256i v = load32(xb.qs + 32 * c);
      lo[c] = _mm256_and_si256(v, low4);
      hi[c] = _mm256_and_si256(_mm256_srli_epi16(v, 4), low4);
    }
    const __m256 dx = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(xb.d)));
    for (int t = 0; t < T; t++) {
      const BlockQ8_0& yb = y[t * nb + b];
      int32_t q[8];
      __builtin_memcpy(q, yb.qs, sizeof q);
      __m256i p = _mm256_maddubs_epi16(lo[0], _mm256_set1_epi32(q[0]));
      p = _mm256_add_epi16(p, _mm256_maddubs_epi16(hi[0], _mm256_set1_epi32(q[4])));
      for (int c = 1; c < 4; c++) {
        p = _mm256_add_epi16(p, _mm256_maddubs_epi16(lo[c], _mm256_set1_epi32(q[c])));
        p = _mm256_add_epi16(p, _mm256_maddubs_epi16(hi[c], _mm256_set1_epi32(q[4 + c])));
      }
      const Q8BlockSums& ys = sums[t * nb + b];
      const __m256i isum = _mm256_sub_epi32(_mm256_madd_epi16(p, ones), _mm256_set1_epi32(ys.sum8));
      acc[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum), _mm256_mul_ps(dx, _mm256_set1_ps(ys.d)), acc[t]);
    }
  }
  for (int t = 0; t < T; t++) _mm256_storeu_ps(s + t * ldS, acc[t]);
}

}  // namespace

void gemmQ4_0x8_avx2(int64_t nb, int64_t nGroups, int64_t nt, float* s, int64_t ldS, const BlockQ4_0x8* x,
                     const BlockQ8_0* y, const Q8BlockSums* sums) {
  constexpr int T = 4;
  for (int64_t g = 0; g < nGroups; g++) {
    const BlockQ4_0x8* xg = x + g * nb;
    float* sg = s + 8 * g;
    int64_t t = 0;
    for (; t + T <= nt; t += T) q4_0x8Tile<T>(nb, xg, y + t * nb, sums + t * nb, sg + t * ldS, ldS);
    switch (nt - t) {
      case 3: q4_0x8Tile<3>(nb, xg, y + t * nb, sums + t * nb, sg + t * ldS, ldS); break;
      case 2: q4_0x8Tile<2>(nb, xg, y + t * nb, sums + t * nb, sg + t * ldS, ldS); break;
      case 1: q4_0x8Tile<1>(nb, xg, y + t * nb, sums + t * nb, sg + t * ldS, ldS); break;
      default: break;
    }
  }
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
  tiles<TileQ8_0, kQ8Rows, kQ8Tokens>(a, nr, nt);
}

void vecDotManyF32_avx2(int64_t n, int64_t nr, int64_t nt, float* s, int64_t ldS, const void* x, size_t xStride,
                        const void* y, size_t yStride) {
  tiles<TileF32, 4, 3>({n, s, ldS, static_cast<const char*>(x), xStride, static_cast<const char*>(y), yStride}, nr, nt);
}

void vecDotManyF16_avx2(int64_t n, int64_t nr, int64_t nt, float* s, int64_t ldS, const void* x, size_t xStride,
                        const void* y, size_t yStride) {
  halfTiles<Lanes8, F16Elements, TileF16, 4, 3, TileF16Wide, kWideRows, kWideTokens>(
      {n, s, ldS, static_cast<const char*>(x), xStride, static_cast<const char*>(y), yStride}, nr, nt);
}

void vecDotManyBF16_avx2(int64_t n, int64_t nr, int64_t nt, float* s, int64_t ldS, const void* x, size_t xStride,
                         const void* y, size_t yStride) {
  halfTiles<Lanes8, BF16Elements, TileBF16, 4, 3, TileBF16Wide, kWideRows, kWideTokens>(
      {n, s, ldS, static_cast<const char*>(x), xStride, static_cast<const char*>(y), yStride}, nr, nt);
}

}  // namespace kiln

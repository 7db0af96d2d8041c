// AVX-512 tiles for matrix products, used where the CPU has AVX-512 F/BW/VL and VNNI (Ice Lake,
// Sapphire Rapids, Zen 4 and later); the AVX2 tiles (mat-mul-avx2.cpp) run everywhere else.
// - Q8_0 and packed Q4_0 keep the bits of their AVX2 kernels (and so of vecDotQ8_0/Q4_0_generic
//   and llama.cpp's x86 order): VNNI's vpdpbusd gives the same exact integer sums as maddubs,
//   int16 adds and madd in one instruction, and every float FMA stays per block, in block order.
// - F16 uses 16-wide lanes: another float order than the AVX2 kernel (within the best-vs-generic
//   tolerance), the same for every token count, so prefill and decode agree bit for bit.
// Compiled with -mavx512f -mavx512bw -mavx512vl -mavx512vnni (and AVX2/FMA/F16C).
#include <immintrin.h>


#include "mat-mul-tiles.h"
#include "mat-mul.h"
#include "quants.h"
#include "simd-avx2.h"

namespace kiln {

using namespace simd;

namespace {

// The upper 8 floats (AVX-512 F only; _mm512_extractf32x8_ps would need DQ).
static inline __m256 high8(__m512 v) { return _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1)); }

// Sum of 16 floats: the two 8-lane halves added, then ggml's 8-lane order.
static inline float hsum16(__m512 v) {
  return hsum(_mm256_add_ps(_mm512_castps512_ps256(v), high8(v)));
}

// Q8_0 x Q8_0 as TileQ8_0 in mat-mul-avx2.cpp, with vpdpbusd giving each lane's four-product sum
// in one instruction instead of maddubs + madd: the same exact integers, the same FMAs. (A
// 512-bit version, two blocks per product with the weights made unsigned, measured slower here:
// 512-bit operations close a vector port, and the per-block FMAs stay 256-bit for the order.)
template <int R, int T>
struct TileQ8_0 {
  static_assert(R <= 4, "row scales share one 128-bit vector");
  static void run(const TileArgs& a) {
    __m256 acc[R][T];
    for (int r = 0; r < R; r++)
      for (int t = 0; t < T; t++) acc[r][t] = _mm256_setzero_ps();
    for (int64_t b = 0; b < a.n / QK8_0; b++) {
      __m256i qx[R], ax[R];
      uint64_t dxh = 0;
      for (int r = 0; r < R; r++) {
        const BlockQ8_0& xb = reinterpret_cast<const BlockQ8_0*>(a.x + r * a.xStride)[b];
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
          const __m256i p = _mm256_dpbusd_epi32(_mm256_setzero_si256(), ax[r], _mm256_sign_epi8(qy, qx[r]));
          acc[r][t] = _mm256_fmadd_ps(dr, _mm256_cvtepi32_ps(p), acc[r][t]);
        }
      }
    }
    for (int r = 0; r < R; r++)
      for (int t = 0; t < T; t++) a.s[t * a.ldS + r] = hsum(acc[r][t]);
  }
};

// Tile shape, one thread of a 512x2048 -> 5632 product (GFLOP/s, the AVX2 3x4 tile 76): 4x4 91,
// 3x4 90, 4x3 88.
constexpr int kQ8Rows = 4, kQ8Tokens = 4;

// Sixteen float lanes, summed as hsum16 (FloatTile's L).
struct Lanes16 {
  using V = __m512;
  static constexpr int kWidth = 16;
  static V zero() { return _mm512_setzero_ps(); }
  static V fmadd(V a, V b, V c) { return _mm512_fmadd_ps(a, b, c); }
  static void store(float* p, V v) { _mm512_storeu_ps(p, v); }
  static float hsum(V v) { return hsum16(v); }
};

// Element access of 16 values at a time.
struct F32x16 {
  using E = float;
  static __m512 load(const E* p) { return _mm512_loadu_ps(p); }
  static float scalar(E v) { return v; }
};
struct F16x16 {
  using E = fp16_t;
  static __m512 load(const E* p) { return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p))); }
  static float scalar(E v) { return fp16(v); }
};

template <int R, int T>
using TileF16 = FloatTile<Lanes16, F16x16, F16x16>::Kernel<R, T>;
template <int R, int T>
using TileF16Wide = FloatTile<Lanes16, F16x16, F32x16>::Kernel<R, T>;

// 8 rows x 3 tokens: 24 accumulators, 8 rows and one token in the 32 registers. One thread of a
// 512x2048 -> 5632 product (GFLOP/s, the AVX2 3x4 tile 74): 8x3 83, 4x4 80, 4x6 77, 6x4 75.
constexpr int kWideRows = 8, kWideTokens = 3;


// T tokens against one group of 8 packed Q4_0 rows, as q4_0x8Tile in mat-mul-avx2.cpp, with the
// 16 byte products per row and block summed by vpdpbusd (two chains, from -8 * sum(y)) instead of
// maddubs, int16 adds and madd: the same exact integer per row, then the same FMA.
template <int T>
void q4_0x8Tile(int64_t nb, const BlockQ4_0x8* x, const BlockQ8_0* y, const Q8BlockSums* sums, float* s, int64_t ldS) {
  const __m256i low4 = _mm256_set1_epi8(0x0f);
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
      const Q8BlockSums& ys = sums[t * nb + b];
      int32_t q[8];
      __builtin_memcpy(q, yb.qs, sizeof q);
      __m256i p0 = _mm256_set1_epi32(-ys.sum8), p1 = _mm256_setzero_si256();
      for (int c = 0; c < 4; c++) {
        p0 = _mm256_dpbusd_epi32(p0, lo[c], _mm256_set1_epi32(q[c]));
        p1 = _mm256_dpbusd_epi32(p1, hi[c], _mm256_set1_epi32(q[4 + c]));
      }
      const __m256i isum = _mm256_add_epi32(p0, p1);
      acc[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum), _mm256_mul_ps(dx, _mm256_set1_ps(ys.d)), acc[t]);
    }
  }
  for (int t = 0; t < T; t++) _mm256_storeu_ps(s + t * ldS, acc[t]);
}

}  // namespace

void gemmQ4_0x8_avx512(int64_t nb, int64_t nGroups, int64_t nt, float* s, int64_t ldS, const BlockQ4_0x8* x,
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

void vecDotManyQ8_0_avx512(int64_t n, int64_t nr, int64_t nt, float* s, int64_t ldS, const void* x, size_t xStride,
                           const void* y, size_t yStride) {
  // Decode keeps the AVX2 kernel's 8 weight streams (same bits): memory, not arithmetic, bounds it.
  if (nt == 1) return vecDotManyQ8_0_avx2(n, nr, nt, s, ldS, x, xStride, y, yStride);
  tiles<TileQ8_0, kQ8Rows, kQ8Tokens>({n, s, ldS, static_cast<const char*>(x), xStride, static_cast<const char*>(y), yStride}, nr, nt);
}

void vecDotManyF16_avx512(int64_t n, int64_t nr, int64_t nt, float* s, int64_t ldS, const void* x, size_t xStride,
                          const void* y, size_t yStride) {
  halfTiles<Lanes16, F16x16, TileF16, 4, 1, TileF16Wide, kWideRows, kWideTokens>(
      {n, s, ldS, static_cast<const char*>(x), xStride, static_cast<const char*>(y), yStride}, nr, nt);
}

}  // namespace kiln

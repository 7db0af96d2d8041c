// AVX-512 tiles for matrix products, used where the CPU has AVX-512 F/BW/VL and VNNI (Ice Lake,
// Sapphire Rapids, Zen 4 and later); the AVX2 tiles (mat-mul-avx2.cpp) run everywhere else.
// - Q8_0 and packed Q4_0 keep the bits of their AVX2 kernels (and so of vecDotQ8_0/Q4_0_generic
//   and llama.cpp's x86 order): VNNI's vpdpbusd gives the same exact integer sums as maddubs,
//   int16 adds and madd in one instruction, and every float FMA stays per block, in block order.
// - F16 uses 16-wide lanes: another float order than the AVX2 kernel (within the best-vs-generic
//   tolerance), the same for every token count, so prefill and decode agree bit for bit.
// Compiled with -mavx512f -mavx512bw -mavx512vl -mavx512vnni (and AVX2/FMA/F16C).
#include <immintrin.h>

#include "mat-mul-int-tiles.h"
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

// vpdpbusd sums four unsigned-by-signed byte products per lane in one instruction, exactly: for
// Q8_0 on |x| and y with x's signs (as maddubs + madd), for Q4_0's nibbles in two chains from
// -8 * sum(y) (as maddubs, int16 adds and madd). (A 512-bit Q8_0 version, two blocks per product
// with the weights made unsigned, measured slower here: 512-bit operations close a vector port,
// and the per-block FMAs stay 256-bit for the order.)
struct VnniSums {
  static __m256i quads(__m256i absX, __m256i x, __m256i y) {
    return _mm256_dpbusd_epi32(_mm256_setzero_si256(), absX, _mm256_sign_epi8(y, x));
  }
  static __m256i rows(const __m256i* lo, const __m256i* hi, const int32_t* q, int32_t sum8) {
    __m256i p0 = _mm256_set1_epi32(-sum8), p1 = _mm256_setzero_si256();
    for (int c = 0; c < 4; c++) {
      p0 = _mm256_dpbusd_epi32(p0, lo[c], _mm256_set1_epi32(q[c]));
      p1 = _mm256_dpbusd_epi32(p1, hi[c], _mm256_set1_epi32(q[4 + c]));
    }
    return _mm256_add_epi32(p0, p1);
  }
};

template <int R, int T>
using TileQ8_0 = Q8Tile<VnniSums>::Kernel<R, T>;

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


}  // namespace

void gemmQ4_0x8_avx512(int64_t nb, int64_t nGroups, int64_t nt, float* s, int64_t ldS, const BlockQ4_0x8* x,
                       const BlockQ8_0* y, const Q8BlockSums* sums) {
  gemmQ4_0x8<VnniSums>(nb, nGroups, nt, s, ldS, x, y, sums);
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

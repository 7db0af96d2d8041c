// AVX2 tiles of dot products for matrix products: R weight rows x T activation rows per inner
// loop, so each weight block is loaded and unpacked once for T tokens and each activation block
// once for R rows (llama.cpp's tinyBLAS does the same). Every entry is computed as vecDot computes
// it (for Q8_0 the same bits: eight lanes of four-product sums, one FMA per block, ggml's final
// sum), only many at once. Compiled with -mavx2 -mfma -mf16c.
#include "simd-avx2.h"

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
using TileQ8_0Stream = Q8Tile<MaddubsSums, true>::Kernel<R, T>;

// One token against 8 packed Q8_0 rows (BlockQ8_0x8), the rows' scale products from one 8-wide
// multiply per block. Each row's lanes and FMAs are those of vecDotQ8_0_avx2, so the bits are too.
// Rows gives block b's 8 scales and each row's values (Q8_0PackedRows).
template <typename Rows>
inline void q8_0EightRowsBlocks(int64_t nb, __m256* acc, const Rows& rows, const BlockQ8_0* y) {
  for (int64_t b = 0; b < nb; b++) {
    const __m256 d = _mm256_mul_ps(_mm256_cvtph_ps(rows.scales(b)), _mm256_set1_ps(fp16(y[b].d)));
    const __m256i qy = load32(y[b].qs);
    for (int r = 0; r < 8; r++) {
      const __m256i qx = load32(rows.values(b, r));
      const __m256 dr = _mm256_permutevar8x32_ps(d, _mm256_set1_epi32(r));
      acc[r] = _mm256_fmadd_ps(dr, _mm256_cvtepi32_ps(quadSumsI8(_mm256_sign_epi8(qx, qx), qx, qy)), acc[r]);
    }
  }
}

// One token against S Q8_0 rows in the file's layout (decode; halfApart gives rows r and r + nr / 2,
// so the chunk is read as two long streams), each asked for kQ8StreamAhead bytes on. Each row's
// lanes and FMAs are those of vecDotQ8_0_avx2 (the scales' product as one float multiply), so the
// bits are too. Eight rows at a time, each block of each asked for 8 rows on, made 8 short streams
// of one row each, which the memory served worse the shorter the rows: on Zen 3 (2 threads, per-op
// timer, one process per build, alternating), Qwen2.5-0.5B's 896-wide products read 20-22 GB/s
// against its 4864-wide ffn_down's 28-30; two streams read 29-33 and 30-32, and decode went
// 39-41 -> 54-56 tok/s (Qwen2.5 Q8_0) and 24-25 -> 32-33 (TinyLlama Q8_0, 2048-5632 wide). One
// stream (one FMA chain) read less than two; three and four no more (Qwen2.5 56-59 / 52-57,
// TinyLlama 28-32 / 27-29). Asked for 512 bytes on, one stream read 28-32 GB/s from memory where
// 4 KB on read 34-38 (kernel-timer --from-memory, 4864 x 896); 8 KB on read as 4 KB.
constexpr int kQ8StreamAhead = 4096;
template <int S>
void q8_0Rows(int64_t nb, const BlockQ8_0* const* rows, const BlockQ8_0* y, float* const* s) {
  __m256 acc[S];
  for (int k = 0; k < S; k++) acc[k] = _mm256_setzero_ps();
  for (int64_t b = 0; b < nb; b++) {
    const __m256i qy = load32(y[b].qs);
    const float dy = fp16(y[b].d);
    for (int k = 0; k < S; k++) {
      _mm_prefetch(reinterpret_cast<const char*>(rows[k] + b) + kQ8StreamAhead, _MM_HINT_T0);
      const __m256i qx = load32(rows[k][b].qs);
      const __m256 d = _mm256_set1_ps(fp16(rows[k][b].d) * dy);
      acc[k] = _mm256_fmadd_ps(d, _mm256_cvtepi32_ps(quadSumsI8(_mm256_sign_epi8(qx, qx), qx, qy)), acc[k]);
    }
  }
  for (int k = 0; k < S; k++) *s[k] = hsum(acc[k]);
}

// Q8_0 prefill: R rows x T tokens, the token's signs moved onto the weights. Per token and block
// |y| is taken once for the tile's R rows; per pair the row's bytes take y's signs and
// maddubs(|y|, x * sign(y)) gives x * y in pairs, which madd folds to quadSumsI8's lanes exactly.
// With only the tile's 16 accumulators held across the block loop, the rows are read from L1 as
// each pair needs them (Q8Tile holds them, and |x|, in registers and spills). The row scales are
// multiplied by each token's in one 4-wide multiply and read back as broadcasts, so no shuffle
// port is spent on them; those products are made one block ahead (blocksOneAhead): read back in
// the block that stored them, each pair's FMA waited on the store. Zen 3: one thread from L1 0.98
// -> 0.84 ns a pair (taking them from the register by shuffles 0.82, but 1.04x in kiln against
// 1.09x this way); 512-token prefill, 2 threads, builds alternating by process, TinyLlama Q8_0
// 57.5-60.5 -> 67.2-68.2 tok/s, Qwen2.5 Q8_0 143-158 -> 157-181.
// Everything after the integers is Q8Tile's, so the bits are vecDotQ8_0_avx2's. Zen 5, one thread
// of 512x2048 -> 5632 (GFLOP/s): 4x4 104, 5x4 104, 3x4 100, 4x3 96, 4x2 84; Q8Tile 4x3 96, 3x4 84;
// the 16-bit halves this replaces 88; ggml's 4x2 103. The 16 sums at the end go 8 at a time
// (hsum8): a 896-wide row has only 28 blocks, so the tail shows (2 threads, 512 x 896 -> 4864: 171
// -> 187 GFLOP/s).
template <int R, int T>
struct TileQ8_0Prefill {
  // Block b's R x T scale products, token t's at d[t][0..R).
  static void scales(const TileArgs& a, int64_t b, float (*d)[4]) {
    const __m128 dx = q8RowScales<R>(a.x, a.xStride, b);
    for (int t = 0; t < T; t++)
      _mm_store_ps(d[t], _mm_mul_ps(dx, _mm_set1_ps(fp16(reinterpret_cast<const BlockQ8_0*>(a.y + t * a.yStride)[b].d))));
  }
  static void run(const TileArgs& a) {
    __m256 acc[R][T];
    for (int r = 0; r < R; r++)
      for (int t = 0; t < T; t++) acc[r][t] = _mm256_setzero_ps();
    const __m256i ones = _mm256_set1_epi16(1);
    // Blocks b and b + 1, as blocksOneAhead walks them, written out: with the 16 accumulators
    // taken into its lambda by reference, GCC kept them in memory (2x the time).
    const int64_t nb = a.n / QK8_0;
    alignas(16) float d[2][T][4];
    if (nb > 0) scales(a, 0, d[0]);
    for (int64_t b = 0; b < nb; b++) {
      if (b + 1 < nb) scales(a, b + 1, d[(b + 1) & 1]);
      const float (*db)[4] = d[b & 1];
      for (int t = 0; t < T; t++) {
        const __m256i qy = load32(reinterpret_cast<const BlockQ8_0*>(a.y + t * a.yStride)[b].qs);
        const __m256i ay = _mm256_sign_epi8(qy, qy);
        for (int r = 0; r < R; r++) {
          const __m256i qx = load32(reinterpret_cast<const BlockQ8_0*>(a.x + r * a.xStride)[b].qs);
          const __m256i sum = _mm256_madd_epi16(_mm256_maddubs_epi16(ay, _mm256_sign_epi8(qx, qy)), ones);
          acc[r][t] = _mm256_fmadd_ps(_mm256_broadcast_ss(&db[t][r]), _mm256_cvtepi32_ps(sum), acc[r][t]);
        }
      }
    }
    int t = 0;
    if constexpr (R == 4) {
      for (; t + 2 <= T; t += 2) {  // two tokens' four rows summed at once
        const __m256 v[8] = {acc[0][t], acc[1][t], acc[2][t], acc[3][t], acc[0][t + 1], acc[1][t + 1], acc[2][t + 1], acc[3][t + 1]};
        const __m256 sums = hsum8(v);
        _mm_storeu_ps(a.s + t * a.ldS, _mm256_castps256_ps128(sums));
        _mm_storeu_ps(a.s + (t + 1) * a.ldS, _mm256_extractf128_ps(sums, 1));
      }
    }
    for (; t < T; t++)
      for (int r = 0; r < R; r++) a.s[t * a.ldS + r] = hsum(acc[r][t]);
  }
};

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

// Tile shapes, measured on one thread of a 512-token product (GFLOP/s, Sapphire Rapids): Q8_0 3x4
// 78, 3x3 77, 2x4 74, 4x2 71 (4 rows spill accumulators to the stack); widened halves 3x4 79, 2x6
// 72, 4x3 63. Decode and a few tokens use the Q8Tile shape; prefill, TileQ8_0Prefill's (above).
constexpr int kQ8Rows = 3, kQ8Tokens = 4;
constexpr int kQ8PrefillRows = 4, kQ8PrefillTokens = 4;
// BF16 activations widened: one tile of tokens at a time, whose rows then stay in L1 while the
// weights stream; decode reads the halves in 4x3 tiles.
constexpr int kWideRows = 3, kWideTokens = 4;

// F16 weights and activations, both read as halves in every tile (so every token count gives the
// same bits): decode reads four rows at a time, a quarter of the chunk apart, each stream asking
// kRowStreamAheadBytes on (Zen 4, 2 threads of 5632 x 2048 from memory, in-process against 8 rows
// side by side asking 512 bytes on: 0.94-0.95 of the time by the median of the rounds; two streams
// 0.87-0.90; against two streams, three 1.00-1.05 and two adjacent rows in each of two streams
// 1.16-1.30). Each row is one chain of 8-float FMAs: from L2 on one thread two rows took 2.1x the
// 8-row tile's time (30 GB/s a thread), and on Zen 5 one 16-float chain a thread read only 34 GB/s
// on 2 threads (bound by the chain, that session found), so four chains, not two. 2-3 tokens take
// 4 rows x 3 tokens, and 4 or more 3 rows x 4 tokens. Widening 4 tokens' activations to float
// first (as BF16 does, and the AVX-512 path) was slower for F16, whose conversion is one
// instruction: on Zen 5, 2 threads of 512x2048 -> 5632, 112-128 -> 200-205 GFLOP/s (BF16 read this
// way went 185 -> 161, so it keeps the widening).
void f16Product(const TileArgs& a, int64_t nr, int64_t nt) {
  if (nt == 1) FloatTile<Lanes8, F16Elements, F16Elements>::streams<4>(a, nr, kRowStreamAheadBytes);
  else if (nt < 4) tiles<TileF16, 4, 3>(a, nr, nt);
  else tiles<TileF16, 3, 4>(a, nr, nt);
}

}  // namespace

void gemmQ4_0x8_avx2(int64_t nb, int64_t nGroups, int64_t nt, float* s, int64_t ldS, const BlockQ4_0x8* x,
                     const BlockQ8_0* y, const Q8BlockSums* sums) {
  gemmQ4_0x8<MaddubsSums>(nb, nGroups, nt, s, ldS, x, y, sums);
}

// One token against groups of 8 packed Q8_0 rows, a segment at a time.
void gemvQ8_0x8_avx2(int64_t nb, int64_t nGroups, float* acc, bool first, float* s, const BlockQ8_0x8* x, const BlockQ8_0* y) {
  for (int64_t g = 0; g < nGroups; g++) {
    __m256 a[8];
    float* ag = acc + 64 * g;
    for (int r = 0; r < 8; r++) a[r] = first ? _mm256_setzero_ps() : _mm256_loadu_ps(ag + 8 * r);
    q8_0EightRowsBlocks(nb, a, Q8_0PackedRows{x + g * nb}, y);
    if (s) {
      _mm256_storeu_ps(s + 8 * g, hsum8(a));
    } else {
      for (int r = 0; r < 8; r++) _mm256_storeu_ps(ag + 8 * r, a[r]);
    }
  }
}

void vecDotManyQ8_0_avx2(int64_t n, int64_t nr, int64_t nt, float* s, int64_t ldS, const void* x, size_t xStride,
                         const void* y, size_t yStride) {
  const TileArgs a{n, s, ldS, static_cast<const char*>(x), xStride, static_cast<const char*>(y), yStride};
  if (nt == 1) {
    const int64_t nb = n / QK8_0;
    const BlockQ8_0* yb = reinterpret_cast<const BlockQ8_0*>(a.y);
    auto row = [&](int64_t r) { return reinterpret_cast<const BlockQ8_0*>(a.x + r * xStride); };
    halfApart(
        nr,
        [&](int64_t i, int64_t j) {
          const BlockQ8_0* rows[2] = {row(i), row(j)};
          float* out[2] = {s + i, s + j};
          q8_0Rows<2>(nb, rows, yb, out);
        },
        [&](int64_t i) {
          const BlockQ8_0* rows[1] = {row(i)};
          float* out[1] = {s + i};
          q8_0Rows<1>(nb, rows, yb, out);
        });
    return;
  }
  // A continuous-batching step of a few tokens reads each weight once, from memory.
  if (nt <= 8) tiles<TileQ8_0Stream, kQ8Rows, kQ8Tokens>(a, nr, nt);
  else tiles<TileQ8_0Prefill, kQ8PrefillRows, kQ8PrefillTokens>(a, nr, nt);
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

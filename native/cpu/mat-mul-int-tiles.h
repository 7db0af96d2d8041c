// The integer-dot tiles of Q8_0 and packed Q4_0, written once for the AVX2 and the AVX-512 VNNI
// files, which differ only in how a block's byte products become exact int32 sums: `Sums` gives
//   quads(absX, x, y): eight lanes, lane l the sum of x * y over bytes 4l..4l+3 (absX = |x|; only
//     the AVX2 file's Q8Tile: the AVX-512 file has its own two-token Q8_0 tiles);
//   piece(acc, lo, hi, qLo, qHi): acc plus, per row of a packed Q4_0 block, the products of one
//     32-byte chunk's low and high nibbles with a token's 4-byte pieces qLo and qHi;
//   finish(acc, sum8): the 8 rows' exact int32 sums of nibble * y from the pieces, less sum8.
// Everything after the integers (FMAs per block, in block order) is shared, so both files give
// vecDotQ8_0/Q4_0_generic's bits. Needs AVX2/FMA/F16C (simd-avx2.h); unnamed namespace as in
// mat-mul-tiles.h.
#pragma once
#include <type_traits>
#include "mat-mul-tiles.h"
#include "mat-mul.h"
#include "simd-avx2.h"

namespace kiln {
namespace {

// The Q8_0 scales of R rows' block b side by side as floats, built in a register (narrow stores
// read back wide would stall).
template <int R>
inline __m128 q8RowScales(const char* x, size_t xStride, int64_t b) {
  static_assert(R <= 4, "row scales share one 128-bit vector");
  uint64_t h = 0;
  for (int r = 0; r < R; r++) h |= (uint64_t)reinterpret_cast<const BlockQ8_0*>(x + r * xStride)[b].d << (16 * r);
  return _mm_cvtph_ps(_mm_cvtsi64_si128((long long)h));
}

// The 8 rows of a Q8_0 decode kernel (q8_0EightRowsBlocks, q8_0EightRowsVnni): block b's 8 scales
// (fp16) and row r's 32 values. In the file's layout (the AVX-512 kernel's rows past the packed
// groups) the rows are 8 short weight streams, each prefetched at the same place in the next 8 rows;
// packed (BlockQ8_0x8) they are one stream, which the hardware prefetcher follows on its own
// (prefetches 2-4 KB ahead were slower on Zen 5, 16 KB more). The AVX2 tier reads the file's layout
// as two long streams instead (q8_0Rows in mat-mul-avx2.cpp).
struct Q8_0FileRows {
  const char* x;
  size_t xStride;
  const BlockQ8_0& at(int r, int64_t b) const { return reinterpret_cast<const BlockQ8_0*>(x + r * xStride)[b]; }
  __m128i scales(int64_t b) const {
    uint64_t lo = 0, hi = 0;
    for (int r = 0; r < 4; r++) lo |= (uint64_t)at(r, b).d << (16 * r), hi |= (uint64_t)at(r + 4, b).d << (16 * r);
    return _mm_set_epi64x((long long)hi, (long long)lo);
  }
  const int8_t* values(int64_t b, int r) const {
    _mm_prefetch(reinterpret_cast<const char*>(&at(r, b)) + 8 * xStride, _MM_HINT_T0);
    return at(r, b).qs;
  }
};

struct Q8_0PackedRows {
  const BlockQ8_0x8* x;
  __m128i scales(int64_t b) const { return _mm_loadu_si128(reinterpret_cast<const __m128i*>(x[b].d)); }
  const int8_t* values(int64_t b, int r) const { return x[b].qs + QK8_0 * r; }
};

// Q8_0 weights x Q8_0 activations, as vecDotQ8_0_avx2. Per pair and block: the lane sums, a
// conversion, then one FMA with the scales' product. The products come from one multiply per
// token and block (the R row scales side by side times the token's), each row's taken out with a
// shuffle, which runs on another port than the arithmetic (as tinyBLAS).
// Stream: the weights are read once, from memory (a continuous-batching step of a few tokens), so
// each block is asked for where the next R rows will need it; the arithmetic of a few tokens
// otherwise waits on every row's first bytes.
template <typename Sums, bool Stream = false>
struct Q8Tile {
  template <int R, int T>
  struct Kernel {
    static void run(const TileArgs& a) {
      __m256 acc[R][T];
      for (int r = 0; r < R; r++)
        for (int t = 0; t < T; t++) acc[r][t] = _mm256_setzero_ps();
      for (int64_t b = 0; b < a.n / QK8_0; b++) {
        __m256i qx[R], ax[R];
        for (int r = 0; r < R; r++) {
          const BlockQ8_0& xb = reinterpret_cast<const BlockQ8_0*>(a.x + r * a.xStride)[b];
          if (Stream) _mm_prefetch(reinterpret_cast<const char*>(&xb) + R * a.xStride, _MM_HINT_T0);
          else if (T == 1) _mm_prefetch(reinterpret_cast<const char*>(&xb) + kPrefetchBytes, _MM_HINT_T0);
          qx[r] = simd::load32(xb.qs);
          ax[r] = _mm256_sign_epi8(qx[r], qx[r]);
        }
        const __m128 dx = q8RowScales<R>(a.x, a.xStride, b);
        for (int t = 0; t < T; t++) {
          const BlockQ8_0& yb = reinterpret_cast<const BlockQ8_0*>(a.y + t * a.yStride)[b];
          const __m256i qy = simd::load32(yb.qs);
          const __m128 d4 = _mm_mul_ps(dx, _mm_set1_ps(simd::fp16(yb.d)));
          const __m256 d = _mm256_set_m128(d4, d4);
          for (int r = 0; r < R; r++) {
            const __m256 dr = r == 0 ? _mm256_permute_ps(d, 0x00) : r == 1 ? _mm256_permute_ps(d, 0x55)
                            : r == 2 ? _mm256_permute_ps(d, 0xaa) : _mm256_permute_ps(d, 0xff);
            acc[r][t] = _mm256_fmadd_ps(dr, _mm256_cvtepi32_ps(Sums::quads(ax[r], qx[r], qy)), acc[r][t]);
          }
        }
      }
      for (int r = 0; r < R; r++)
        for (int t = 0; t < T; t++) a.s[t * a.ldS + r] = simd::hsum(acc[r][t]);
    }
  };
};

// T tokens against G groups of 8 packed Q4_0 rows (xs[g], results at ss[g] + t * ldS). Per block
// and 32-byte chunk the rows' unsigned nibbles are unpacked once and every token's matching 4-byte
// pieces are broadcast against them (Sums::piece), so a tile holds one integer sum per token, not
// all 8 unpacked vectors beside the accumulators (which overflow AVX2's 16 registers and spill: 4
// decode rows 2.56x -> 2.78x one row's tok/s); then one exact int32 per row less 8 * sum(y) for
// the nibbles' offset of 8 (Sums::finish), and one FMA per block. Each group's sums are its own
// whatever G is. Stream: the weights come from memory once (decode, or a step of a few tokens), so
// the next blocks are asked for ahead.
template <typename Sums, int G, int T, bool Stream>
void q4_0x8Tile(int64_t nb, const BlockQ4_0x8* const* xs, const BlockQ8_0* y, const Q8BlockSums* sums, float* const* ss, int64_t ldS) {
  const __m256i low4 = _mm256_set1_epi8(0x0f);
  __m256 acc[G][T];
  for (int g = 0; g < G; g++)
    for (int t = 0; t < T; t++) acc[g][t] = _mm256_setzero_ps();
  for (int64_t b = 0; b < nb; b++) {
    for (int g = 0; g < G; g++) {
      const BlockQ4_0x8& xb = xs[g][b];
      if (Stream) simd::prefetchLines<sizeof(BlockQ4_0x8)>(&xb, kPackedPrefetchBytes);
      __m256i p[T];
      for (int t = 0; t < T; t++) p[t] = _mm256_setzero_si256();
      for (int c = 0; c < 4; c++) {
        const __m256i v = simd::load32(xb.qs + 32 * c);
        const __m256i lo = _mm256_and_si256(v, low4);
        const __m256i hi = _mm256_and_si256(_mm256_srli_epi16(v, 4), low4);
        for (int t = 0; t < T; t++) {
          // Read in place, so each piece is one broadcast from memory (a copy to the stack makes
          // the compiler hold the token's 8 words in registers: 4 decode rows 2.8x -> 2.0x).
          using Word = int32_t __attribute__((__may_alias__));
          const Word* q = reinterpret_cast<const Word*>(y[t * nb + b].qs);
          p[t] = Sums::piece(p[t], lo, hi, q[c], q[4 + c]);
        }
      }
      const __m256 dx = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(xb.d)));
      for (int t = 0; t < T; t++) {
        const Q8BlockSums& ys = sums[t * nb + b];
        const __m256i isum = Sums::finish(p[t], ys.sum8);
        acc[g][t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum), _mm256_mul_ps(dx, _mm256_set1_ps(ys.d)), acc[g][t]);
      }
    }
  }
  for (int g = 0; g < G; g++)
    for (int t = 0; t < T; t++) _mm256_storeu_ps(ss[g] + t * ldS, acc[g][t]);
}

// One token (decode) against nGroups groups: groups g and g + nGroups / 2 side by side (halfApart),
// so the chunk is read as two streams, as Q8_0's file-layout decode reads its rows. Zen 3, 2
// threads, builds alternating by process: Qwen2.5-0.5B Q4_0 decode 79.7-87.7 -> 95.8-97.7 tok/s,
// TinyLlama Q4_0 ahead in 4 of 5 pairs (44.9-49.5 -> 46.9-60.8).
template <typename Sums>
void q4_0x8Decode(int64_t nb, int64_t nGroups, float* s, const BlockQ4_0x8* x, const BlockQ8_0* y, const Q8BlockSums* sums) {
  simd::halfApart(
      nGroups,
      [&](int64_t g, int64_t h) {
        const BlockQ4_0x8* xs[2] = {x + g * nb, x + h * nb};
        float* ss[2] = {s + 8 * g, s + 8 * h};
        q4_0x8Tile<Sums, 2, 1, true>(nb, xs, y, sums, ss, 0);
      },
      [&](int64_t g) {
        const BlockQ4_0x8* xs[1] = {x + g * nb};
        float* ss[1] = {s + 8 * g};
        q4_0x8Tile<Sums, 1, 1, true>(nb, xs, y, sums, ss, 0);
      });
}

template <typename Sums, bool Stream>
void q4_0x8Tiles(int64_t nb, int64_t nGroups, int64_t nt, float* s, int64_t ldS, const BlockQ4_0x8* x, const BlockQ8_0* y,
                 const Q8BlockSums* sums) {
  constexpr int T = 4;
  for (int64_t g = 0; g < nGroups; g++) {
    const BlockQ4_0x8* xg[1] = {x + g * nb};
    int64_t t = 0;
    auto tile = [&](auto tokens) {
      constexpr int n = decltype(tokens)::value;
      float* sg[1] = {s + 8 * g + t * ldS};
      q4_0x8Tile<Sums, 1, n, Stream>(nb, xg, y + t * nb, sums + t * nb, sg, ldS);
    };
    for (; t + T <= nt; t += T) tile(std::integral_constant<int, T>());
    switch (nt - t) {
      case 3: tile(std::integral_constant<int, 3>()); break;
      case 2: tile(std::integral_constant<int, 2>()); break;
      case 1: tile(std::integral_constant<int, 1>()); break;
      default: break;
    }
  }
}

// s[t * ldS + 8g + r] for nGroups groups of 8 packed rows and nt tokens, 4 tokens per tile; up to
// 8 tokens (decode, a continuous-batching step) stream the weights, more (prefill) keep a chunk in
// cache for all of them.
template <typename Sums>
void gemmQ4_0x8(int64_t nb, int64_t nGroups, int64_t nt, float* s, int64_t ldS, const BlockQ4_0x8* x, const BlockQ8_0* y,
                const Q8BlockSums* sums) {
  if (nt == 1) q4_0x8Decode<Sums>(nb, nGroups, s, x, y, sums);
  else if (nt <= 8) q4_0x8Tiles<Sums, true>(nb, nGroups, nt, s, ldS, x, y, sums);
  else q4_0x8Tiles<Sums, false>(nb, nGroups, nt, s, ldS, x, y, sums);
}

}  // namespace
}  // namespace kiln

// AVX-512 tiles for matrix products, used where the CPU has AVX-512 F/BW/VL and VNNI (Ice Lake,
// Sapphire Rapids, Zen 4 and later); the AVX2 tiles (mat-mul-avx2.cpp) run everywhere else.
// - Q8_0 and packed Q4_0 keep the bits of their AVX2 kernels (and so of vecDotQ8_0/Q4_0_generic
//   and llama.cpp's x86 order): VNNI's vpdpbusd gives the same exact integer sums as maddubs,
//   int16 adds and madd in one instruction, and every float FMA stays per block, in block order.
//   Q8_0 products of two or more tokens put two tokens in each 512-bit vector, so each FMA does
//   two tokens' blocks;
//   packed Q4_0 puts two groups of 8 rows in each, so one broadcast of a token feeds 16 rows.
// - F16 uses 16-wide lanes: another float order than the AVX2 kernel (within the best-vs-generic
//   tolerance), the same for every token count, so prefill and decode agree bit for bit.
// Compiled with -mavx512f -mavx512bw -mavx512vl -mavx512vnni (and AVX2/FMA/F16C).
#include <immintrin.h>

#include <algorithm>
#include <type_traits>
#include <vector>

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
// Q4_0's nibbles, less 8 * sum(y) at the end (as maddubs, int16 adds and madd). The packed Q4_0
// tile of an odd last group of 8 rows takes it (Sums::piece and Sums::finish of mat-mul-int-tiles.h).
struct VnniSums {
  static __m256i piece(__m256i acc, __m256i lo, __m256i hi, int32_t qLo, int32_t qHi) {
    return _mm256_dpbusd_epi32(_mm256_dpbusd_epi32(acc, lo, _mm256_set1_epi32(qLo)), hi, _mm256_set1_epi32(qHi));
  }
  static __m256i finish(__m256i acc, int32_t sum8) { return _mm256_sub_epi32(acc, _mm256_set1_epi32(sum8)); }
};

// Q8_0 x Q8_0 products of two or more tokens: two tokens per 512-bit vector with their 32-bit
// lanes interleaved (lane 2i is lane i of the AVX2 kernel's vector for token a, lane 2i + 1 for
// token b), up to 4 pairs (8 tokens) at a time. The weights are made unsigned (x + 128) for
// vpdpbusd, whose sums start from -128 * sum(y) over each lane's 4 values, so they are exactly the
// AVX2 lane sums; then one conversion and one FMA per block, with the scale products of a pair in
// one 64-bit broadcast (hence the interleave). Same bits as vecDotQ8_0_avx2.
// A pair costs a vpdpbusd, a conversion and an FMA per row and block where the AVX2 kernel's
// 256-bit tile spends five instructions on each token (a sign, the sum, a conversion, a scale
// shuffle and the FMA): a continuous-batching step of 4 decode rows is otherwise bound by
// arithmetic, not by reading the weights.
constexpr int kQ8MaxPairs = 4, kQ8MaxTokens = 2 * kQ8MaxPairs;

// What every row needs of a block of the P pairs of tokens, prepared once for all of them.
template <int P>
struct Q8TokenBlock {
  __m512i y[P];      // a pair's values, lanes interleaved
  __m512i start[P];  // -128 * the sum of each lane's 4 values
  alignas(32) float d[kQ8MaxTokens];
};

// Tokens [0, nReal) of a tile of 2P; an odd count's missing last token repeats the one before it
// (its results are never stored).
template <int P>
void prepareTokens(const char* y, size_t yStride, int nReal, int64_t nb, Q8TokenBlock<P>* out) {
  const __m512i bias = _mm512_set1_epi8((char)0x80);
  const __m512i interleave = _mm512_setr_epi32(0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23);
  for (int64_t b = 0; b < nb; b++) {
    const BlockQ8_0* yb[2 * P];
    alignas(16) fp16_t dh[kQ8MaxTokens] = {};
    for (int t = 0; t < 2 * P; t++) {
      yb[t] = reinterpret_cast<const BlockQ8_0*>(y + std::min(t, nReal - 1) * yStride) + b;
      dh[t] = yb[t]->d;
    }
    _mm256_store_ps(out[b].d, _mm256_cvtph_ps(_mm_load_si128(reinterpret_cast<const __m128i*>(dh))));
    for (int p = 0; p < P; p++) {
      const __m512i v = _mm512_permutex2var_epi32(_mm512_castsi256_si512(load32(yb[2 * p]->qs)), interleave,
                                                  _mm512_castsi256_si512(load32(yb[2 * p + 1]->qs)));
      out[b].y[p] = v;
      out[b].start[p] = _mm512_sub_epi32(_mm512_setzero_si512(), _mm512_dpbusd_epi32(_mm512_setzero_si512(), bias, v));
    }
  }
}

// The two floats at p repeated 8 times, as a load (vbroadcastsd from memory): the compiler would
// otherwise take them out of the register it just stored, which costs shuffles on the busy port.
inline __m512 broadcastPair(const float* p) {
  using Pair = double __attribute__((__may_alias__));
#ifdef KILN_EMULATED_AVX512  // the tests' emulated build (emulated-avx512.h): no 512-bit registers for asm
  return _mm512_castpd_ps(_mm512_set1_pd(*reinterpret_cast<const Pair*>(p)));
#else
  __m512d v;
  __asm__("vbroadcastsd %1, %0" : "=v"(v) : "m"(*reinterpret_cast<const Pair*>(p)));
  return _mm512_castpd_ps(v);
#endif
}

// R rows against blocks [b0, b1) of the prepared P pairs, accumulating into acc (R x P vectors).
// Stream: the weights come from memory once (a step of a few tokens), so each block is asked for
// where the next R rows will need it (a row's own next kilobyte was mostly on its way already;
// 4 decode rows of TinyLlama Q8_0, tok/s against one row's: 2.6x -> 3.4x).
template <int R, int P, bool Stream>
void q8PairTile(int64_t b0, int64_t b1, const char* x, size_t xStride, const Q8TokenBlock<P>* tb, __m512* accIo) {
  const __m512i bias = _mm512_set1_epi8((char)0x80);
  const __m512i twice = _mm512_setr_epi32(0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7);
  __m512 acc[R][P];
  for (int r = 0; r < R; r++)
    for (int p = 0; p < P; p++) acc[r][p] = accIo[r * P + p];
  for (int64_t b = b0; b < b1; b++) {
    const BlockQ8_0* xb[R];
    for (int r = 0; r < R; r++) {
      xb[r] = reinterpret_cast<const BlockQ8_0*>(x + r * xStride) + b;
      if (Stream) _mm_prefetch(reinterpret_cast<const char*>(xb[r]) + R * xStride, _MM_HINT_T0);
    }
    // d of every (row, token) as the AVX2 kernel computes it: the row's scale times the token's.
    const __m256 dy = _mm256_load_ps(tb[b].d);
    alignas(32) float d[R][kQ8MaxTokens];
    for (int r = 0; r < R; r++) _mm256_store_ps(d[r], _mm256_mul_ps(_mm256_set1_ps(fp16(xb[r]->d)), dy));
    for (int r = 0; r < R; r++) {
      const __m512i ux = _mm512_xor_si512(_mm512_permutexvar_epi32(twice, _mm512_castsi256_si512(load32(xb[r]->qs))), bias);
      for (int p = 0; p < P; p++)
        acc[r][p] = _mm512_fmadd_ps(broadcastPair(&d[r][2 * p]), _mm512_cvtepi32_ps(_mm512_dpbusd_epi32(tb[b].start[p], ux, tb[b].y[p])), acc[r][p]);
    }
  }
  for (int r = 0; r < R; r++)
    for (int p = 0; p < P; p++) accIo[r * P + p] = acc[r][p];
}

// The nReal tokens' results from a row's P accumulators (lanes de-interleaved, each token's 8
// summed as the AVX2 kernel does).
template <int P>
void storePairs(const __m512* acc, int nReal, float* s, int64_t ldS) {
  const __m512i split = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 1, 3, 5, 7, 9, 11, 13, 15);
  for (int p = 0; p < P; p++) {
    const __m512 v = _mm512_permutexvar_ps(split, acc[p]);
    s[2 * p * ldS] = hsum(_mm512_castps512_ps256(v));
    if (2 * p + 1 < nReal) s[(2 * p + 1) * ldS] = hsum(high8(v));
  }
}

// Blocks per pass: the prepared tokens of a pass stay in L1 while every row goes over them.
constexpr int64_t kQ8PassBlocks = 32;

// nReal (2P - 1 or 2P) tokens against nr rows, 4 rows at a time. A step of at most 8 tokens (a
// continuous-batching step's decode rows) streams each row whole with its accumulators in
// registers: it reads the weights once, from memory, like decode. Longer products (prefill) take
// a pass of blocks at a time over every row, the accumulators kept between passes, so the
// prepared tokens stay in L1.
template <int P>
void q8PairGroup(int64_t n, int64_t nr, int nReal, bool stream, float* s, int64_t ldS, const char* x, size_t xStride,
                 const char* y, size_t yStride) {
  constexpr int R = 4;
  const int64_t nb = n / QK8_0;
  thread_local std::vector<Q8TokenBlock<P>> prepared;
  if (prepared.size() < (size_t)nb) prepared.resize((size_t)nb);
  prepareTokens<P>(y, yStride, nReal, nb, prepared.data());
  if (stream) {
    int64_t r = 0;
    for (; r + R <= nr; r += R) {
      __m512 acc[R * P];
      std::fill(acc, acc + R * P, _mm512_setzero_ps());
      q8PairTile<R, P, true>(0, nb, x + r * xStride, xStride, prepared.data(), acc);
      for (int i = 0; i < R; i++) storePairs<P>(acc + i * P, nReal, s + r + i, ldS);
    }
    for (; r < nr; r++) {
      __m512 acc[P];
      std::fill(acc, acc + P, _mm512_setzero_ps());
      q8PairTile<1, P, true>(0, nb, x + r * xStride, xStride, prepared.data(), acc);
      storePairs<P>(acc, nReal, s + r, ldS);
    }
    return;
  }
  thread_local std::vector<__m512> acc;
  if (acc.size() < (size_t)(nr * P)) acc.resize((size_t)(nr * P));
  std::fill(acc.begin(), acc.begin() + nr * P, _mm512_setzero_ps());
  for (int64_t b0 = 0; b0 < nb; b0 += kQ8PassBlocks) {
    const int64_t b1 = std::min(nb, b0 + kQ8PassBlocks);
    int64_t r = 0;
    for (; r + R <= nr; r += R) q8PairTile<R, P, false>(b0, b1, x + r * xStride, xStride, prepared.data(), acc.data() + r * P);
    for (; r < nr; r++) q8PairTile<1, P, false>(b0, b1, x + r * xStride, xStride, prepared.data(), acc.data() + r * P);
  }
  for (int64_t r = 0; r < nr; r++) storePairs<P>(acc.data() + r * P, nReal, s + r, ldS);
}

// Every token, 8 at a time, then the last 1-7 as one group of fewer pairs.
void q8PairTiles(int64_t n, int64_t nr, int64_t nt, float* s, int64_t ldS, const char* x, size_t xStride, const char* y,
                 size_t yStride) {
  const bool stream = nt <= kQ8MaxTokens;
  for (int64_t t = 0; t < nt; t += kQ8MaxTokens) {
    const int nReal = (int)std::min<int64_t>(kQ8MaxTokens, nt - t);
    float* st = s + t * ldS;
    const char* yt = y + t * yStride;
    switch ((nReal + 1) / 2) {
      case 1: q8PairGroup<1>(n, nr, nReal, stream, st, ldS, x, xStride, yt, yStride); break;
      case 2: q8PairGroup<2>(n, nr, nReal, stream, st, ldS, x, xStride, yt, yStride); break;
      case 3: q8PairGroup<3>(n, nr, nReal, stream, st, ldS, x, xStride, yt, yStride); break;
      default: q8PairGroup<4>(n, nr, nReal, stream, st, ldS, x, xStride, yt, yStride); break;
    }
  }
}

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

// 6 rows x 4 tokens: 24 accumulators, 6 rows and one token in the 32 registers. One thread of a
// 512x2048 -> 5632 product in 1 MB chunks (GFLOP/s, best of alternating runs): 6x4 101, 5x4 99,
// 4x6 98, 4x5 93, 8x3 90, 3x8 45 (spills).
constexpr int kWideRows = 6, kWideTokens = 4;


// Four bytes broadcast to every 32-bit lane straight from memory: a load-port operation, where a
// broadcast from a general register (what the compiler makes of a copied int32) takes the shuffle
// port that the tile's weight unpacking and the VNNI sums already keep busy.
static inline __m512i broadcast4(const void* p) { return _mm512_broadcastd_epi32(_mm_loadu_si32(p)); }

// Two groups of 8 packed Q4_0 rows (one BlockQ4_0x16 per block) in one 512-bit tile: group g's
// lanes in the lower half, group g + 1's in the upper, each chunk one 64-byte load and the pair one
// stream, so each token's 4-byte piece is one broadcast from memory against 16 rows and every
// vpdpbusd does twice the AVX2 tile's work. Lane by lane the operations are those of
// q4_0x8Tile<VnniSums> (the same exact integer sum, then one multiply and one FMA per block in
// block order), so the bits are the AVX2 kernel's. T tokens per tile (token t's blocks ldY apart);
// 16 rows x T outputs.
// Q4PairSpan: one pair (`pair` of super-group sg in x's SegmentedLayout) over segments [seg0,
// seg1). Its lanes start at zero at the first segment or else from `carry` (16 floats per token),
// and go to s after the last segment or else back to `carry`.
// Stream: the weights are read once, from memory (decode, or a continuous-batching step of a few
// tokens), so the next blocks are asked for ahead.
struct Q4PairSpan {
  const SegmentedLayout& layout;
  const BlockQ4_0x16* x;
  int64_t sg, pair, seg0, seg1;
};

template <int T, bool Stream>
void q4_0x16Tile(const Q4PairSpan& span, int64_t ldY, const BlockQ8_0* y, const Q8BlockSums* sums, float* carry, float* s, int64_t ldS) {
  const SegmentedLayout& layout = span.layout;
  const __m512i low4 = _mm512_set1_epi8(0x0f);
  __m512 acc[T];
  for (int t = 0; t < T; t++) acc[t] = span.seg0 == 0 ? _mm512_setzero_ps() : _mm512_loadu_ps(carry + 16 * t);
  for (int64_t seg = span.seg0; seg < span.seg1; seg++) {
    const int64_t n = layout.segmentBlocks(seg), b0 = seg * layout.span;
    const BlockQ4_0x16* x = span.x + layout.segmentAt(span.sg, seg) + span.pair * n;
    const SplitRun<BlockQ4_0x16> run(x, n);
    for (int64_t b = 0; b < n; b++) {
      // The run's bytes are asked for in order, a record's worth per block.
      if (Stream) prefetchLines<sizeof(BlockQ4_0x16)>(x + b, kPackedPrefetchBytes);
      __m512i lo[4], hi[4];
      for (int c = 0; c < 4; c++) {
        const __m512i v = _mm512_loadu_si512(run.qs(b) + 64 * c);
        lo[c] = _mm512_and_si512(v, low4);
        hi[c] = _mm512_and_si512(_mm512_srli_epi16(v, 4), low4);
      }
      const __m512 dx = _mm512_cvtph_ps(load32(run.d(b)));
      for (int t = 0; t < T; t++) {
        const BlockQ8_0& yb = y[t * ldY + b0 + b];
        const Q8BlockSums& ys = sums[t * ldY + b0 + b];
        __m512i p0 = _mm512_setzero_si512(), p1 = _mm512_setzero_si512();
        for (int c = 0; c < 4; c++) {
          p0 = _mm512_dpbusd_epi32(p0, lo[c], broadcast4(yb.qs + 4 * c));
          p1 = _mm512_dpbusd_epi32(p1, hi[c], broadcast4(yb.qs + 16 + 4 * c));
        }
        const __m512i isum = _mm512_sub_epi32(_mm512_add_epi32(p0, p1), broadcast4(&ys.sum8));
        acc[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(isum), _mm512_mul_ps(dx, _mm512_set1_ps(ys.d)), acc[t]);
      }
    }
  }
  const bool last = span.seg1 == layout.segments();
  for (int t = 0; t < T; t++) _mm512_storeu_ps(last ? s + t * ldS : carry + 16 * t, acc[t]);
}

// Tiles of 4 tokens, then the last 1-3 (q4_0x16Tile's arguments).
template <bool Stream>
void q4_0x16TokenTiles(const Q4PairSpan& span, int64_t ldY, int64_t nt, const BlockQ8_0* y, const Q8BlockSums* sums, float* carry,
                       float* s, int64_t ldS) {
  constexpr int T = 4;
  auto tile = [&](auto tokens, int64_t t) {
    q4_0x16Tile<decltype(tokens)::value, Stream>(span, ldY, y + t * ldY, sums + t * ldY, carry ? carry + 16 * t : nullptr, s + t * ldS, ldS);
  };
  int64_t t = 0;
  for (; t + T <= nt; t += T) tile(std::integral_constant<int, T>{}, t);
  switch (nt - t) {
    case 3: tile(std::integral_constant<int, 3>{}, t); break;
    case 2: tile(std::integral_constant<int, 2>{}, t); break;
    case 1: tile(std::integral_constant<int, 1>{}, t); break;
    default: break;
  }
}

// Pairs [p0, p1) of their SegmentedLayout; s: pair p0's outputs. Decode (Stream: up to
// kStreamTokens tokens) goes super-group by super-group, each segment pair after pair, so the
// weights are one stream and the token's segment serves every pair in turn, the pairs' lanes
// carried between segments. Many tokens (prefill, the chunk in cache) take each pair's segments in
// one pass, so nothing is carried.
constexpr int64_t kStreamTokens = 8;
template <bool Stream>
void q4_0x16Tiles(const SegmentedLayout& layout, int64_t p0, int64_t p1, int64_t nt, float* s, int64_t ldS, const BlockQ4_0x16* x,
                  const BlockQ8_0* y, const Q8BlockSums* sums) {
  const int64_t nSegments = layout.segments(), sp = layout.superGroup;
  alignas(64) float carry[kQ4SuperPairs][kStreamTokens * 16];
  for (int64_t sg = p0 / sp; sg * sp < p1; sg++) {
    const int64_t first = std::max(p0, sg * sp), last = std::min(p1, sg * sp + layout.groupsIn(sg));
    auto run = [&](int64_t p, int64_t seg0, int64_t seg1) {
      q4_0x16TokenTiles<Stream>({layout, x, sg, p - sg * sp, seg0, seg1}, layout.nb, nt, y, sums, Stream ? carry[p - sg * sp] : nullptr,
                                s + 16 * (p - p0), ldS);
    };
    if (Stream) {
      for (int64_t seg = 0; seg < nSegments; seg++)
        for (int64_t p = first; p < last; p++) run(p, seg, seg + 1);
    } else {
      for (int64_t p = first; p < last; p++) run(p, 0, nSegments);
    }
  }
}

// Rows 2p and 2p + 1's values in one vector: two loads in the file's layout, one packed.
template <typename Rows>
inline __m512i rowPair(const Rows& rows, int64_t b, int p) {
  return _mm512_inserti64x4(_mm512_castsi256_si512(load32(rows.values(b, 2 * p))), load32(rows.values(b, 2 * p + 1)), 1);
}
inline __m512i rowPair(const Q8_0PackedRows& rows, int64_t b, int p) { return _mm512_loadu_si512(rows.values(b, 2 * p)); }

// The values of block b's rows made unsigned (x + 128), pair by pair.
template <typename Rows>
inline void flipRows(const Rows& rows, int64_t b, __m512i* flipped) {
  const __m512i bias = _mm512_set1_epi8((char)0x80);
  for (int p = 0; p < 4; p++) flipped[p] = _mm512_xor_si512(rowPair(rows, b, p), bias);
}

// One block of one token against the 8 rows: `scales` the rows' scales widened, `flipped` their
// values made unsigned.
inline void q8_0EightRowsVnniBlock(__m256 scales, const __m512i* flipped, const BlockQ8_0& yb, __m512* acc) {
  const __m512i bias = _mm512_set1_epi8((char)0x80);
  const __m512 d16 = _mm512_castps256_ps512(_mm256_mul_ps(scales, _mm256_set1_ps(fp16(yb.d))));
  const __m512i qy = _mm512_broadcast_i64x4(load32(yb.qs));
  const __m512i start = _mm512_sub_epi32(_mm512_setzero_si512(), _mm512_dpbusd_epi32(_mm512_setzero_si512(), bias, qy));
  for (int p = 0; p < 4; p++) {
    const __m512i sums = _mm512_dpbusd_epi32(start, flipped[p], qy);
    // Lanes 0-7 take row 2p's scale product, lanes 8-15 row 2p + 1's.
    const __m512 dp = _mm512_permutexvar_ps(_mm512_set_epi32(2 * p + 1, 2 * p + 1, 2 * p + 1, 2 * p + 1, 2 * p + 1, 2 * p + 1,
                                                             2 * p + 1, 2 * p + 1, 2 * p, 2 * p, 2 * p, 2 * p, 2 * p, 2 * p, 2 * p, 2 * p),
                                            d16);
    acc[p] = _mm512_fmadd_ps(dp, _mm512_cvtepi32_ps(sums), acc[p]);
  }
}

// One token against 8 Q8_0 rows (decode), two rows per 512-bit vector (row 2p's 8 lanes in the
// lower half, row 2p + 1's in the upper): the AVX2 kernel's (q8_0EightRows) lanes, with each pair's
// quad sums from one vpdpbusd of the weights made unsigned (x + 128) and started at -128 * the
// token's quad sums, so exactly the AVX2 integers; then the same scale products, conversion and FMA
// per block, so the same bits. Per row and block that is half a vpdpbusd, a conversion and an FMA
// where the AVX2 kernel spends two sign operations, maddubs and madd besides: decode then keeps
// closer to the memory's pace. Rows: Q8_0FileRows or Q8_0PackedRows.
template <typename Rows>
inline void q8_0EightRowsVnniBlocks(int64_t nb, __m512* acc, const Rows& rows, const BlockQ8_0* y) {
  for (int64_t b = 0; b < nb; b++) {
    __m512i flipped[4];
    flipRows(rows, b, flipped);
    q8_0EightRowsVnniBlock(_mm256_cvtph_ps(rows.scales(b)), flipped, y[b], acc);
  }
}

// q8_0EightRowsVnniBlocks for T tokens at once (acc[t][4]; token t's blocks at y + t * ldY): each
// block's rows are loaded, flipped and their scales widened once for every token, and each token
// then takes exactly the steps it takes alone (the same bits).
template <int T>
inline void q8_0EightRowsVnniTokens(int64_t nb, __m512 (*acc)[4], const Q8_0PackedRows& rows, const BlockQ8_0* y, int64_t ldY) {
  int64_t b = 0;
  if constexpr (T == 1) {
    // Decode: four blocks' rows loaded (16 loads, 1 KB) before any of their sums, each block's
    // steps then as below. TinyLlama Q8_0 decode, steps alternating with the one-block loop in one
    // process (4 windows of 100): 0.93-0.97 of the time in a slow-memory stretch (26-28 ms
    // steps), 0.99-1.01 and 0.986-0.995 in faster ones; Qwen2.5 Q8_0 0.993-1.012. Two blocks
    // gave 0.987-0.990; eight spill, 1.09-1.12.
    constexpr int kAhead = 4;
    for (; b + kAhead <= nb; b += kAhead) {
      __m512i flipped[kAhead][4];
      __m256 scales[kAhead];
      for (int k = 0; k < kAhead; k++) {
        flipRows(rows, b + k, flipped[k]);
        scales[k] = _mm256_cvtph_ps(rows.scales(b + k));
      }
      for (int k = 0; k < kAhead; k++) q8_0EightRowsVnniBlock(scales[k], flipped[k], y[b + k], acc[0]);
    }
  }
  for (; b < nb; b++) {
    const __m256 scales = _mm256_cvtph_ps(rows.scales(b));
    __m512i flipped[4];
    flipRows(rows, b, flipped);
    for (int t = 0; t < T; t++) q8_0EightRowsVnniBlock(scales, flipped, y[t * ldY + b], acc[t]);
  }
}

// Each row's sum of its 8 lanes, as the AVX2 kernel's.
inline void storeEightRows(const __m512* acc, float* s) {
  for (int p = 0; p < 4; p++) {
    s[2 * p] = hsum(_mm512_castps512_ps256(acc[p]));
    s[2 * p + 1] = hsum(high8(acc[p]));
  }
}

template <typename Rows>
void q8_0EightRowsVnni(int64_t nb, float* s, const Rows& rows, const BlockQ8_0* y) {
  __m512 acc[4];
  for (int p = 0; p < 4; p++) acc[p] = _mm512_setzero_ps();
  q8_0EightRowsVnniBlocks(nb, acc, rows, y);
  storeEightRows(acc, s);
}

// A packed group's lanes between segments: zero at its first segment, else what the last one left
// at ag; after its last segment its 8 row sums go to s (s non-null), else the lanes back to ag.
inline void loadGroupLanes(const float* ag, bool first, __m512* a) {
  for (int p = 0; p < 4; p++) a[p] = first ? _mm512_setzero_ps() : _mm512_loadu_ps(ag + 16 * p);
}
inline void storeGroupLanes(const __m512* a, float* s, float* ag) {
  if (s) {
    storeEightRows(a, s);
  } else {
    for (int p = 0; p < 4; p++) _mm512_storeu_ps(ag + 16 * p, a[p]);
  }
}

// Decode of two runs of groups side by side (x[0]'s and x[1]'s, nGroups each): group g of each,
// block by block in turn, so a thread reads two streams; each group takes exactly the steps it
// takes alone (q8_0EightRowsVnniTokens<1>), so the same bits. acc[k], s[k]: run k's, as
// gemvQ8_0x8_avx512's.
void gemvQ8_0x8Two(int64_t nb, int64_t nGroups, float* const* acc, bool first, float* const* s, const BlockQ8_0x8* const* x,
                   const BlockQ8_0* y) {
  for (int64_t g = 0; g < nGroups; g++) {
    __m512 a[2][4];
    const Q8_0PackedRows rows[2] = {{x[0] + g * nb}, {x[1] + g * nb}};
    for (int k = 0; k < 2; k++) loadGroupLanes(acc[k] + 64 * g, first, a[k]);
    constexpr int kAhead = 2;
    int64_t b = 0;
    for (; b + kAhead <= nb; b += kAhead) {
      __m512i flipped[2][kAhead][4];
      __m256 scales[2][kAhead];
      for (int k = 0; k < 2; k++) {
        for (int j = 0; j < kAhead; j++) {
          flipRows(rows[k], b + j, flipped[k][j]);
          scales[k][j] = _mm256_cvtph_ps(rows[k].scales(b + j));
        }
      }
      for (int k = 0; k < 2; k++)
        for (int j = 0; j < kAhead; j++) q8_0EightRowsVnniBlock(scales[k][j], flipped[k][j], y[b + j], a[k]);
    }
    for (; b < nb; b++) {
      for (int k = 0; k < 2; k++) {
        __m512i flipped[4];
        flipRows(rows[k], b, flipped);
        q8_0EightRowsVnniBlock(_mm256_cvtph_ps(rows[k].scales(b)), flipped, y[b], a[k]);
      }
    }
    for (int k = 0; k < 2; k++) storeGroupLanes(a[k], s ? s[k] + 8 * g : nullptr, acc[k] + 64 * g);
  }
}

}  // namespace

// TinyLlama Q8_0 decode@0 on Zen 5 against the file layout's 8 streams, alternating: 43.2 -> 52.6
// tok/s in a fast-memory minute (read 83 GB/s), 37.5 -> 39.7 in a slow one. One token through the
// few-token kernel: the same block steps (a scratch timer of 64 segments in L2 read the same 22-26
// us either way).
void gemvQ8_0x8_avx512(int64_t nb, int64_t nGroups, float* acc, bool first, float* s, const BlockQ8_0x8* x, const BlockQ8_0* y) {
  gemvQ8_0x8Tokens_avx512(nb, nGroups, 1, acc, 0, first, s, 0, x, y, 0);
}

// Tokens up to 4 at a time (their accumulators stay in registers), each group's rows loaded once
// for them. Token t's acc at acc + t * ldAcc, its blocks at y + t * ldY, its sums at s + t * ldS.
void gemvQ8_0x8Tokens_avx512(int64_t nb, int64_t nGroups, int64_t nt, float* acc, int64_t ldAcc, bool first, float* s, int64_t ldS,
                             const BlockQ8_0x8* x, const BlockQ8_0* y, int64_t ldY) {
  for (int64_t t0 = 0; t0 < nt; t0 += 4) {
    const int T = (int)std::min<int64_t>(4, nt - t0);
    for (int64_t g = 0; g < nGroups; g++) {
      __m512 a[4][4];
      for (int t = 0; t < T; t++) loadGroupLanes(acc + (t0 + t) * ldAcc + 64 * g, first, a[t]);
      const Q8_0PackedRows rows{x + g * nb};
      const BlockQ8_0* yt = y + t0 * ldY;
      switch (T) {
        case 1: q8_0EightRowsVnniTokens<1>(nb, a, rows, yt, ldY); break;
        case 2: q8_0EightRowsVnniTokens<2>(nb, a, rows, yt, ldY); break;
        case 3: q8_0EightRowsVnniTokens<3>(nb, a, rows, yt, ldY); break;
        default: q8_0EightRowsVnniTokens<4>(nb, a, rows, yt, ldY); break;
      }
      for (int t = 0; t < T; t++) storeGroupLanes(a[t], s ? s + (t0 + t) * ldS + 8 * g : nullptr, acc + (t0 + t) * ldAcc + 64 * g);
    }
  }
}

// Decode of super-groups [sg0, sg1): the whole ones as two streams half the range apart
// (simd::halfApart; Zen 5, against one stream a thread: 2 threads of 5632 x 2048 from memory
// 0.85-0.97 of the time, kernel-timer --compare; TinyLlama Q8_0 decode@0 in fast-memory minutes,
// 80-82 GB/s, 50.9-52.4 -> 57.5-59.7 tok/s, its products reading 66-71 GB/s where they read 57-62,
// bench profile with builds alternating), each pair segment by segment; an odd one and a part
// super-group at the end alone. Every group takes the same steps either way, so the same bits.
void gemvQ8_0x8Decode_avx512(const SegmentedLayout& layout, int64_t sg0, int64_t sg1, float* s, const BlockQ8_0x8* x, const BlockQ8_0* y) {
  const int64_t superRows = 8 * layout.superGroup, nSegments = layout.segments();
  alignas(64) float acc[2][64 * kQ8SuperGroup];
  auto alone = [&](int64_t sg) {
    for (int64_t seg = 0; seg < nSegments; seg++)
      gemvQ8_0x8_avx512(layout.segmentBlocks(seg), layout.groupsIn(sg), acc[0], seg == 0, seg + 1 == nSegments ? s + sg * superRows : nullptr,
                        x + layout.segmentAt(sg, seg), y + seg * layout.span);
  };
  const int64_t whole = layout.groupsIn(sg1 - 1) == layout.superGroup ? sg1 : sg1 - 1;
  simd::halfApart(
      whole - sg0,
      [&](int64_t i, int64_t j) {
        float* accs[2] = {acc[0], acc[1]};
        float* outs[2] = {s + (sg0 + i) * superRows, s + (sg0 + j) * superRows};
        for (int64_t seg = 0; seg < nSegments; seg++) {
          const BlockQ8_0x8* xs[2] = {x + layout.segmentAt(sg0 + i, seg), x + layout.segmentAt(sg0 + j, seg)};
          gemvQ8_0x8Two(layout.segmentBlocks(seg), layout.superGroup, accs, seg == 0, seg + 1 == nSegments ? outs : nullptr, xs, y + seg * layout.span);
        }
      },
      [&](int64_t i) { alone(sg0 + i); });
  if (whole < sg1) alone(sg1 - 1);
}

// Groups in pairs (BlockQ4_0x16) on 512-bit tiles; an odd last group (BlockQ4_0x8) on the shared
// 256-bit tile. Every path gives the same bits. Up to 8 tokens (decode, a continuous-batching
// step) stream the weights from memory with prefetches (4 decode rows of TinyLlama Q4_0, tok/s against one row's: 2.6x ->
// 3.2x); prefill's chunk stays in cache for its tokens.
void gemmQ4_0x16_avx512(int64_t nb, int64_t nGroups, int64_t g0, int64_t g1, int64_t nt, float* s, int64_t ldS,
                        const BlockQ4_0x8* x, const BlockQ8_0* y, const Q8BlockSums* sums) {
  const int64_t nPairs = nGroups / 2, p1 = std::min(g1 / 2, nPairs);
  const SegmentedLayout layout{nb, nPairs, kQ4SuperPairs, kQ4SegmentBlocks};
  const BlockQ4_0x16* pairs = reinterpret_cast<const BlockQ4_0x16*>(x);
  if (nt <= kStreamTokens) q4_0x16Tiles<true>(layout, g0 / 2, p1, nt, s, ldS, pairs, y, sums);
  else q4_0x16Tiles<false>(layout, g0 / 2, p1, nt, s, ldS, pairs, y, sums);
  if (g1 > 2 * nPairs) gemmQ4_0x8<VnniSums>(nb, 1, nt, s + 8 * (2 * nPairs - g0), ldS, x + 2 * nPairs * nb, y, sums);
}

void vecDotManyQ8_0_avx512(int64_t n, int64_t nr, int64_t nt, float* s, int64_t ldS, const void* x, size_t xStride,
                           const void* y, size_t yStride) {
  if (nt == 1) {
    const char* xs = static_cast<const char*>(x);
    int64_t r = 0;
    for (; r + 8 <= nr; r += 8) q8_0EightRowsVnni(n / QK8_0, s + r, Q8_0FileRows{xs + r * xStride, xStride}, static_cast<const BlockQ8_0*>(y));
    if (r < nr) vecDotManyQ8_0_avx2(n, nr - r, 1, s + r, ldS, xs + r * xStride, xStride, y, yStride);
    return;
  }
  q8PairTiles(n, nr, nt, s, ldS, static_cast<const char*>(x), xStride, static_cast<const char*>(y), yStride);
}

// Decode reads two rows at a time, half a chunk apart, each stream asking 4 KB on
// (kF16DecodeAheadBytes). Zen 4, 2 threads of 5632 x 2048 from memory (`kernel-timer --type f16
// --threads 2 --rows 5632 --from-memory 1024 --rounds 8 --compare`), against 8 rows side by side
// asking 512 bytes on: 0.86-0.90 of the time by the median of the rounds; asking 8 KB on 0.98-0.99;
// one row at a time 0.85-0.87 (387-417 us at the fast minutes' minimum, 59 GB/s). One row is one
// chain of FMAs, 16 floats per FMA latency: 27 GB/s a thread from L2 here, and on Zen 5 an earlier
// session read one row at a time at 34.4 GB/s on 2 threads against 44.5-50.8 for the 8-row tile.
// Two chains keep twice that margin, as many floats in flight as the AVX2 tier's four streams.
constexpr int64_t kF16DecodeAheadBytes = 4096;
void vecDotManyF16_avx512(int64_t n, int64_t nr, int64_t nt, float* s, int64_t ldS, const void* x, size_t xStride,
                          const void* y, size_t yStride) {
  const TileArgs a{n, s, ldS, static_cast<const char*>(x), xStride, static_cast<const char*>(y), yStride};
  if (nt == 1) {
    FloatTile<Lanes16, F16x16, F16x16>::streams<2>(a, nr, kF16DecodeAheadBytes);
    return;
  }
  halfTiles<Lanes16, F16x16, TileF16, 8, 1, TileF16Wide, kWideRows, kWideTokens>(a, nr, nt);
}

}  // namespace kiln

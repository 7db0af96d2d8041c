// AVX-512 VNNI kernels of Q4_K, Q5_K and Q6_K matrix products, with the bits of their AVX2 row
// dots (vecDotQ4_K_avx2, vecDotQ5_K_avx2, vecDotQ6_K_avx2). Prefill: each 512-bit vector holds the
// same 32 activation values of two tokens, one per 256-bit half, and a weight row's 32 values
// broadcast to both halves. Every integer lane is then the lane of the AVX2 kernel's 256-bit vector
// for that token, and every float lane is that token's accumulator, so each entry gets exactly the
// AVX2 integers and FMAs, two tokens per instruction. vpdpwssd applies a sub-block's scale and adds
// in one step.
// Q6_K decode pairs rows instead of tokens; Q4_K and Q5_K decode take each row whole (below).
// Compiled with -mavx512f -mavx512bw -mavx512vl -mavx512vnni.
#include <immintrin.h>

#include <algorithm>
#include <type_traits>
#include <vector>

#include "quants.h"
#include "simd-avx2.h"
#include "type-traits.h"

namespace kiln {

using namespace simd;

namespace {

// The same 32 bytes of two tokens' rows, token a's in the low half.
inline __m512i pairOf(const void* a, const void* b) {
  return _mm512_inserti64x4(_mm512_castsi256_si512(load32(a)), load32(b), 1);
}

// Token k's 8-lane accumulator from its pair's vector.
inline __m256 half(__m512 v, int k) {
  return k == 0 ? _mm512_castps512_ps256(v) : _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1));
}

// Token data of one block for 4 tokens (a quad): each token's 8 sums of 32 activations (pairs of
// its 16 sums of 16, which fit int16) in one 128-bit lane, and each token's -d in the matching 4
// float lanes, for the mins; [d x 8 | d x 8] of each pair for the values.
struct QuadK {
  __m512i sums;
  __m512 negDy;
  __m512 dy[2];
};

inline QuadK quadOf(const BlockQ8_K* const* yb) {
  const __m512i ones = _mm512_set1_epi16(1);
  const __m256i sums01 = _mm512_cvtepi32_epi16(_mm512_madd_epi16(pairOf(yb[0]->bsums, yb[1]->bsums), ones));
  const __m256i sums23 = _mm512_cvtepi32_epi16(_mm512_madd_epi16(pairOf(yb[2]->bsums, yb[3]->bsums), ones));
  const __m512 d4 = _mm512_castps128_ps512(_mm_setr_ps(yb[0]->d, yb[1]->d, yb[2]->d, yb[3]->d));
  QuadK q;
  q.sums = _mm512_inserti64x4(_mm512_castsi256_si512(sums01), sums23, 1);
  q.negDy = _mm512_castsi512_ps(_mm512_xor_si512(
      _mm512_castps_si512(_mm512_permutexvar_ps(_mm512_setr_epi32(0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3), d4)),
      _mm512_set1_epi32(INT32_MIN)));
  q.dy[0] = _mm512_permutexvar_ps(_mm512_setr_epi32(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1), d4);
  q.dy[1] = _mm512_permutexvar_ps(_mm512_setr_epi32(2, 2, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3), d4);
  return q;
}

// The quads (PreparedK's groups of 4 tokens) that P token pairs take.
constexpr int quadsOf(int P) { return (P + 1) / 2; }

// What the tiles need of 4Q tokens in one block, prepared once per chunk for all its rows: each
// pair's values of every 32-value chunk c of the block (values 32c..32c+31), each pair's sums of 16
// (for Q6_K's offsets, q6KOffsetLanes), and each quad's sums and scales. Tokens [0, nReal) are
// real; the rest of the 4Q repeat the last real one, and their results are never stored.
template <int Q>
struct PreparedK {
  __m512i y[QK_K / 32][2 * Q];
  __m512i bsums[2 * Q];
  QuadK quad[Q];
};

template <int Q>
void prepareK(const char* y, size_t yStride, int nReal, int64_t nb, PreparedK<Q>* out) {
  for (int64_t b = 0; b < nb; b++) {
    const BlockQ8_K* yb[4 * Q];
    for (int t = 0; t < 4 * Q; t++) yb[t] = reinterpret_cast<const BlockQ8_K*>(y + std::min(t, nReal - 1) * yStride) + b;
    for (int q = 0; q < Q; q++) out[b].quad[q] = quadOf(yb + 4 * q);
    for (int p = 0; p < 2 * Q; p++) {
      for (int c = 0; c < QK_K / 32; c++) out[b].y[c][p] = pairOf(yb[2 * p]->qs + 32 * c, yb[2 * p + 1]->qs + 32 * c);
      out[b].bsums[p] = pairOf(yb[2 * p]->bsums, yb[2 * p + 1]->bsums);
    }
  }
}

// q6KOffsetLanes for two rows or two tokens side by side: -32 times each row's 16 scales (int16) in
// its half, against the matching half's sums of 16.
inline __m512i q6KOffsetLanesPair(__m512i negScales32, __m512i bsums) { return _mm512_madd_epi16(negScales32, bsums); }

// The sum of each 4-lane group, in all four lanes (exact: integers).
inline __m512i quadTotals(__m512i v) {
  v = _mm512_add_epi32(v, _mm512_shuffle_epi32(v, (_MM_PERM_ENUM)0x4e));
  return _mm512_add_epi32(v, _mm512_shuffle_epi32(v, (_MM_PERM_ENUM)0xb1));
}

// Q5_K's fifth bits of group g (bits 2g and 2g + 1 of each qh byte) on bit 4 of the low and high
// values, as dotScaleMinK does in 16-bit lanes. Prefill's tiles, whose unrolled groups make the
// shifts constants.
inline void addFifthBits(__m512i qh, int g, __m512i* lo, __m512i* hi) {
  const __m512i bit4 = _mm512_set1_epi8(0x10);
  *lo = _mm512_or_si512(*lo, _mm512_and_si512(_mm512_slli_epi16(_mm512_srli_epi16(qh, 2 * g), 4), bit4));
  *hi = _mm512_or_si512(*hi, _mm512_and_si512(_mm512_slli_epi16(_mm512_srli_epi16(qh, 2 * g + 1), 4), bit4));
}

// The same values by a bit test: each qh byte's bit as a mask, and 16 added where it is set (the
// nibbles are below 16, so the add is the or), the bit patterns read from memory (load-port work).
// In a loop over g the shifts above take their counts from general registers (a move to a vector
// register each). One thread, 256 rows of Q5_K x 2048 in L2 (scratch harness, minimum of 6
// alternating runs of 1000 calls), the streamed tile with this and its scales broadcast from
// memory: 2 / 4 / 8 tokens 15.4 / 19.8 / 35.0 -> 15.0 / 18.4 / 31.9 us; prefill's unrolled tile
// (16 tokens) was no faster with it.
struct FifthBitPicks {
  alignas(64) uint8_t v[8][64];  // v[k]: bit k in every byte
  constexpr FifthBitPicks() : v{} {
    for (int k = 0; k < 8; k++)
      for (int i = 0; i < 64; i++) v[k][i] = (uint8_t)(1u << k);
  }
};
inline constexpr FifthBitPicks kFifthBitPicks{};
inline void addFifthBitsMasked(__m512i qh, int g, __m512i* lo, __m512i* hi) {
  const __m512i bit4 = _mm512_set1_epi8(0x10);
  *lo = _mm512_mask_add_epi8(*lo, _mm512_test_epi8_mask(qh, _mm512_load_si512(kFifthBitPicks.v[2 * g])), *lo, bit4);
  *hi = _mm512_mask_add_epi8(*hi, _mm512_test_epi8_mask(qh, _mm512_load_si512(kFifthBitPicks.v[2 * g + 1])), *hi, bit4);
}
// Decode's (scaleMinKRow) bit patterns: its vectors hold group 2i in the low 256 bits and 2i + 1 in
// the high ones, so v[2i] picks bits 4i | 4i + 2 (the low values') and v[2i + 1] 4i + 1 | 4i + 3.
// Harness as above, one token: 10.2 -> 9.6 us (a srlv, two shifts, two ands and two ors become two
// tests and two masked adds).
struct DecodeFifthBitPicks {
  alignas(64) uint8_t v[4][64];
  constexpr DecodeFifthBitPicks() : v{} {
    for (int i = 0; i < 2; i++)
      for (int h = 0; h < 2; h++)
        for (int k = 0; k < 64; k++) v[2 * i + h][k] = (uint8_t)(1u << (4 * i + 2 * (k / 32) + h));
  }
};
inline constexpr DecodeFifthBitPicks kDecodeFifthBitPicks{};

// Stream: the weights are read once, from memory (a continuous-batching step of a few tokens), and
// would leave the arithmetic waiting on each short row: each block is asked for where the next R
// rows will need it, as decode does.
template <typename Block, int R, bool Stream>
inline void prefetchNextRows(const Block* const* xb, size_t xStride) {
  if (!Stream) return;
  for (int r = 0; r < R; r++) prefetchLines<sizeof(Block)>(xb[r], R * xStride);
}

// The first nReal of a tile's T results of row r: s[t * ldS] for token t.
template <int T>
inline void storeTokens(const float* v, int nReal, float* s, int64_t ldS) {
  for (int t = 0; t < T && t < nReal; t++) s[t * ldS] = v[t];
}

// A sub-block's scale pair in every lane. FromMemory: one broadcast load (a load-port operation)
// where the compiler otherwise extracts each of the row's 8 from a register (an extract, a move to
// a general register and a broadcast: shuffle-port work beside the nibbles' unpacking). One thread,
// 256 rows of Q4_K x 2048 in L2 (a scratch harness timing vecDotManyQ4_K_avx512, minimum of 2000
// calls): 2 tokens 13.5 -> 10.3-10.6 us, 4 tokens 17.2 -> 14.5-14.6; TinyLlama Q4_K, a forwardBatch
// step of 4 decode rows 25.1-27.9 -> 21.6-24.0 ms (alternating builds). The streamed tiles (few
// tokens) take it: prefill's 2-thread product read 1-3% less with it. Q5_K's went 14.6 -> 15.0 us
// while its fifth bits took shifts by register counts, and pays with the masked form.
template <bool FromMemory>
inline __m512i scaleOf(const uint32_t* p) {
  if constexpr (FromMemory) return _mm512_broadcastd_epi32(_mm_loadu_si32(p));
  return _mm512_set1_epi32((int)*p);
}

// R rows x 2P tokens (P pairs, in quadsOf(P) prepared quads) of Q4_K or Q5_K x Q8_K. Per block
// and row: the scales as int16 pairs for vpdpwssd, and the mins term, 4 tokens to a vector (lanes
// 4k..4k+3 are token k's): for Q4_K the 4-lane accumulators of minsTerm; for Q5_K the block's exact
// integer sum in every lane of the group and one FMA, as the AVX2 kernel's scalar one. Per group of
// 64 values the row's low and high nibbles (sub-blocks 2g and 2g + 1), with Q5_K's fifth bits.
template <typename Block, bool kFifthBit>
struct ScaleMinK {
  template <int R, int P, bool Stream>
  struct Tile {
    static constexpr int Q = quadsOf(P);
    static void run(int64_t n, int nReal, float* s, int64_t ldS, const char* x, size_t xStride, const PreparedK<Q>* tb) {
      constexpr int T = 2 * P;
      const __m512i low4 = _mm512_set1_epi8(0x0f);
      __m512 acc[R][P], accMins[R][Q];
      for (int r = 0; r < R; r++) {
        for (int q = 0; q < Q; q++) accMins[r][q] = _mm512_setzero_ps();
        for (int p = 0; p < P; p++) acc[r][p] = _mm512_setzero_ps();
      }
      for (int64_t b = 0; b < n / QK_K; b++) {
        const Block* xb[R];
        for (int r = 0; r < R; r++) xb[r] = reinterpret_cast<const Block*>(x + r * xStride) + b;
        prefetchNextRows<Block, R, Stream>(xb, xStride);
        const QuadK* quad = tb[b].quad;

        alignas(32) uint32_t sc[R][8];
  #pragma GCC unroll 8
        for (int r = 0; r < R; r++) {
          const __m128i both = scalesMinsK4(xb[r]->scales);
          const __m256i scales = _mm256_cvtepu8_epi32(both);
          _mm256_store_si256(reinterpret_cast<__m256i*>(sc[r]), _mm256_or_si256(scales, _mm256_slli_epi32(scales, 16)));
          const __m512i mins = _mm512_broadcast_i32x4(_mm_cvtepu8_epi16(_mm_srli_si128(both, 8)));
          const __m512 dmin = _mm512_set1_ps(fp16(xb[r]->dmin));
          for (int q = 0; q < Q; q++) {
            const __m512i m = _mm512_madd_epi16(mins, quad[q].sums);
            accMins[r][q] = _mm512_fmadd_ps(_mm512_mul_ps(dmin, quad[q].negDy), _mm512_cvtepi32_ps(kFifthBit ? quadTotals(m) : m), accMins[r][q]);
          }
        }

        // Through a pointer the compiler cannot see into, so sc is read back from memory (scaleOf);
        // a memory clobber instead made the accumulators go through the stack every block.
        const uint32_t(*scales)[8] = sc;
        if constexpr (Stream) __asm__("" : "+r"(scales));
        __m512i sumi[R][P];
        for (int r = 0; r < R; r++)
          for (int p = 0; p < P; p++) sumi[r][p] = _mm512_setzero_si512();
        auto group = [&](int g) {
          const __m512i* yLo = tb[b].y[2 * g];
          const __m512i* yHi = tb[b].y[2 * g + 1];
          for (int r = 0; r < R; r++) {
            const __m512i bits = _mm512_broadcast_i64x4(load32(xb[r]->qs + 32 * g));
            __m512i vLo = _mm512_and_si512(bits, low4);
            __m512i vHi = _mm512_and_si512(_mm512_srli_epi16(bits, 4), low4);
            if constexpr (kFifthBit) {
              const __m512i qh = _mm512_broadcast_i64x4(load32(xb[r]->qh));
              if constexpr (Stream) addFifthBitsMasked(qh, g, &vLo, &vHi);
              else addFifthBits(qh, g, &vLo, &vHi);
            }
            const __m512i scLo = scaleOf<Stream>(&scales[r][2 * g]), scHi = scaleOf<Stream>(&scales[r][2 * g + 1]);
            for (int p = 0; p < P; p++) {
              sumi[r][p] = _mm512_dpwssd_epi32(sumi[r][p], _mm512_maddubs_epi16(vLo, yLo[p]), scLo);
              sumi[r][p] = _mm512_dpwssd_epi32(sumi[r][p], _mm512_maddubs_epi16(vHi, yHi[p]), scHi);
            }
          }
        };
        // Prefill's tiles unroll the groups (Q5_K's fifth-bit shifts become constants: a 2-thread
        // 512 x 2048 -> 5632 product 418-421 -> 471-481 GFLOP/s, alternating; Q4_K the same); the
        // streamed few-token tiles keep the loop (unrolled, Q5_K's 2- and 4-token steps took 15%
        // longer in the harness).
        if constexpr (Stream) {
          for (int g = 0; g < QK_K / 64; g++) group(g);
        } else {
#pragma GCC unroll 4
          for (int g = 0; g < QK_K / 64; g++) group(g);
        }
        for (int r = 0; r < R; r++) {
          const __m512 dx = _mm512_set1_ps(fp16(xb[r]->d));
          for (int p = 0; p < P; p++)
            acc[r][p] = _mm512_fmadd_ps(_mm512_mul_ps(dx, quad[p / 2].dy[p % 2]), _mm512_cvtepi32_ps(sumi[r][p]), acc[r][p]);
        }
      }
      for (int r = 0; r < R; r++) {
        alignas(64) float mins[Q][16];
        for (int q = 0; q < Q; q++) _mm512_store_ps(mins[q], accMins[r][q]);
        float v[T];
        for (int t = 0; t < T; t++) {
          const float* m = mins[t / 4] + 4 * (t % 4);
          v[t] = hsum(half(acc[r][t / 2], t % 2)) + (kFifthBit ? m[0] : hsum(_mm_load_ps(m)));
        }
        storeTokens<T>(v, nReal, s + r, ldS);
      }
    }
  };
};
template <int R, int P, bool Stream>
using Q4KTile = ScaleMinK<BlockQ4_K, false>::Tile<R, P, Stream>;
template <int R, int P, bool Stream>
using Q5KTile = ScaleMinK<BlockQ5_K, true>::Tile<R, P, Stream>;

// R rows x 2P tokens of Q6_K x Q8_K. Each block's int32 lanes start from the offset of 32's
// (q6KOffsetLanes, as vecDotQ6_K_avx2's), vpdpbusd gives each lane's sum of 4 value * y (within
// int16: 4 * 63 * 128), and vpdpwssd multiplies that sum by the sub-block's scale, held in the low
// 16 bits of each lane with a zero above: the same int32 lanes as the AVX2 madd of the pair sums.
template <int R, int P, bool Stream>
struct Q6KTile {
  static constexpr int Q = quadsOf(P);
  static void run(int64_t n, int nReal, float* s, int64_t ldS, const char* x, size_t xStride, const PreparedK<Q>* tb) {
    constexpr int T = 2 * P;
    const __m512i low4 = _mm512_set1_epi8(0x0f), high2 = _mm512_set1_epi8(0x30);
    __m512 acc[R][P];
    for (int r = 0; r < R; r++)
      for (int p = 0; p < P; p++) acc[r][p] = _mm512_setzero_ps();
    for (int64_t b = 0; b < n / QK_K; b++) {
      const BlockQ6_K* xb[R];
      for (int r = 0; r < R; r++) xb[r] = reinterpret_cast<const BlockQ6_K*>(x + r * xStride) + b;
      prefetchNextRows<BlockQ6_K, R, Stream>(xb, xStride);
      // The 16 int8 scales as int32 lanes holding the scale's 16 bits; the offsets start the sums.
      __m512i scales[R];
      __m512i sumi[R][P];
      for (int r = 0; r < R; r++) {
        const __m256i sc16 = _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(xb[r]->scales)));
        scales[r] = _mm512_cvtepu16_epi32(sc16);
        const __m512i negScales = _mm512_broadcast_i64x4(q6KNegScales32(sc16));
        for (int p = 0; p < P; p++) sumi[r][p] = q6KOffsetLanesPair(negScales, tb[b].bsums[p]);
      }
      // Unrolled, so j, k and each group's scale pick are constants: left to itself GCC kept these
      // loops and built the pick and the shifts at run time every group (harness, one thread, 256
      // rows x 2048 in L2: 2 / 4 / 8 tokens 13.5 / 17.7 / 38.4 -> 11.5 / 15.6 / 29.5 us).
#pragma GCC unroll 2
      for (int h = 0; h < 2; h++) {
#pragma GCC unroll 4
        for (int k = 0; k < 4; k++) {
          // Group k of half h: values 128h + 32k.., sub-blocks j and j + 1 in its two 16s.
          const int j = 8 * h + 2 * k;
          const __m512i* yq = tb[b].y[4 * h + k];
          const __m512i pick = _mm512_setr_epi32(j, j, j, j, j + 1, j + 1, j + 1, j + 1, j, j, j, j, j + 1, j + 1, j + 1, j + 1);
          for (int r = 0; r < R; r++) {
            // Low 4 bits from ql (the low or high nibble), bits 4-5 from qh (bits 2k, 2k + 1).
            const __m512i ql = _mm512_broadcast_i64x4(load32(xb[r]->ql + 64 * h + 32 * (k % 2)));
            const __m512i qh = _mm512_broadcast_i64x4(load32(xb[r]->qh + 32 * h));
            const __m512i lowBits = k < 2 ? ql : _mm512_srli_epi16(ql, 4);
            const __m512i highBits = k == 0 ? _mm512_slli_epi16(qh, 4) : k == 1 ? _mm512_slli_epi16(qh, 2) : k == 2 ? qh : _mm512_srli_epi16(qh, 2);
            // (lowBits & 0x0f) | (highBits & 0x30)
            const __m512i v = _mm512_ternarylogic_epi32(lowBits, _mm512_and_si512(highBits, high2), low4, 0xec);
            const __m512i sc = _mm512_permutexvar_epi32(pick, scales[r]);
            for (int p = 0; p < P; p++) sumi[r][p] = _mm512_dpwssd_epi32(sumi[r][p], _mm512_dpbusd_epi32(_mm512_setzero_si512(), v, yq[p]), sc);
          }
        }
      }
      for (int r = 0; r < R; r++) {
        const __m512 dx = _mm512_set1_ps(fp16(xb[r]->d));
        for (int p = 0; p < P; p++)
          acc[r][p] = _mm512_fmadd_ps(_mm512_mul_ps(dx, tb[b].quad[p / 2].dy[p % 2]), _mm512_cvtepi32_ps(sumi[r][p]), acc[r][p]);
      }
    }
    for (int r = 0; r < R; r++) {
      float v[T];
      for (int t = 0; t < T; t++) v[t] = hsum(half(acc[r][t / 2], t % 2));
      storeTokens<T>(v, nReal, s + r, ldS);
    }
  }
};

// Decode (one token) of Q6_K: the same idea turned around. Two rows share each 512-bit vector, row
// a in the low half, and the token's 32 values are broadcast to both halves, so each half is the
// AVX2 row dot's vector for its row. The two rows are half a chunk apart (halfApart), each asking
// for its blocks kRowStreamAheadBytes on: two weight streams, as the AVX2 decode reads. Four rows
// side by side, each asking for the block 4 rows on, took 2.4 times as long from memory on Zen 4
// (2 threads, 5632 x 2048 from memory: 497 -> 203 us by the minimum, where the AVX2 tier took 220;
// from L2 one thread, 1.04 of the time).

// [a x 8 | b x 8].
inline __m512 halves(float a, float b) {
  return _mm512_castpd_ps(_mm512_insertf64x4(_mm512_castps_pd(_mm512_set1_ps(a)), _mm256_castps_pd(_mm256_set1_ps(b)), 1));
}

// Q4_K and Q5_K decode take each row whole instead: one 512-bit vector holds two groups of 64
// values (64 bytes of qs, one load, no inserts), its low nibbles sub-blocks 4i and 4i + 2 side by
// side and its high nibbles 4i + 1 and 4i + 3. The token's values are arranged to match once per
// product (DecodeY). vpdpbusd gives each int32 lane its sum of 4 products for the low and for the
// high sub-blocks (within int16); the two go into one lane as 16-bit halves, and one vpdpwssd
// multiplies each by its scale and adds both. Int32 lane l of the low 256 bits then sums what lane
// l of the AVX2 row dot sums for sub-blocks 4i and 4i + 1, and lane 8 + l for 4i + 2 and 4i + 3,
// so adding the halves gives the AVX2 lanes exactly (integers) before the conversion and the FMA.
// Per row block: 2 loads, 6 nibble operations, 4 vpdpbusd, 2 vpdpwssd, 2 scale permutes and 4
// operations to pack, against two rows paired per vector with 8 maddubs, 8 vpdpwssd, 8 permutes
// and 8 inserts per two rows. Zen 5, one thread, 512 x 2048 from L2 (GB/s, minimum time of 60
// steps of 64 products): 30.8 paired -> 34.4 whole rows with maddubs and vpdpwssd -> 36.6 with
// vpdpbusd; without the scales' multiply at all 44, without any multiply 53 (so the multiplies
// bound it); 2 threads, 5632 x 2048 from L3: 57 -> 67. The token's sub-block sums for the mins
// term are formed once per product too, not per row (one row from L2: 33.1 -> 35.4 GB/s). With
// the prefetch kRowStreamAheadBytes ahead instead of the next row, TinyLlama Q4_K decode@0 went
// 61.8 -> 70.4 tok/s (median of 8 alternating runs, Zen 5).
struct DecodeY {
  __m512i v[4];  // [sub-block 0 | 2], [1 | 3], [4 | 6], [5 | 7]
  __m128i sums;  // the 8 sub-blocks' value sums (int16), for the mins term
};

inline void prepareDecodeY(const BlockQ8_K* y, int64_t nb, DecodeY* out) {
  for (int64_t b = 0; b < nb; b++) {
    for (int i = 0; i < 2; i++)
      for (int h = 0; h < 2; h++) out[b].v[2 * i + h] = pairOf(y[b].qs + 128 * i + 32 * h, y[b].qs + 128 * i + 64 + 32 * h);
    const __m256i bsums = load32(y[b].bsums);
    out[b].sums = _mm_hadd_epi16(_mm256_castsi256_si128(bsums), _mm256_extracti128_si256(bsums, 1));
  }
}

// One row of Q4_K or Q5_K against one prepared token. The mins term in 4 lanes, as the AVX2 row
// dot's accumulator (Q5_K's as the block's exact integer sum and one FMA, see ScaleMinK). One row
// at a time reads the weights as one stream per thread; rows side by side are as many streams,
// which this VM's memory serves worse. A read-only loop with decode's pattern (2 threads, 256 KB
// chunks of 1152-byte rows, 144-byte blocks) read 39-43 GB/s one row at a time and 30-34 with 2 or
// 4 rows interleaved, where a plain stream read 48-57. TinyLlama Q4_K decode@0, 4 rows -> 1 row,
// alternating (tok/s): 49.7 -> 52.6 and 47.3 -> 49.2, although from L2 one row is 10% slower (36.6
// -> 33 GB/s, one thread).
template <typename Block, bool kFifthBit>
float scaleMinKRow(int64_t nb, const Block* x, const BlockQ8_K* y, const DecodeY* py) {
  const __m512i low4 = _mm512_set1_epi8(0x0f), bit4 = _mm512_set1_epi8(0x10);
  __m256 acc = _mm256_setzero_ps();
  __m128 accMins = _mm_setzero_ps();
  for (int64_t b = 0; b < nb; b++) {
    const Block& xb = x[b];
    prefetchLines<sizeof(Block)>(&xb, kRowStreamAheadBytes);
    // yd * [d, dmin]: the products the row dot forms in scalars.
    uint32_t bits;
    __builtin_memcpy(&bits, &xb.d, sizeof bits);
    const __m128 dd = _mm_mul_ps(_mm_cvtph_ps(_mm_cvtsi32_si128((int)bits)), _mm_set1_ps(y[b].d));
    const __m128i sm = scalesMinsK4(xb.scales);
    // Words s0..s7: dword k holds the scales of sub-blocks 2k and 2k + 1.
    const __m512i sc = _mm512_zextsi128_si512(_mm_cvtepu8_epi16(sm));
    __m128i ms = _mm_madd_epi16(_mm_cvtepu8_epi16(_mm_srli_si128(sm, 8)), py[b].sums);
    if constexpr (kFifthBit) {
      ms = _mm_add_epi32(ms, _mm_shuffle_epi32(ms, 0x4e));
      ms = _mm_add_epi32(ms, _mm_shuffle_epi32(ms, 0xb1));
    }
    // -(yd * dmin) * sum + acc: the row dot's FMA of -yd * dmin.
    accMins = _mm_fnmadd_ps(_mm_shuffle_ps(dd, dd, 0x55), _mm_cvtepi32_ps(ms), accMins);
    __m512i qh;
    if constexpr (kFifthBit) qh = _mm512_broadcast_i64x4(load32(xb.qh));
    __m512i sum;
    for (int i = 0; i < 2; i++) {
      // Lanes 0-7: the scales of sub-blocks 4i and 4i + 1; lanes 8-15: 4i + 2 and 4i + 3.
      const __m512i pick = _mm512_setr_epi32(2 * i, 2 * i, 2 * i, 2 * i, 2 * i, 2 * i, 2 * i, 2 * i, 2 * i + 1, 2 * i + 1, 2 * i + 1,
                                             2 * i + 1, 2 * i + 1, 2 * i + 1, 2 * i + 1, 2 * i + 1);
      const __m512i values = _mm512_loadu_si512(xb.qs + 64 * i);
      __m512i vLo = _mm512_and_si512(values, low4);
      __m512i vHi = _mm512_and_si512(_mm512_srli_epi16(values, 4), low4);
      if constexpr (kFifthBit) {
        // Group g's fifth bits are bits 2g (low) and 2g + 1 (high) of qh: g = 2i here, 2i + 1 above.
        vLo = _mm512_mask_add_epi8(vLo, _mm512_test_epi8_mask(qh, _mm512_load_si512(kDecodeFifthBitPicks.v[2 * i])), vLo, bit4);
        vHi = _mm512_mask_add_epi8(vHi, _mm512_test_epi8_mask(qh, _mm512_load_si512(kDecodeFifthBitPicks.v[2 * i + 1])), vHi, bit4);
      }
      // Each lane's sum of 4 products (within int16: 4 * 31 * 128), the low sub-block's in the
      // low 16 bits of a lane and the high one's above, so that one vpdpwssd applies both scales.
      const __m512i pLo = _mm512_dpbusd_epi32(_mm512_setzero_si512(), vLo, py[b].v[2 * i]);
      const __m512i pHi = _mm512_dpbusd_epi32(_mm512_setzero_si512(), vHi, py[b].v[2 * i + 1]);
      const __m512i both = _mm512_ternarylogic_epi32(pLo, _mm512_slli_epi32(pHi, 16), _mm512_set1_epi32(0xffff), 0xe4);
      const __m512i scales = _mm512_permutexvar_epi32(pick, sc);
      sum = i == 0 ? _mm512_madd_epi16(both, scales) : _mm512_dpwssd_epi32(sum, both, scales);
    }
    const __m256i lanes = _mm256_add_epi32(_mm512_castsi512_si256(sum), _mm512_extracti64x4_epi64(sum, 1));
    acc = _mm256_fmadd_ps(_mm256_broadcastss_ps(dd), _mm256_cvtepi32_ps(lanes), acc);
  }
  return hsum(acc) + (kFifthBit ? _mm_cvtss_f32(accMins) : hsum(accMins));
}

// Decode of Q4_K or Q5_K: the token arranged once, then the rows one at a time.
template <typename Block, bool kFifthBit>
int64_t scaleMinKDecode(int64_t n, int64_t nr, float* s, const void* vx, size_t xStride, const void* vy) {
  const char* x = static_cast<const char*>(vx);
  const BlockQ8_K* y = static_cast<const BlockQ8_K*>(vy);
  const int64_t nb = n / QK_K;
  thread_local std::vector<DecodeY> prepared;
  if (prepared.size() < (size_t)nb) prepared.resize((size_t)nb);
  prepareDecodeY(y, nb, prepared.data());
  for (int64_t r = 0; r < nr; r++)
    s[r] = scaleMinKRow<Block, kFifthBit>(nb, reinterpret_cast<const Block*>(x + r * xStride), y, prepared.data());
  return nr;
}

// Rows rows[0] and rows[1] against the token, their sums into *out[0] and *out[1].
void q6KRowPair(int64_t n, float* const* out, const char* const* rows, const BlockQ8_K* y) {
  const __m512i low4 = _mm512_set1_epi8(0x0f), high2 = _mm512_set1_epi8(0x30);
  __m512 acc = _mm512_setzero_ps();
  for (int64_t b = 0; b < n / QK_K; b++) {
    const BlockQ8_K& yb = y[b];
    const BlockQ6_K* xb[2];
    __m512i scales[2];
    __m256i negScales[2];
    for (int r = 0; r < 2; r++) {
      xb[r] = reinterpret_cast<const BlockQ6_K*>(rows[r]) + b;
      prefetchLines<sizeof(BlockQ6_K)>(xb[r], kRowStreamAheadBytes);
      const __m256i sc16 = _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(xb[r]->scales)));
      scales[r] = _mm512_cvtepu16_epi32(sc16);
      negScales[r] = q6KNegScales32(sc16);
    }
    const BlockQ6_K& a = *xb[0];
    const BlockQ6_K& c = *xb[1];
    // The offsets of 32 start the pair's sums (q6KOffsetLanes).
    __m512i sumi = q6KOffsetLanesPair(_mm512_inserti64x4(_mm512_castsi256_si512(negScales[0]), negScales[1], 1),
                                      _mm512_broadcast_i64x4(load32(yb.bsums)));
    for (int h = 0; h < 2; h++) {
      const __m512i qh = pairOf(a.qh + 32 * h, c.qh + 32 * h);
      for (int k = 0; k < 4; k++) {
        const int j = 8 * h + 2 * k;
        const __m512i yq = _mm512_broadcast_i64x4(load32(yb.qs + 128 * h + 32 * k));
        const __m512i pick = _mm512_setr_epi32(j, j, j, j, j + 1, j + 1, j + 1, j + 1, 16 + j, 16 + j, 16 + j, 16 + j, 17 + j, 17 + j,
                                               17 + j, 17 + j);
        const __m512i ql = pairOf(a.ql + 64 * h + 32 * (k % 2), c.ql + 64 * h + 32 * (k % 2));
        const __m512i lowBits = k < 2 ? ql : _mm512_srli_epi16(ql, 4);
        const __m512i highBits = k == 0 ? _mm512_slli_epi16(qh, 4) : k == 1 ? _mm512_slli_epi16(qh, 2) : k == 2 ? qh : _mm512_srli_epi16(qh, 2);
        const __m512i v = _mm512_ternarylogic_epi32(lowBits, _mm512_and_si512(highBits, high2), low4, 0xec);
        const __m512i sc = _mm512_permutex2var_epi32(scales[0], pick, scales[1]);
        sumi = _mm512_dpwssd_epi32(sumi, _mm512_dpbusd_epi32(_mm512_setzero_si512(), v, yq), sc);
      }
    }
    acc = _mm512_fmadd_ps(halves(yb.d * fp16(a.d), yb.d * fp16(c.d)), _mm512_cvtepi32_ps(sumi), acc);
  }
  *out[0] = hsum(half(acc, 0));
  *out[1] = hsum(half(acc, 1));
}

// One token against the rows, two half a chunk apart; the number of rows done (all but an odd
// count's last, which the caller leaves to the AVX2 row dot).
int64_t q6KDecode(int64_t n, int64_t nr, float* s, const void* vx, size_t xStride, const void* vy) {
  const BlockQ8_K* y = static_cast<const BlockQ8_K*>(vy);
  rowsHalfApart(
      nr, s, static_cast<const char*>(vx), xStride, [&](float* const* out, const char* const* in) { q6KRowPair(n, out, in, y); },
      [](float* const*, const char* const*) {});
  return nr - nr % 2;
}

// Tile<kRows, P> over one tile of 2P tokens (nReal of them real) and the rows in fours (the last
// ones Tile<1, P>); the caller walks tokens outer, so a tile's prepared tokens stay in L1 while the
// chunk's rows come from L2 (one thread, GFLOP/s, rows outer -> tokens outer: Q4_K 139 -> 147 and
// 125 -> 143, Q6_K 120 -> 129 and 112 -> 127 for 512x2048->5632 and 512x5632->2048).
constexpr int kRows = 4;
template <template <int, int, bool> class Tile, int P, bool Stream>
void walkRows(int64_t n, int64_t nr, int nReal, float* s, int64_t ldS, const char* x, size_t xStride, const PreparedK<quadsOf(P)>* tb) {
  int64_t r = 0;
  for (; r + kRows <= nr; r += kRows) Tile<kRows, P, Stream>::run(n, nReal, s + r, ldS, x + r * xStride, xStride, tb);
  for (; r < nr; r++) Tile<1, P, Stream>::run(n, nReal, s + r, ldS, x + r * xStride, xStride, tb);
}

template <template <int, int, bool> class Tile, int P>
void walkTile(int64_t n, int64_t nr, int nReal, bool stream, float* s, int64_t ldS, const char* x, size_t xStride, const char* y,
              size_t yStride) {
  constexpr int Q = quadsOf(P);
  const int64_t nb = n / QK_K;
  thread_local std::vector<PreparedK<Q>> prepared;
  if (prepared.size() < (size_t)nb) prepared.resize((size_t)nb);
  prepareK<Q>(y, yStride, nReal, nb, prepared.data());
  if (stream) walkRows<Tile, P, true>(n, nr, nReal, s, ldS, x, xStride, prepared.data());
  else walkRows<Tile, P, false>(n, nr, nReal, s, ldS, x, xStride, prepared.data());
}

// Tiles of 8 tokens (4 pairs); 2-7 left over take one tile of as many pairs as they fill, an odd
// count's last token repeated (a continuous-batching step of a few decode rows is one such tile:
// it streams its weights). A step's arithmetic grows with its pairs, not in steps of 4 tokens:
// TinyLlama on the Zen 5 VM, 2 threads, a forwardBatch of 2 decode rows took 1.62-1.72x one row's
// time padded to 4 tokens and 1.35-1.45x as one pair (Q4_K; Q5_K 1.73-1.86x -> 1.39-1.42x, Q6_K
// 1.30-1.51x -> 1.24-1.31x), 6 rows 3.0-3.1x -> 2.5-2.7x (Q4_K). Returns the number of tokens
// done, leaving a last single token to the caller.
template <template <int, int, bool> class Tile>
int64_t walkTokens(int64_t n, int64_t nr, int64_t nt, float* s, int64_t ldS, const void* x, size_t xStride, const void* y,
                   size_t yStride) {
  const char* xb = static_cast<const char*>(x);
  const char* yb = static_cast<const char*>(y);
  const bool stream = nt <= 8;
  int64_t t = 0;
  for (; t + 8 <= nt; t += 8) walkTile<Tile, 4>(n, nr, 8, stream, s + t * ldS, ldS, xb, xStride, yb + t * yStride, yStride);
  const int rest = (int)(nt - t);
  const auto walk = [&](auto pairs) {
    walkTile<Tile, decltype(pairs)::value>(n, nr, rest, stream, s + t * ldS, ldS, xb, xStride, yb + t * yStride, yStride);
  };
  switch (rest < 2 ? 0 : (rest + 1) / 2) {
    case 1: walk(std::integral_constant<int, 1>{}); break;
    case 2: walk(std::integral_constant<int, 2>{}); break;
    case 3: walk(std::integral_constant<int, 3>{}); break;
    case 4: walk(std::integral_constant<int, 4>{}); break;
    default: break;
  }
  return rest >= 2 ? nt : t;
}

// Decode through Decode (the number of rows it did), several tokens through Tile; what is left
// (Q6_K's last 1-3 rows, or a last single token) through the AVX2 kernels, which give the same bits.
using DecodeFn = int64_t (*)(int64_t, int64_t, float*, const void*, size_t, const void*);
template <template <int, int, bool> class Tile, DecodeFn Decode, VecDotManyFn Avx2>
void many(int64_t n, int64_t nr, int64_t nt, float* s, int64_t ldS, const void* x, size_t xStride, const void* y, size_t yStride) {
  if (nt == 1) {
    const int64_t r = Decode(n, nr, s, x, xStride, y);
    if (r < nr) Avx2(n, nr - r, 1, s + r, ldS, static_cast<const char*>(x) + r * xStride, xStride, y, yStride);
    return;
  }
  const int64_t done = walkTokens<Tile>(n, nr, nt, s, ldS, x, xStride, y, yStride);
  if (done < nt) Avx2(n, nr, nt - done, s + done * ldS, ldS, x, xStride, static_cast<const char*>(y) + done * yStride, yStride);
}

}  // namespace

// 4 rows x 8 tokens: one thread of 512x2048 -> 5632 (GFLOP/s, measured before the tokens were
// prepared): 4x8 143, 6x8 146, 3x8 137, 4x4 123, 2x8 120, 3x12 128.
void vecDotManyQ4_K_avx512(int64_t n, int64_t nr, int64_t nt, float* s, int64_t ldS, const void* x, size_t xStride,
                           const void* y, size_t yStride) {
  many<Q4KTile, scaleMinKDecode<BlockQ4_K, false>, vecDotManyQ4_K_avx2>(n, nr, nt, s, ldS, x, xStride, y, yStride);
}

void vecDotManyQ5_K_avx512(int64_t n, int64_t nr, int64_t nt, float* s, int64_t ldS, const void* x, size_t xStride,
                           const void* y, size_t yStride) {
  many<Q5KTile, scaleMinKDecode<BlockQ5_K, true>, vecDotManyQ5_K_avx2>(n, nr, nt, s, ldS, x, xStride, y, yStride);
}

void vecDotManyQ6_K_avx512(int64_t n, int64_t nr, int64_t nt, float* s, int64_t ldS, const void* x, size_t xStride,
                           const void* y, size_t yStride) {
  many<Q6KTile, q6KDecode, vecDotManyQ6_K_avx2>(n, nr, nt, s, ldS, x, xStride, y, yStride);
}

}  // namespace kiln

// AVX2 prefill tiles of Q4_K, Q5_K and Q6_K matrix products, with the bits of their row dots
// (vecDotQ4_K_avx2, vecDotQ5_K_avx2, vecDotQ6_K_avx2): the 256-bit counterpart of
// mat-mul-k-avx512.cpp. What a tile needs of T tokens (their values paired for the tiles, scales,
// the sums behind the mins term and Q6_K's offsets) is prepared once per chunk of rows, and
// tokens are walked outer so that they stay in L1 while the chunk's rows come from L2. Every
// (row, token) gets the row dot's int32 lanes (exact integers, in any order: here one madd takes
// two sub-blocks' sums with their two scales) and its FMAs in block order. Fewer tokens than a
// tile (decode) go to the row tiles of quants-avx2.cpp, or, for Q4_K and Q5_K rows packed as
// ScaleMinKHeader describes, to the packed row dot here; the tiles read either layout.
// Compiled with -mavx2 -mfma -mf16c.
#include <immintrin.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "mat-mul.h"
#include "quants.h"
#include "simd-avx2.h"
#include "type-traits.h"

namespace kiln {

using namespace simd;

namespace {

// What the tiles need of T tokens (T even) in one block. Both pair the values of two 32-value
// chunks of a group g of 64 (values 64g.. and 64g + 32..; a Q4_K sub-block each, or a Q6_K pair of
// sub-blocks each) the way the tiles pair the weights': 32-bit lane l of pair[g][0] holds values
// 4l, 4l + 1 of each chunk and of pair[g][1] values 4l + 2, 4l + 3 (pairWords). Each token's d is
// broadcast.
// Q4_K and Q5_K add, per pair of tokens (token 2p in the low 128 bits), the 8 sums of 32 values as
// int16 and -d in the 4 float lanes of the same half, for the mins term.
template <int T>
struct PreparedScaleMin {
  __m256i pair[QK_K / 64][2][T];
  __m256 dy[T];
  __m256i sums[T / 2];
  __m256 negDy[T / 2];
};

// Q6_K adds each token's 16 sums of 16 values, for the offset of 32 (q6KOffsetLanes).
template <int T>
struct PreparedQ6K {
  __m256i pair[QK_K / 64][2][T];
  __m256 dy[T];
  __m256i bsums[T];
};

inline const BlockQ8_K* blockOf(const char* y, size_t yStride, int t, int64_t b) {
  return reinterpret_cast<const BlockQ8_K*>(y + t * yStride) + b;
}

// 16-bit words of two vectors of bytes, 32-bit lane l of the result holding word 2l of `a` then
// of `b` (half 0) or word 2l + 1 of each (half 1).
inline __m256i pairWords(__m256i a, __m256i b, int half) {
  return half == 0 ? _mm256_blend_epi16(a, _mm256_slli_epi32(b, 16), 0xaa) : _mm256_blend_epi16(_mm256_srli_epi32(a, 16), b, 0xaa);
}

// Half `half` of a token's values of group g of one block, paired (see PreparedScaleMin).
inline __m256i tokenPair(const BlockQ8_K& yb, int g, int half) { return pairWords(load32(yb.qs + 64 * g), load32(yb.qs + 64 * g + 32), half); }

// A token's values of one block, paired, and its d.
template <typename Prepared>
void preparePairs(const BlockQ8_K& yb, int t, Prepared* out) {
  for (int g = 0; g < QK_K / 64; g++)
    for (int half = 0; half < 2; half++) out->pair[g][half][t] = tokenPair(yb, g, half);
  out->dy[t] = _mm256_set1_ps(yb.d);
}

template <int T>
void prepareScaleMin(const char* y, size_t yStride, int64_t nb, PreparedScaleMin<T>* out) {
  const __m256 signBit = _mm256_set1_ps(-0.0f);
  for (int64_t b = 0; b < nb; b++) {
    for (int t = 0; t < T; t++) preparePairs(*blockOf(y, yStride, t, b), t, &out[b]);
    for (int p = 0; p < T / 2; p++) {
      const BlockQ8_K& a = *blockOf(y, yStride, 2 * p, b);
      const BlockQ8_K& c = *blockOf(y, yStride, 2 * p + 1, b);
      out[b].sums[p] = _mm256_set_m128i(sumsOf32(c), sumsOf32(a));
      out[b].negDy[p] = _mm256_xor_ps(_mm256_set_m128(_mm_set1_ps(c.d), _mm_set1_ps(a.d)), signBit);
    }
  }
}

template <int T>
void prepareQ6K(const char* y, size_t yStride, int64_t nb, PreparedQ6K<T>* out) {
  for (int64_t b = 0; b < nb; b++)
    for (int t = 0; t < T; t++) {
      const BlockQ8_K& yb = *blockOf(y, yStride, t, b);
      preparePairs(yb, t, &out[b]);
      out[b].bsums[t] = load32(yb.bsums);
    }
}

// Pins an accumulator to a register at this point: without it GCC reassociates a block's integer
// sums into a tree that keeps every product on the stack until the block's end.
inline void keep(__m256i& v) { __asm__("" : "+x"(v)); }

// Each 4-lane group's sum in all its lanes (exact: integers).
inline __m256i quadTotals(__m256i v) {
  v = _mm256_add_epi32(v, _mm256_shuffle_epi32(v, 0x4e));
  return _mm256_add_epi32(v, _mm256_shuffle_epi32(v, 0xb1));
}

// How the Q4_K and Q5_K kernels read a row: the file's blocks, or a row packed as ScaleMinKHeader
// describes (its values already paired as the tokens' are, its scales and mins already bytes).
template <typename Block>
struct FileRows {
  static constexpr bool kPaired = false;
  const Block* blocks;
  FileRows(const char* row, int64_t) : blocks(reinterpret_cast<const Block*>(row)) {}
  __m128i scalesMins(int64_t b) const { return scalesMinsK4(blocks[b].scales); }
  const fp16_t* dAndMin(int64_t b) const { return &blocks[b].d; }
  const uint8_t* values(int64_t b) const { return blocks[b].qs; }
  const uint8_t* fifthBits(int64_t b) const { return blocks[b].qh; }
};

template <bool kFifthBit>
struct PackedRows : ScaleMinKPackedRow<kFifthBit> {
  static constexpr bool kPaired = true;
  using ScaleMinKPackedRow<kFifthBit>::ScaleMinKPackedRow;
  __m128i scalesMins(int64_t b) const { return _mm_loadu_si128(reinterpret_cast<const __m128i*>(this->header(b).scalesMins)); }
  const fp16_t* dAndMin(int64_t b) const { return &this->header(b).d; }
  const uint8_t* values(int64_t b) const { return this->nibbles(b); }
};

// One row x T tokens of Q4_K or Q5_K x Q8_K, each entry as dotScaleMinK<Block, kFifthBit> gives
// it. Per block: the scales and mins as int16 and the mins term for two tokens per vector (for Q4_K
// the 4-lane accumulators of minsTerm; for Q5_K the block's exact integer sum in every lane of a
// token's half and one FMA, as the row dot's scalar one). Per group of 64 values: the low and high
// nibbles (sub-blocks 2g and 2g + 1, Q5_K's fifth bits added) paired as the prepared tokens are;
// then per token two maddubs and one add give each sub-block's sums of 4 products side by side
// (within int16: 4 * 31 * 127), and one madd by both scales gives the int32 lanes of the row dot's
// two madds (a third fewer multiplies).
// Packed rows come paired, and take neither the pairing nor the scales' unpacking.
template <typename Rows, bool kFifthBit>
struct ScaleMinK {
  template <int T>
  static void tile(int64_t nb, float* s, int64_t ldS, const char* x, const PreparedScaleMin<T>* tb) {
    const Rows rows(x, nb);
    constexpr int P = T / 2;
    const __m256i low4 = _mm256_set1_epi8(0x0f), bit4 = _mm256_set1_epi8(0x10);
    __m256 acc[T], accMins[P];
    for (int t = 0; t < T; t++) acc[t] = _mm256_setzero_ps();
    for (int p = 0; p < P; p++) accMins[p] = _mm256_setzero_ps();
    // The scales, then the mins, of blocks b and b + 1, each block's widened one block ahead
    // (blocksOneAhead; Zen 3, kernel-timer 256 x 2048 x 32 tokens: Q4_K 1.05x, Q5_K 1.06x, and
    // Q6_K's likewise 1.03x).
    alignas(32) uint16_t smb[2][16];
    auto unpack = [&](int64_t b) {
      _mm256_store_si256(reinterpret_cast<__m256i*>(smb[b & 1]), _mm256_cvtepu8_epi16(rows.scalesMins(b)));
    };
    blocksOneAhead(nb, unpack, [&](int64_t b) {
      const PreparedScaleMin<T>& yb = tb[b];
      const fp16_t* dAndMin = rows.dAndMin(b);
      const uint16_t* sm = smb[b & 1];
      const __m256i mins = _mm256_broadcastsi128_si256(_mm_load_si128(reinterpret_cast<const __m128i*>(sm + 8)));
      const __m256 dmin = _mm256_set1_ps(fp16(dAndMin[1]));
      for (int p = 0; p < P; p++) {
        const __m256i m = _mm256_madd_epi16(mins, yb.sums[p]);
        accMins[p] = _mm256_fmadd_ps(_mm256_mul_ps(dmin, yb.negDy[p]), _mm256_cvtepi32_ps(kFifthBit ? quadTotals(m) : m), accMins[p]);
      }
      __m256i sumi[T];
      for (int t = 0; t < T; t++) sumi[t] = _mm256_setzero_si256();
#pragma GCC unroll 4
      for (int g = 0; g < QK_K / 64; g++) {
        // The low and the high nibbles (the file's sub-blocks 2g and 2g + 1; packed rows' x0 and
        // x1), each with its fifth bit (bit 2g, 2g + 1 of its byte of qh in either layout).
        const __m256i bits = load32(rows.values(b) + 32 * g);
        __m256i x0 = _mm256_and_si256(bits, low4), x1 = _mm256_and_si256(_mm256_srli_epi16(bits, 4), low4);
        if constexpr (kFifthBit) {
          const __m256i qh = load32(rows.fifthBits(b));
          x0 = _mm256_or_si256(x0, _mm256_and_si256(_mm256_slli_epi16(_mm256_srli_epi16(qh, 2 * g), 4), bit4));
          x1 = _mm256_or_si256(x1, _mm256_and_si256(_mm256_slli_epi16(_mm256_srli_epi16(qh, 2 * g + 1), 4), bit4));
        }
        if constexpr (!Rows::kPaired) {
          const __m256i lo = x0, hi = x1;
          x0 = pairWords(lo, hi, 0);
          x1 = pairWords(lo, hi, 1);
        }
        int32_t both;  // the two sub-blocks' scales side by side, as their sums are
        __builtin_memcpy(&both, &sm[2 * g], sizeof both);
        const __m256i scales = _mm256_set1_epi32(both);
        for (int t = 0; t < T; t++) {
          const __m256i sums = _mm256_add_epi16(_mm256_maddubs_epi16(x0, yb.pair[g][0][t]), _mm256_maddubs_epi16(x1, yb.pair[g][1][t]));
          sumi[t] = _mm256_add_epi32(sumi[t], _mm256_madd_epi16(sums, scales));
          keep(sumi[t]);
        }
      }
      const __m256 dx = _mm256_set1_ps(fp16(dAndMin[0]));
      for (int t = 0; t < T; t++) acc[t] = _mm256_fmadd_ps(_mm256_mul_ps(dx, yb.dy[t]), _mm256_cvtepi32_ps(sumi[t]), acc[t]);
    });
    for (int t = 0; t < T; t++) {
      const __m128 m = t % 2 ? _mm256_extractf128_ps(accMins[t / 2], 1) : _mm256_castps256_ps128(accMins[t / 2]);
      s[t * ldS] = hsum(acc[t]) + (kFifthBit ? _mm_cvtss_f32(m) : hsum(m));
    }
  }
};

// One row x T tokens of Q6_K x Q8_K, each entry as vecDotQ6_K_avx2 gives it. Per group g of 64
// values (32-value chunks 2g and 2g + 1, whose 128-bit lanes hold sub-blocks 4g, 4g + 1 and
// 4g + 2, 4g + 3): each chunk's 6-bit values, paired as the prepared tokens are, and the scales as
// those pairs need them; then per token two maddubs and one add give each chunk's sums of 4
// value * y side by side (within int16: 4 * 63 * 128), and one madd the int32 lanes of the row
// dot's two. The offset of 32 starts each block's sums, as in the row dot (q6KOffsetLanes).
template <int T>
void q6KTile(int64_t nb, float* s, int64_t ldS, const char* x, const PreparedQ6K<T>* tb) {
  const __m256i low4 = _mm256_set1_epi8(0x0f), low2 = _mm256_set1_epi8(3);
  // From 64 bits holding the int16 scales of sub-blocks j..j + 3 (j = 4g): lanes 0-3 hold scales
  // j and j + 2 (each chunk's first sub-block), lanes 4-7 scales j + 1 and j + 3.
  const __m256i spread = _mm256_setr_epi8(0, 1, 4, 5, 0, 1, 4, 5, 0, 1, 4, 5, 0, 1, 4, 5, 2, 3, 6, 7, 2, 3, 6, 7, 2, 3, 6, 7, 2, 3, 6, 7);
  __m256 acc[T];
  for (int t = 0; t < T; t++) acc[t] = _mm256_setzero_ps();
  alignas(32) int16_t scb[2][16];  // blocks b and b + 1, widened one block ahead (see ScaleMinK)
  auto unpack = [&](int64_t b) {
    _mm256_store_si256(reinterpret_cast<__m256i*>(scb[b & 1]),
                       _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(reinterpret_cast<const BlockQ6_K*>(x)[b].scales))));
  };
  blocksOneAhead(nb, unpack, [&](int64_t b) {
    const PreparedQ6K<T>& yb = tb[b];
    const BlockQ6_K& xb = reinterpret_cast<const BlockQ6_K*>(x)[b];
    const int16_t* sc = scb[b & 1];
    const __m256i negScales = q6KNegScales32(_mm256_load_si256(reinterpret_cast<const __m256i*>(sc)));
    __m256i sumi[T];
    for (int t = 0; t < T; t++) sumi[t] = q6KOffsetLanes(negScales, yb.bsums[t]);
#pragma GCC unroll 4
    for (int g = 0; g < QK_K / 64; g++) {
      // Chunk c = 2g + i is group k = c % 4 of half h = c / 4: low bits from ql (the low or high
      // nibbles), bits 4-5 from qh (bits 2k, 2k + 1).
      const int h = g / 2;
      const __m256i qh = load32(xb.qh + 32 * h);
      __m256i v[2];
      for (int i = 0; i < 2; i++) {
        const int k = 2 * (g % 2) + i;
        const __m256i ql = load32(xb.ql + 64 * h + 32 * (k % 2));
        const __m256i lowBits = k < 2 ? ql : _mm256_srli_epi16(ql, 4);
        const __m256i highBits = k == 0 ? qh : _mm256_srli_epi16(qh, 2 * k);
        v[i] = _mm256_or_si256(_mm256_and_si256(lowBits, low4), _mm256_slli_epi16(_mm256_and_si256(highBits, low2), 4));
      }
      const __m256i x0 = pairWords(v[0], v[1], 0), x1 = pairWords(v[0], v[1], 1);
      int64_t four;
      __builtin_memcpy(&four, &sc[4 * g], sizeof four);
      const __m256i scales = _mm256_shuffle_epi8(_mm256_set1_epi64x(four), spread);
      for (int t = 0; t < T; t++) {
        const __m256i products = _mm256_add_epi16(_mm256_maddubs_epi16(x0, yb.pair[g][0][t]), _mm256_maddubs_epi16(x1, yb.pair[g][1][t]));
        sumi[t] = _mm256_add_epi32(sumi[t], _mm256_madd_epi16(products, scales));
        keep(sumi[t]);
      }
    }
    const __m256 dx = _mm256_set1_ps(fp16(xb.d));
    for (int t = 0; t < T; t++) acc[t] = _mm256_fmadd_ps(_mm256_mul_ps(dx, yb.dy[t]), _mm256_cvtepi32_ps(sumi[t]), acc[t]);
  });
  for (int t = 0; t < T; t++) s[t * ldS] = hsum(acc[t]);
}

// The three types as the walk takes them: the prepared token data, how to prepare it, the tile.
template <typename Rows, bool kFifthBit>
struct ScaleMinKind {
  template <int T>
  using Prepared = PreparedScaleMin<T>;
  template <int T>
  static void prepare(const char* y, size_t yStride, int64_t nb, Prepared<T>* out) {
    prepareScaleMin<T>(y, yStride, nb, out);
  }
  template <int T>
  static void tile(int64_t nb, float* s, int64_t ldS, const char* x, const Prepared<T>* tb) {
    ScaleMinK<Rows, kFifthBit>::template tile<T>(nb, s, ldS, x, tb);
  }
};
using Q4KKind = ScaleMinKind<FileRows<BlockQ4_K>, false>;
using Q5KKind = ScaleMinKind<FileRows<BlockQ5_K>, true>;
using PackedQ4KKind = ScaleMinKind<PackedRows<false>, false>;
using PackedQ5KKind = ScaleMinKind<PackedRows<true>, true>;

struct Q6KKind {
  template <int T>
  using Prepared = PreparedQ6K<T>;
  template <int T>
  static void prepare(const char* y, size_t yStride, int64_t nb, Prepared<T>* out) {
    prepareQ6K<T>(y, yStride, nb, out);
  }
  template <int T>
  static void tile(int64_t nb, float* s, int64_t ldS, const char* x, const Prepared<T>* tb) {
    q6KTile<T>(nb, s, ldS, x, tb);
  }
};

// Rows ahead of the one in the tile that a streaming walk asks for.
constexpr int64_t kStreamRowsAhead = 2;

// Tokens [t0, t1) in steps of T: each step is prepared once, then meets the chunk's rows one by one.
// Stream: the weights are read once, from memory (a continuous-batching step of a few tokens), and
// the arithmetic would otherwise wait on every row: each row is asked for whole two rows ahead.
template <typename Kind, int T, bool Stream = false>
void walk(int64_t nb, int64_t nr, int64_t t0, int64_t t1, float* s, int64_t ldS, const char* x, size_t xStride, const char* y,
          size_t yStride) {
  thread_local std::vector<typename Kind::template Prepared<T>> prepared;
  if (prepared.size() < (size_t)nb) prepared.resize((size_t)nb);
  for (int64_t t = t0; t < t1; t += T) {
    Kind::template prepare<T>(y + t * yStride, yStride, nb, prepared.data());
    for (int64_t r = 0; r < nr; r++) {
      if (Stream && r + kStreamRowsAhead < nr) {
        const char* ahead = x + (r + kStreamRowsAhead) * xStride;
        for (size_t l = 0; l < xStride; l += 64) _mm_prefetch(ahead + l, _MM_HINT_T0);
      }
      Kind::template tile<T>(nb, s + t * ldS + r, ldS, x + r * xStride, prepared.data());
    }
  }
}

// A continuous-batching step of 2-8 tokens: one tile of T (2, 4, 6 or 8: its pairs of tokens) with
// an odd count's last token repeated to fill it, streamed, through copies of the activations and
// results (a few kilobytes), so the tiles stay as they are. Every token keeps its bits: the tiles
// compute each token on its own.
template <typename Kind, int T>
void padded(int64_t nb, int64_t nr, int64_t nt, float* s, int64_t ldS, const char* x, size_t xStride, const char* y, size_t yStride) {
  thread_local std::vector<char> ys;
  thread_local std::vector<float> out;
  ys.resize(T * yStride);
  out.resize((size_t)(T * nr));
  for (int64_t t = 0; t < T; t++) std::memcpy(ys.data() + t * yStride, y + std::min(t, nt - 1) * yStride, yStride);
  walk<Kind, T, true>(nb, nr, 0, T, out.data(), nr, x, xStride, ys.data(), yStride);
  for (int64_t t = 0; t < nt; t++) std::memcpy(s + t * ldS, out.data() + t * nr, nr * sizeof(float));
}

// A step of 2-8 tokens as one padded, streamed tile of as many pairs as it fills: its arithmetic
// grows with its pairs, not in steps of 4 tokens (TinyLlama Q4_K on the Zen 5 VM, 2 threads, a
// forwardBatch of 2 decode rows took 1.80-2.05x one row's time padded to 4 tokens, 1.31-1.34x as
// one pair; 6 rows 3.8x -> 2.9x). More (prefill): tiles of 8 tokens, then one of 4 where 4-7 are
// left, then the rest (1-3 tokens), and decode, through `few`, the row tiles with the same bits.
// One thread of 512x2048 -> 5632, GFLOP per CPU second, Q4_K / Q5_K / Q6_K, tile shapes (rows x
// tokens) measured with a madd per sub-block:
// 1x8 119 / 104 / 96, 1x10 122 / 107 / 93, 1x12 122 / 111 / 87, 2x4 105 / 85 / 80, 2x8 109 / 98 / 85,
// 3x4 101 / 90 / 82; 1x8 with the pairs' one madd 125 / 117 / 109; the row tiles alone 72 / 64 / 50.
template <typename Kind>
void many(int64_t n, int64_t nr, int64_t nt, float* s, int64_t ldS, const void* vx, size_t xStride, const void* vy,
          size_t yStride, VecDotManyFn few) {
  const char* x = static_cast<const char*>(vx);
  const char* y = static_cast<const char*>(vy);
  const int64_t nb = n / QK_K, eights = nt / 8 * 8, fours = nt / 4 * 4;
  switch (nt >= 2 && nt <= 8 ? (nt + 1) / 2 : 0) {
    case 1: return padded<Kind, 2>(nb, nr, nt, s, ldS, x, xStride, y, yStride);
    case 2: return padded<Kind, 4>(nb, nr, nt, s, ldS, x, xStride, y, yStride);
    case 3: return padded<Kind, 6>(nb, nr, nt, s, ldS, x, xStride, y, yStride);
    case 4: return padded<Kind, 8>(nb, nr, nt, s, ldS, x, xStride, y, yStride);
    default: break;
  }
  walk<Kind, 8>(nb, nr, 0, eights, s, ldS, x, xStride, y, yStride);
  walk<Kind, 4>(nb, nr, eights, fours, s, ldS, x, xStride, y, yStride);
  if (fours < nt) few(n, nr, nt - fours, s + fours * ldS, ldS, vx, xStride, y + fours * yStride, yStride);
}

// One token as the packed Q4_K and Q5_K row dot takes it, block by block: its values paired as the packed
// rows' nibbles are (as PreparedScaleMin pairs them), its sums of 32 for the mins term, its d.
struct PreparedToken {
  __m256i pair[QK_K / 64][2];
  __m128i sums;
  float d;
};

void prepareToken(const BlockQ8_K* y, int64_t nb, PreparedToken* out) {
  for (int64_t b = 0; b < nb; b++) {
    for (int g = 0; g < QK_K / 64; g++)
      for (int half = 0; half < 2; half++) out[b].pair[g][half] = tokenPair(y[b], g, half);
    out[b].sums = sumsOf32(y[b]);
    out[b].d = y[b].d;
  }
}

// R packed Q4_K or Q5_K rows x one token, each with the bits of the file layout's row dot
// (scaleMinKTile<Block, kFifthBit, 1> in quants-avx2.cpp, dotScaleMinK): per block the same mins
// term (Q4_K in 4 lanes, Q5_K as one exact integer and a scalar FMA), the same int32 lanes (here
// per group of 64 values two maddubs, an add and one madd by both scales, against two madds and
// two scale shuffles) and the same FMA. Each row is a weight stream of its own, asked for
// kRowStreamAheadBytes ahead, as the file layout's is. Decode takes rows two at a time, half a
// chunk apart (halfApart): one row's blocks, one after another, left each block's arithmetic
// waiting on the last's. Zen 3, decode steps alternating in one process, 2 rows against 1:
// TinyLlama Q4_K 0.90-0.92 of the time, Q5_K 0.94-0.97, Qwen3-0.6B Q4_K 0.94.
template <bool kFifthBit, int R>
void packedScaleMinKRows(int64_t nb, float* const* s, const char* const* rows, const PreparedToken* tb) {
  using Rows = PackedRows<kFifthBit>;
  constexpr size_t kBlockBytes = sizeof(ScaleMinKHeader) + Rows::kValueBytes;
  const __m256i low4 = _mm256_set1_epi8(0x0f), bit4 = _mm256_set1_epi8(0x10);
  Rows xs[R];
  __m256 acc[R];
  __m128 accMins[R];
  float summs[R];
  for (int r = 0; r < R; r++) {
    xs[r] = Rows(rows[r], nb);
    acc[r] = _mm256_setzero_ps();
    accMins[r] = _mm_setzero_ps();
    summs[r] = 0.0f;
  }
  for (int64_t b = 0; b < nb; b++) {
    for (int r = 0; r < R; r++) {
      const Rows& x = xs[r];
      prefetchLines<kBlockBytes>(rows[r] + kBlockBytes * b, kRowStreamAheadBytes);
      const __m128i sm = x.scalesMins(b);
      alignas(32) uint16_t sc[16];
      _mm256_store_si256(reinterpret_cast<__m256i*>(sc), _mm256_cvtepu8_epi16(sm));
      int32_t halves;
      std::memcpy(&halves, x.dAndMin(b), sizeof halves);
      // Lane 0 y.d * d, lane 1 y.d * dmin, as the file layout's kernel has them.
      const __m128 scale = _mm_mul_ps(_mm_set1_ps(tb[b].d), _mm_cvtph_ps(_mm_cvtsi32_si128(halves)));
      const __m128i mins16 = _mm_cvtepu8_epi16(_mm_unpackhi_epi64(sm, sm));
      const __m128 minScale = _mm_permute_ps(scale, 0x55);
      if constexpr (kFifthBit) summs[r] = fmaSingle(-_mm_cvtss_f32(minScale), (float)minsSum(mins16, tb[b].sums), summs[r]);
      else accMins[r] = minsTermNeg(mins16, tb[b].sums, minScale, accMins[r]);
      const uint8_t* qs = x.values(b);
      __m256i qh;
      if constexpr (kFifthBit) qh = _mm256_load_si256(reinterpret_cast<const __m256i*>(x.fifthBits(b)));
      __m256i sumi = _mm256_setzero_si256();
      for (int g = 0; g < QK_K / 64; g++) {
        const __m256i bits = _mm256_load_si256(reinterpret_cast<const __m256i*>(qs + 32 * g));
        __m256i x0 = _mm256_and_si256(bits, low4), x1 = _mm256_and_si256(_mm256_srli_epi16(bits, 4), low4);
        if constexpr (kFifthBit) {
          // Group g's bits 2g and 2g + 1 of each byte at bits 0 and 1 (qh shifted right by 2 after
          // each group), landed on bit 4 by a shift left by 4 and by 3.
          x0 = _mm256_or_si256(x0, _mm256_and_si256(_mm256_slli_epi16(qh, 4), bit4));
          x1 = _mm256_or_si256(x1, _mm256_and_si256(_mm256_slli_epi16(qh, 3), bit4));
          qh = _mm256_srli_epi16(qh, 2);
        }
        int32_t both;  // the two sub-blocks' scales side by side, as their sums are
        std::memcpy(&both, &sc[2 * g], sizeof both);
        const __m256i sums = _mm256_add_epi16(_mm256_maddubs_epi16(x0, tb[b].pair[g][0]), _mm256_maddubs_epi16(x1, tb[b].pair[g][1]));
        sumi = _mm256_add_epi32(sumi, _mm256_madd_epi16(sums, _mm256_set1_epi32(both)));
      }
      acc[r] = _mm256_fmadd_ps(_mm256_broadcastss_ps(scale), _mm256_cvtepi32_ps(sumi), acc[r]);
    }
  }
  for (int r = 0; r < R; r++) *s[r] = kFifthBit ? hsum(acc[r]) + summs[r] : hsum(acc[r]) + hsum(accMins[r]);
}

// Decode, and the 1-3 tokens a prefill leaves after its tiles: each token prepared once for all
// the rows; then decode's rows two at a time, half the chunk apart (see packedScaleMinKRows), and a
// few tokens row after row, token after token.
template <bool kFifthBit>
void packedScaleMinKFew(int64_t n, int64_t nr, int64_t nt, float* s, int64_t ldS, const void* vx, size_t xStride, const void* vy,
                        size_t yStride) {
  const int64_t nb = n / QK_K;
  thread_local std::vector<PreparedToken> prepared;
  if (prepared.size() < (size_t)(nt * nb)) prepared.resize((size_t)(nt * nb));
  for (int64_t t = 0; t < nt; t++)
    prepareToken(reinterpret_cast<const BlockQ8_K*>(static_cast<const char*>(vy) + t * yStride), nb, prepared.data() + t * nb);
  const char* x = static_cast<const char*>(vx);
  auto one = [&](int64_t r, int64_t t) {
    float* out[1] = {s + t * ldS + r};
    const char* in[1] = {x + r * xStride};
    packedScaleMinKRows<kFifthBit, 1>(nb, out, in, prepared.data() + t * nb);
  };
  if (nt == 1) {
    rowsHalfApart(
        nr, s, x, xStride, [&](float* const* out, const char* const* in) { packedScaleMinKRows<kFifthBit, 2>(nb, out, in, prepared.data()); },
        [&](float* const* out, const char* const* in) { packedScaleMinKRows<kFifthBit, 1>(nb, out, in, prepared.data()); });
    return;
  }
  for (int64_t r = 0; r < nr; r++)
    for (int64_t t = 0; t < nt; t++) one(r, t);
}

}  // namespace

// Each group's nibbles (and Q5_K's fifth bits) paired by the same pairWords that pairs the tokens'
// values, 32 at a time: a scalar loop over the nibbles took TinyLlama Q4_K's load from 0.3 s to
// 1.4-3.7 s.
void packScaleMinK_avx2(bool fifthBit, const void* src, int64_t rows, int64_t nb, uint8_t* dst) {
  const __m256i low4 = _mm256_set1_epi8(0x0f), one = _mm256_set1_epi8(1);
  const size_t blockBytes = fifthBit ? sizeof(BlockQ5_K) : sizeof(BlockQ4_K);
  const int64_t stride = scaleMinKPackedRowBytes(fifthBit, nb), valueBytes = scaleMinKValueBytes(fifthBit);
  for (int64_t r = 0; r < rows; r++) {
    uint8_t* row = dst + r * stride;
    std::memset(row, 0, (size_t)scaleMinKHeaderBytes(nb));
    ScaleMinKHeader* headers = reinterpret_cast<ScaleMinKHeader*>(row);
    for (int64_t b = 0; b < nb; b++) {
      // Q4_K and Q5_K blocks start alike: d, dmin, the 12 bytes of scales; then Q5_K's qh.
      const uint8_t* block = static_cast<const uint8_t*>(src) + (size_t)(r * nb + b) * blockBytes;
      const BlockQ4_K& head = *reinterpret_cast<const BlockQ4_K*>(block);
      headers[b].d = head.d;
      headers[b].dmin = head.dmin;
      unpackScalesMinsK4(head.scales, headers[b].scalesMins);
      const uint8_t* qs = fifthBit ? reinterpret_cast<const BlockQ5_K*>(block)->qs : head.qs;
      uint8_t* out = row + scaleMinKHeaderBytes(nb) + valueBytes * b;
      __m256i qhOut = _mm256_setzero_si256();
      const __m256i qh = fifthBit ? load32(reinterpret_cast<const BlockQ5_K*>(block)->qh) : _mm256_setzero_si256();
      for (int g = 0; g < QK_K / 64; g++) {
        const __m256i bits = load32(qs + 32 * g);
        const __m256i lo = _mm256_and_si256(bits, low4), hi = _mm256_and_si256(_mm256_srli_epi16(bits, 4), low4);
        const __m256i x0 = pairWords(lo, hi, 0), x1 = pairWords(lo, hi, 1);
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + (fifthBit ? QK_K / 8 : 0) + 32 * g), _mm256_or_si256(x0, _mm256_slli_epi16(x1, 4)));
        if (fifthBit) {
          // lo's and hi's fifth bits as bytes of 0 or 1, paired as the nibbles are, back at bits
          // 2g and 2g + 1.
          const __m256i f0 = _mm256_and_si256(_mm256_srli_epi16(qh, 2 * g), one), f1 = _mm256_and_si256(_mm256_srli_epi16(qh, 2 * g + 1), one);
          qhOut = _mm256_or_si256(qhOut, _mm256_sll_epi16(pairWords(f0, f1, 0), _mm_cvtsi32_si128(2 * g)));
          qhOut = _mm256_or_si256(qhOut, _mm256_sll_epi16(pairWords(f0, f1, 1), _mm_cvtsi32_si128(2 * g + 1)));
        }
      }
      if (fifthBit) _mm256_storeu_si256(reinterpret_cast<__m256i*>(out), qhOut);
    }
  }
}

void vecDotManyQ4_KPacked_avx2(int64_t n, int64_t nr, int64_t nt, float* s, int64_t ldS, const void* x, size_t xStride,
                               const void* y, size_t yStride) {
  many<PackedQ4KKind>(n, nr, nt, s, ldS, x, xStride, y, yStride, packedScaleMinKFew<false>);
}

void vecDotManyQ5_KPacked_avx2(int64_t n, int64_t nr, int64_t nt, float* s, int64_t ldS, const void* x, size_t xStride,
                               const void* y, size_t yStride) {
  many<PackedQ5KKind>(n, nr, nt, s, ldS, x, xStride, y, yStride, packedScaleMinKFew<true>);
}

void vecDotManyQ4_K_avx2(int64_t n, int64_t nr, int64_t nt, float* s, int64_t ldS, const void* x, size_t xStride,
                         const void* y, size_t yStride) {
  many<Q4KKind>(n, nr, nt, s, ldS, x, xStride, y, yStride, vecDotFewQ4_K_avx2);
}

void vecDotManyQ5_K_avx2(int64_t n, int64_t nr, int64_t nt, float* s, int64_t ldS, const void* x, size_t xStride,
                         const void* y, size_t yStride) {
  many<Q5KKind>(n, nr, nt, s, ldS, x, xStride, y, yStride, vecDotFewQ5_K_avx2);
}

void vecDotManyQ6_K_avx2(int64_t n, int64_t nr, int64_t nt, float* s, int64_t ldS, const void* x, size_t xStride,
                         const void* y, size_t yStride) {
  many<Q6KKind>(n, nr, nt, s, ldS, x, xStride, y, yStride, vecDotFewQ6_K_avx2);
}

}  // namespace kiln

// AVX2 + FMA + F16C dot products, chosen at start-up when cpuFeatures() reports all three; each one
// is tested against its _generic definition. Integer dots follow llama.cpp: unsigned x signed byte
// products with _mm256_maddubs_epi16, widened and weighted with _mm256_madd_epi16.
// This file is compiled with -mavx2 -mfma -mf16c: it must not call an inline function with external
// linkage from a shared header (fp16ToFloat and friends), see quants.h.
#include <immintrin.h>

#include <cstring>

#include "quants.h"
#include "simd-avx2.h"

namespace kiln {

using namespace simd;

namespace {

// Sum of products of 32 signed bytes, as 8 floats. maddubs multiplies unsigned by signed bytes, so
// x's signs move onto y; |x| <= 127 (or -128 read as 128) keeps every pair sum within int16.
__m256 dotI8(__m256i x, __m256i y) {
  const __m256i pairs = _mm256_maddubs_epi16(_mm256_sign_epi8(x, x), _mm256_sign_epi8(y, x));
  return _mm256_cvtepi32_ps(_mm256_madd_epi16(pairs, _mm256_set1_epi16(1)));
}


// Four independent accumulators, so that FMA latency does not bound the loop before memory does.
template <typename T, __m256 (*load)(const T*), float (*scalar)(T)>
float dotFloat(int64_t n, const T* x, const T* y) {
  __m256 acc[4] = {_mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps()};
  int64_t i = 0;
  for (; i + 32 <= n; i += 32)
    for (int k = 0; k < 4; k++) acc[k] = _mm256_fmadd_ps(load(x + i + 8 * k), load(y + i + 8 * k), acc[k]);
  for (; i + 8 <= n; i += 8) acc[0] = _mm256_fmadd_ps(load(x + i), load(y + i), acc[0]);
  float sum = hsum(_mm256_add_ps(_mm256_add_ps(acc[0], acc[1]), _mm256_add_ps(acc[2], acc[3])));
  for (; i < n; i++) sum += scalar(x[i]) * scalar(y[i]);
  return sum;
}

float identity(float v) { return v; }

// The 8 mins of scalesMinsK4's bytes (sm[8..16)) widened to int16.
__m128i minsOf(const uint8_t* sm) { return _mm_cvtepu8_epi16(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(sm + 8))); }

// Q4_K and Q5_K: the part of the dot product carried by the mins, dmin * sum_j(min_j * sum(y_j)),
// from the 6-bit mins in sm[8..16) and the Q8_K block's sums of 16.
__m128 minsTerm(const uint8_t* sm, const BlockQ8_K& y, float dmin, __m128 acc) {
  return minsTermNeg(minsOf(sm), sumsOf32(y), _mm_set1_ps(-dmin), acc);
}

// Q4_K and Q5_K: per 64 values, 32 bytes of low nibbles (sub-block 2g) and high nibbles (sub-block
// 2g + 1). The values are unsigned, so maddubs takes them directly and the mins come in through
// bsums. Q5_K's fifth bit of value l of group g is bit 2g (low half) or 2g + 1 (high half) of
// qh[l]: shifting 16-bit lanes right by that bit and left by 4 lands each byte's bit on its own
// bit 4, which a 0x10 mask keeps.
template <typename Block, bool kFifthBit>
float dotScaleMinK(int64_t n, const Block* x, const BlockQ8_K* y) {
  const __m256i low4 = _mm256_set1_epi8(0x0f);
  const __m256i bit4 = _mm256_set1_epi8(0x10);
  __m256 acc = _mm256_setzero_ps();
  __m128 accMins = _mm_setzero_ps();
  float summs = 0.0f;
  for (int64_t b = 0; b < n / QK_K; b++) {
    alignas(16) uint8_t sm[16];
    _mm_store_si128(reinterpret_cast<__m128i*>(sm), scalesMinsK4(x[b].scales));
    if constexpr (kFifthBit) {
      // llama.cpp's AVX2 Q5_K (no repacked layout) sums a block's mins term as one integer and
      // adds it into a scalar with one fused step; matching that keeps its logits to ~1e-6.
      summs = fmaSingle(-y[b].d * fp16(x[b].dmin), (float)minsSum(minsOf(sm), sumsOf32(y[b])), summs);
    } else {
      accMins = minsTerm(sm, y[b], -y[b].d * fp16(x[b].dmin), accMins);
    }
    const int8_t* q8 = y[b].qs;
    __m256i sumi = _mm256_setzero_si256();
    for (int g = 0; g < QK_K / 64; g++) {
      const __m256i bits = load32(x[b].qs + 32 * g);
      __m256i vLo = _mm256_and_si256(bits, low4);
      __m256i vHi = _mm256_and_si256(_mm256_srli_epi16(bits, 4), low4);
      if constexpr (kFifthBit) {
        const __m256i qh = load32(x[b].qh);
        vLo = _mm256_or_si256(vLo, _mm256_and_si256(_mm256_slli_epi16(_mm256_srli_epi16(qh, 2 * g), 4), bit4));
        vHi = _mm256_or_si256(vHi, _mm256_and_si256(_mm256_slli_epi16(_mm256_srli_epi16(qh, 2 * g + 1), 4), bit4));
      }
      const __m256i lo = _mm256_maddubs_epi16(vLo, load32(q8 + 64 * g));
      const __m256i hi = _mm256_maddubs_epi16(vHi, load32(q8 + 64 * g + 32));
      sumi = _mm256_add_epi32(sumi, _mm256_madd_epi16(lo, _mm256_set1_epi16(sm[2 * g])));
      sumi = _mm256_add_epi32(sumi, _mm256_madd_epi16(hi, _mm256_set1_epi16(sm[2 * g + 1])));
    }
    acc = _mm256_fmadd_ps(_mm256_set1_ps(y[b].d * fp16(x[b].d)), _mm256_cvtepi32_ps(sumi), acc);
  }
  return kFifthBit ? hsum(acc) + summs : hsum(acc) + hsum(accMins);
}

// The byte shuffle that takes int16 word a of the low 128-bit lane to all of that lane's words,
// and word b of the high lane to all of its.
inline __m256i pickWords(int a, int b) {
  const char a0 = (char)(2 * a), a1 = (char)(2 * a + 1), b0 = (char)(2 * b), b1 = (char)(2 * b + 1);
  return _mm256_setr_epi8(a0, a1, a0, a1, a0, a1, a0, a1, a0, a1, a0, a1, a0, a1, a0, a1, b0, b1, b0, b1, b0, b1, b0, b1, b0, b1, b0, b1,
                          b0, b1, b0, b1);
}

// One row x T tokens of Q4_K or Q5_K x Q8_K, each entry with the bits of dotScaleMinK<Block,
// kFifthBit>: a block's scales, mins and values (Q5_K's fifth bits included) are unpacked once for
// the T tokens (a third of the work of a row's dot), and each token then does the same integer sums
// and the same FMAs, the mins term in each type's own way. Decode (T = 1) reads the row as the
// thread's one weight stream (see rowTiles), each block asked for kRowStreamAheadBytes ahead.
// sums32, where given (one token), holds the token's sumsOf32 per block, made once for all rows.
template <typename Block, bool kFifthBit, int T>
void scaleMinKTile(int64_t n, float* s, int64_t ldS, const char* x, const char* y, size_t yStride, const __m128i* sums32) {
  const __m256i low4 = _mm256_set1_epi8(0x0f);
  const __m256i bit4 = _mm256_set1_epi8(0x10);
  __m256 acc[T];
  __m128 accMins[T];
  float summs[T];
  for (int t = 0; t < T; t++) acc[t] = _mm256_setzero_ps(), accMins[t] = _mm_setzero_ps(), summs[t] = 0.0f;
  for (int64_t b = 0; b < n / QK_K; b++) {
    const Block* xb = reinterpret_cast<const Block*>(x) + b;
    const BlockQ8_K* yb[T];
    for (int t = 0; t < T; t++) yb[t] = reinterpret_cast<const BlockQ8_K*>(y + t * yStride) + b;
    if (T == 1) prefetchLines<sizeof(Block)>(xb, kRowStreamAheadBytes);
    // The 8 scales as int16 in both 128-bit lanes: each sub-block's is then one byte shuffle (a
    // broadcast of a 16-bit element compiled to an align and a broadcast per sub-block).
    const __m128i packed = scalesMinsK4(xb->scales);
    const __m256i sc16 = _mm256_broadcastsi128_si256(_mm_cvtepu8_epi16(packed));
    // d and dmin (the block's first two halves) in one conversion, times each token's scale: lane 0
    // y.d * d, lane 1 y.d * dmin, the products the scalar steps took (the mins' negated in the FMA),
    // and Q4_K's mins straight from the register. Zen 3, TinyLlama Q4_K decode at the AVX2 tier,
    // steps alternating with the scalar conversions and the mins stored and read back: 0.955-0.968
    // of the time (a kernel that skipped the mins term altogether, wrong sums, took 0.935).
    int32_t halves;
    std::memcpy(&halves, &xb->d, sizeof(halves));
    const __m128 dBoth = _mm_cvtph_ps(_mm_cvtsi32_si128(halves));
    __m128 scale[T];
    for (int t = 0; t < T; t++) scale[t] = _mm_mul_ps(_mm_set1_ps(yb[t]->d), dBoth);
    const __m128i mins16 = _mm_cvtepu8_epi16(_mm_unpackhi_epi64(packed, packed));
    for (int t = 0; t < T; t++) {
      const __m128 minScale = _mm_permute_ps(scale[t], 0x55);
      const __m128i sums = T == 1 && sums32 ? sums32[b] : sumsOf32(*yb[t]);
      if constexpr (kFifthBit) summs[t] = fmaSingle(-_mm_cvtss_f32(minScale), (float)minsSum(mins16, sums), summs[t]);
      else accMins[t] = minsTermNeg(mins16, sums, minScale, accMins[t]);
    }
    __m256i sumi[T];
    for (int t = 0; t < T; t++) sumi[t] = _mm256_setzero_si256();
    // Q5_K's fifth bits: qh shifted right by 2 after each group, so group g's bits 2g and 2g + 1
    // of each byte sit at bits 0 and 1, which a shift left by 4 and by 3 lands on bit 4. With the
    // mins from the register and the scales' conversion above, Zen 3, TinyLlama Q5_K decode at the
    // AVX2 tier, steps alternating: 0.966-0.969 of the time.
    __m256i qh;
    if constexpr (kFifthBit) qh = load32(xb->qh);
    for (int g = 0; g < QK_K / 64; g++) {
      const __m256i bits = load32(xb->qs + 32 * g);
      __m256i vLo = _mm256_and_si256(bits, low4);
      __m256i vHi = _mm256_and_si256(_mm256_srli_epi16(bits, 4), low4);
      if constexpr (kFifthBit) {
        vLo = _mm256_or_si256(vLo, _mm256_and_si256(_mm256_slli_epi16(qh, 4), bit4));
        vHi = _mm256_or_si256(vHi, _mm256_and_si256(_mm256_slli_epi16(qh, 3), bit4));
        qh = _mm256_srli_epi16(qh, 2);
      }
      const __m256i scLo = _mm256_shuffle_epi8(sc16, pickWords(2 * g, 2 * g));
      const __m256i scHi = _mm256_shuffle_epi8(sc16, pickWords(2 * g + 1, 2 * g + 1));
      for (int t = 0; t < T; t++) {
        const int8_t* q8 = yb[t]->qs + 64 * g;
        sumi[t] = _mm256_add_epi32(sumi[t], _mm256_madd_epi16(_mm256_maddubs_epi16(vLo, load32(q8)), scLo));
        sumi[t] = _mm256_add_epi32(sumi[t], _mm256_madd_epi16(_mm256_maddubs_epi16(vHi, load32(q8 + 32)), scHi));
      }
    }
    for (int t = 0; t < T; t++) acc[t] = _mm256_fmadd_ps(_mm256_broadcastss_ps(scale[t]), _mm256_cvtepi32_ps(sumi[t]), acc[t]);
  }
  for (int t = 0; t < T; t++) s[t * ldS] = kFifthBit ? hsum(acc[t]) + summs[t] : hsum(acc[t]) + hsum(accMins[t]);
}

// Q6_K: values 0..63 are unsigned for maddubs; the offset of 32 is taken off once per block from
// the token's sums of 16 (q6KOffsetLanes). Each 32-value group spans two sub-blocks of 16, one per
// 128-bit lane of the products (each pair sum within int16: 2 * 63 * 128). R rows x T tokens (one
// of them 1): a row's 6-bit values are rebuilt once per block for all the tokens. Decode (T = 1)
// takes two rows half a chunk apart (halfApart), each asking for its blocks kRowStreamAheadBytes on:
// two streams, and two rows' arithmetic that does not wait on each other. Zen 3, TinyLlama Q6_K
// decode steps alternating in one process, two rows against one: 0.954-0.981 of the time
// (Qwen2.5-0.5B 0.985-0.988). Row r's sum for token t goes to s[r][t * ldS].
template <int R, int T>
void q6KTile(int64_t n, float* const* s, int64_t ldS, const char* const* vx, const char* vy, size_t yStride) {
  const __m256i low4 = _mm256_set1_epi8(0x0f);
  const __m256i high2 = _mm256_set1_epi8(0x30);
  __m256 acc[R][T];
  for (int r = 0; r < R; r++)
    for (int t = 0; t < T; t++) acc[r][t] = _mm256_setzero_ps();
  for (int64_t b = 0; b < n / QK_K; b++) {
    const BlockQ8_K* y[T];
    for (int t = 0; t < T; t++) y[t] = reinterpret_cast<const BlockQ8_K*>(vy + t * yStride) + b;
    for (int r = 0; r < R; r++) {
      const BlockQ6_K& x = reinterpret_cast<const BlockQ6_K*>(vx[r])[b];
      if (T == 1) prefetchLines<sizeof(BlockQ6_K)>(&x, kRowStreamAheadBytes);
      // The 16 scales as int16; per half, its 8 in both 128-bit lanes, from which one byte shuffle
      // per group gives sub-block j's scale in the low lane and j + 1's in the high (from the bytes
      // it took a sign extension, a move and a broadcast per scale and an insert per group).
      const __m256i sc16 = _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(x.scales)));
      // The offsets' products first: taken from every pair (two maddubs and a subtraction per
      // group of 32 values), they cost a sixth of the block's steps. Zen 3, one thread from L2
      // (256 x 2048, one token): 0.85 of the time; TinyLlama Q6_K decode steps alternating:
      // 0.944-0.961.
      const __m256i negScales = q6KNegScales32(sc16);
      __m256i sumi[T];
      for (int t = 0; t < T; t++) sumi[t] = q6KOffsetLanes(negScales, load32(y[t]->bsums));
      for (int h = 0; h < 2; h++) {
        const __m256i half = h == 0 ? _mm256_permute4x64_epi64(sc16, 0x44) : _mm256_permute4x64_epi64(sc16, 0xee);
        const __m256i ql0 = load32(x.ql + 64 * h);
        const __m256i ql1 = load32(x.ql + 64 * h + 32);
        const __m256i qh = load32(x.qh + 32 * h);
        // Each byte's high bits 2k and 2k + 1 moved to bits 4 and 5 by one shift of the 16-bit
        // lanes (none for k = 2) and a 0x30 mask, which keeps each byte's own bits: the same values
        // in 9 steps where a mask, a shift and a shift back took 12. Zen 3, one thread from L2 (256
        // x 2048, one token): 0.93 of the time; TinyLlama Q6_K decode at the AVX2 tier, steps
        // alternating, 0.987-0.990 (slow-memory minutes).
        const __m256i v[4] = {
            _mm256_or_si256(_mm256_and_si256(ql0, low4), _mm256_and_si256(_mm256_slli_epi16(qh, 4), high2)),
            _mm256_or_si256(_mm256_and_si256(ql1, low4), _mm256_and_si256(_mm256_slli_epi16(qh, 2), high2)),
            _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(ql0, 4), low4), _mm256_and_si256(qh, high2)),
            _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(ql1, 4), low4), _mm256_and_si256(_mm256_srli_epi16(qh, 2), high2)),
        };
        for (int k = 0; k < 4; k++) {
          const __m256i scales = _mm256_shuffle_epi8(half, pickWords(2 * k, 2 * k + 1));
          for (int t = 0; t < T; t++) {
            const __m256i q8 = load32(y[t]->qs + 128 * h + 32 * k);
            sumi[t] = _mm256_add_epi32(sumi[t], _mm256_madd_epi16(_mm256_maddubs_epi16(v[k], q8), scales));
          }
        }
      }
      const float dx = fp16(x.d);
      for (int t = 0; t < T; t++) acc[r][t] = _mm256_fmadd_ps(_mm256_set1_ps(y[t]->d * dx), _mm256_cvtepi32_ps(sumi[t]), acc[r][t]);
    }
  }
  for (int r = 0; r < R; r++)
    for (int t = 0; t < T; t++) s[r][t * ldS] = hsum(acc[r][t]);
}

// Q4_0 x Q8_0 for one block, as eight 32-bit sums of four products each.
__m256i quadSumsQ4_0(const BlockQ4_0& x, const BlockQ8_0& y) {
  const __m256i qx = _mm256_sub_epi8(nibbles(x.qs), _mm256_set1_epi8(8));
  const __m256i pairs = _mm256_maddubs_epi16(_mm256_sign_epi8(qx, qx), _mm256_sign_epi8(load32(y.qs), qx));
  return _mm256_madd_epi16(pairs, _mm256_set1_epi16(1));
}

}  // namespace

void vecDotF32_avx2(int64_t n, float* s, const void* x, const void* y) {
  *s = dotFloat<float, loadF32, identity>(n, static_cast<const float*>(x), static_cast<const float*>(y));
}

void vecDotF16_avx2(int64_t n, float* s, const void* x, const void* y) {
  *s = dotFloat<fp16_t, loadF16, fp16>(n, static_cast<const fp16_t*>(x), static_cast<const fp16_t*>(y));
}

void vecDotBF16_avx2(int64_t n, float* s, const void* x, const void* y) {
  *s = dotFloat<bf16_t, loadBf16, bf16>(n, static_cast<const bf16_t*>(x), static_cast<const bf16_t*>(y));
}

// The same bits as vecDotQ8_0_generic: eight lanes of four-product sums, one FMA per block.
void vecDotQ8_0_avx2(int64_t n, float* s, const void* vx, const void* vy) {
  const BlockQ8_0* x = static_cast<const BlockQ8_0*>(vx);
  const BlockQ8_0* y = static_cast<const BlockQ8_0*>(vy);
  __m256 acc = _mm256_setzero_ps();
  for (int64_t b = 0; b < n / QK8_0; b++) {
    const __m256 d = _mm256_set1_ps(fp16(x[b].d) * fp16(y[b].d));
    acc = _mm256_fmadd_ps(d, dotI8(load32(x[b].qs), load32(y[b].qs)), acc);
  }
  *s = hsum(acc);
}

// One FMA per block on the block's whole integer sum, in block order, as vecDotQ4_0_generic (and
// llama.cpp's repacked Q4_0 kernels) do. That chain is the critical path, so the integer work is
// done eight blocks at a time: their sums land in one vector through a transposing add, their
// scale products in another, and the chain then runs over the lanes.
void vecDotQ4_0_avx2(int64_t n, float* s, const void* vx, const void* vy) {
  const BlockQ4_0* x = static_cast<const BlockQ4_0*>(vx);
  const BlockQ8_0* y = static_cast<const BlockQ8_0*>(vy);
  const int64_t nb = n / QK4_0;
  float acc = 0;
  int64_t b = 0;
  for (; b + 8 <= nb; b += 8) {
    __m256i q[8];
    for (int k = 0; k < 8; k++) q[k] = quadSumsQ4_0(x[b + k], y[b + k]);
    // Lanes 0-3 of q0123 hold blocks 0-3's sums of their low four quads, lanes 4-7 of the high four.
    const __m256i q0123 = _mm256_hadd_epi32(_mm256_hadd_epi32(q[0], q[1]), _mm256_hadd_epi32(q[2], q[3]));
    const __m256i q4567 = _mm256_hadd_epi32(_mm256_hadd_epi32(q[4], q[5]), _mm256_hadd_epi32(q[6], q[7]));
    const __m256i sums = _mm256_add_epi32(_mm256_permute2x128_si256(q0123, q4567, 0x20),
                                          _mm256_permute2x128_si256(q0123, q4567, 0x31));
    alignas(16) fp16_t dx[8], dy[8];
    for (int k = 0; k < 8; k++) {
      dx[k] = x[b + k].d;
      dy[k] = y[b + k].d;
    }
    alignas(32) float sumf[8], d[8];
    _mm256_store_ps(sumf, _mm256_cvtepi32_ps(sums));
    _mm256_store_ps(d, _mm256_mul_ps(loadF16(dx), loadF16(dy)));
    for (int k = 0; k < 8; k++) acc = fmaSingle(sumf[k], d[k], acc);
  }
  for (; b < nb; b++) {
    const __m256i q = quadSumsQ4_0(x[b], y[b]);
    __m128i r = _mm_add_epi32(_mm256_castsi256_si128(q), _mm256_extracti128_si256(q, 1));
    r = _mm_add_epi32(r, _mm_unpackhi_epi64(r, r));
    r = _mm_add_epi32(r, _mm_shuffle_epi32(r, 1));
    acc = fmaSingle((float)_mm_cvtsi128_si32(r), fp16(x[b].d) * fp16(y[b].d), acc);
  }
  *s = acc;
}

void vecDotQ4_K_avx2(int64_t n, float* s, const void* x, const void* y) {
  *s = dotScaleMinK<BlockQ4_K, false>(n, static_cast<const BlockQ4_K*>(x), static_cast<const BlockQ8_K*>(y));
}

namespace {

// Q4_K, Q5_K and Q6_K for decode and for the few tokens that mat-mul-k-avx2.cpp's prepared tiles
// leave over: one row x 4 tokens, then one token at a time (Q6_K's decode: two rows at a time).
// Decode read every K-quant in the file's layout one row at a time, one weight stream per thread, each block asked for
// kRowStreamAheadBytes on, as the AVX-512 kernels do (TinyLlama decode@0 at the AVX2 tier, Zen 5,
// alternating, tok/s from 4 rows to 1: Q4_K 43.1 -> 47.3, Q5_K 32.2 -> 37.1). Q6_K read 4 rows
// side by side, each block asked for 4 rows on, until Zen 3 (per-op timer, builds alternating by
// process, TinyLlama Q6_K): 28.4-31.2 tok/s that way, 33.6-36.4 one row at a time 8 KB ahead,
// 31.8-33.3 one row at a time asking for the next row (on Zen 5 that way 39.1 -> 38.4). Q6_K now
// reads two rows half a chunk apart (q6KTile), as packed Q4_K and Q5_K decode do: two streams.
// The tokens that go one at a time (every token of a decode step) are prepared once for all rows
// (where Tile<1>::kPrepares): Q4_K's and Q5_K's sums of 32 values, which each row's dot took again from
// the token's sums of 16 (an extract and a horizontal add per block). Zen 3, TinyLlama decode,
// steps alternating in one process: Q4_K 0.94-0.95 of the time, Q5_K 0.94. Q6_K prepares nothing:
// its offsets come from the token's sums of 16 once per block (q6KOffsetLanes), where before, the
// offsets' products prepared this way (8 of a block's 16 maddubs) made its kernel 1.11x from L2 but
// its decode steps 1.01-1.04x slower (a second stream beside the weights).
constexpr int64_t kPreparedBlocks = 512;  // 8 KB of stack: 3 tokens' sums of 32, rows of up to 43520 values
template <template <int> class Tile>
void rowTiles(int64_t n, int64_t nr, int64_t nt, float* s, int64_t ldS, const void* vx, size_t xStride, const void* vy,
              size_t yStride) {
  const char* x = static_cast<const char*>(vx);
  const char* y = static_cast<const char*>(vy);
  const int64_t t4 = nt / 4 * 4, nb = n / QK_K;
  __m128i prepared[kPreparedBlocks];
  // Where they do not fit, each row's dot takes them itself, the same way.
  const bool fits = Tile<1>::kPrepares && (nt - t4) * nb <= kPreparedBlocks;
  if (fits)
    for (int64_t t = t4; t < nt; t++)
      for (int64_t b = 0; b < nb; b++) prepared[(t - t4) * nb + b] = sumsOf32(reinterpret_cast<const BlockQ8_K*>(y + t * yStride)[b]);
  for (int64_t r = 0; r < nr; r++) {
    int64_t t = 0;
    for (; t < t4; t += 4) Tile<4>::run(n, s + t * ldS + r, ldS, x + r * xStride, y + t * yStride, yStride, nullptr);
    for (; t < nt; t++) Tile<1>::run(n, s + t * ldS + r, ldS, x + r * xStride, y + t * yStride, yStride, fits ? prepared + (t - t4) * nb : nullptr);
  }
}

// One row x T tokens; kPrepares: run takes one token's sums of 32 per block (or nullptr).
template <typename Block, bool kFifthBit, int T>
struct ScaleMinKTile {
  static constexpr bool kPrepares = true;
  static void run(int64_t n, float* s, int64_t ldS, const char* x, const char* y, size_t yStride, const __m128i* sums32) {
    scaleMinKTile<Block, kFifthBit, T>(n, s, ldS, x, y, yStride, sums32);
  }
};
template <int T>
using Q4KTile = ScaleMinKTile<BlockQ4_K, false, T>;
template <int T>
using Q5KTile = ScaleMinKTile<BlockQ5_K, true, T>;
template <int T>
struct Q6KTile {
  static constexpr bool kPrepares = false;
  static void run(int64_t n, float* s, int64_t ldS, const char* x, const char* y, size_t yStride, const __m128i*) {
    q6KTile<1, T>(n, &s, ldS, &x, y, yStride);
  }
};

}  // namespace

void vecDotFewQ4_K_avx2(int64_t n, int64_t nr, int64_t nt, float* s, int64_t ldS, const void* x, size_t xStride,
                        const void* y, size_t yStride) {
  rowTiles<Q4KTile>(n, nr, nt, s, ldS, x, xStride, y, yStride);
}

void vecDotQ5_K_avx2(int64_t n, float* s, const void* x, const void* y) {
  *s = dotScaleMinK<BlockQ5_K, true>(n, static_cast<const BlockQ5_K*>(x), static_cast<const BlockQ8_K*>(y));
}

void vecDotFewQ5_K_avx2(int64_t n, int64_t nr, int64_t nt, float* s, int64_t ldS, const void* x, size_t xStride,
                        const void* y, size_t yStride) {
  rowTiles<Q5KTile>(n, nr, nt, s, ldS, x, xStride, y, yStride);
}

void vecDotQ6_K_avx2(int64_t n, float* s, const void* vx, const void* vy) {
  const char* x = static_cast<const char*>(vx);
  q6KTile<1, 1>(n, &s, 0, &x, static_cast<const char*>(vy), 0);
}

void vecDotFewQ6_K_avx2(int64_t n, int64_t nr, int64_t nt, float* s, int64_t ldS, const void* x, size_t xStride,
                        const void* y, size_t yStride) {
  if (nt > 1) {
    rowTiles<Q6KTile>(n, nr, nt, s, ldS, x, xStride, y, yStride);
    return;
  }
  const char* token = static_cast<const char*>(y);
  rowsHalfApart(
      nr, s, static_cast<const char*>(x), xStride, [&](float* const* out, const char* const* in) { q6KTile<2, 1>(n, out, 0, in, token, 0); },
      [&](float* const* out, const char* const* in) { q6KTile<1, 1>(n, out, 0, in, token, 0); });
}

}  // namespace kiln

namespace kiln {

// fromFloatActivationsQ8_0, eight values at a time, with the same bits: amax ignoring NaN (as
// fmax), 127 / amax, each value times that rounded half to even (as nearestInt for |v| <= 127),
// bounds that send NaN to -127 as the scalar comparisons do, and the scale rounded to fp16 to
// nearest even.
void fromFloatActivationsQ8_0_avx2(const float* src, void* dst, int64_t n) {
  BlockQ8_0* y = static_cast<BlockQ8_0*>(dst);
  const __m256 signBit = _mm256_set1_ps(-0.0f);
  for (int64_t b = 0; b < n / QK8_0; b++) {
    __m256 v[4];
    __m256 amax = _mm256_setzero_ps();
    for (int k = 0; k < 4; k++) {
      v[k] = _mm256_loadu_ps(src + b * QK8_0 + 8 * k);
      amax = _mm256_max_ps(_mm256_andnot_ps(signBit, v[k]), amax);  // a NaN value leaves amax as it was
    }
    __m128 m = _mm_max_ps(_mm256_castps256_ps128(amax), _mm256_extractf128_ps(amax, 1));
    m = _mm_max_ps(m, _mm_movehl_ps(m, m));
    m = _mm_max_ss(m, _mm_movehdup_ps(m));
    const float a = _mm_cvtss_f32(m);
    const __m256 id = _mm256_set1_ps(a != 0 ? 127 / a : 0);
    y[b].d = _cvtss_sh(a / 127, _MM_FROUND_TO_NEAREST_INT);
    __m256i q[4];
    for (int k = 0; k < 4; k++) {
      const __m256 r = _mm256_round_ps(_mm256_mul_ps(v[k], id), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
      q[k] = _mm256_cvtps_epi32(_mm256_min_ps(_mm256_max_ps(r, _mm256_set1_ps(-127)), _mm256_set1_ps(127)));
    }
    // Pack 32 int32 to 32 int8 in order: packs interleave 128-bit lanes, the permute undoes it.
    const __m256i w01 = _mm256_packs_epi32(q[0], q[1]), w23 = _mm256_packs_epi32(q[2], q[3]);
    const __m256i bytes = _mm256_permutevar8x32_epi32(_mm256_packs_epi16(w01, w23), _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(y[b].qs), bytes);
  }
}

}  // namespace kiln

namespace kiln {

// fromFloatQ8_K eight values at a time, with the same bits: amax ignoring NaN, the first value of
// that magnitude as the signed maximum, -127 / max, and nearestInt's own rounding (the product,
// then the 1.5 * 2^23 addition, read as bits), clamped as integers, so that even NaN and infinite
// values give the scalar definition's bytes.
void fromFloatQ8_K_avx2(const float* src, void* dst, int64_t n) {
  BlockQ8_K* y = static_cast<BlockQ8_K*>(dst);
  const __m256 signBit = _mm256_set1_ps(-0.0f);
  for (int64_t b = 0; b < n / QK_K; b++) {
    const float* x = src + b * QK_K;
    __m256 amax = _mm256_setzero_ps();
    for (int i = 0; i < QK_K; i += 8) amax = _mm256_max_ps(_mm256_andnot_ps(signBit, _mm256_loadu_ps(x + i)), amax);
    __m128 m = _mm_max_ps(_mm256_castps256_ps128(amax), _mm256_extractf128_ps(amax, 1));
    m = _mm_max_ps(m, _mm_movehl_ps(m, m));
    m = _mm_max_ss(m, _mm_movehdup_ps(m));
    const float a = _mm_cvtss_f32(m);
    if (a == 0) {
      std::memset(&y[b], 0, sizeof(BlockQ8_K));
      continue;
    }
    float max = 0;
    for (int i = 0; i < QK_K; i += 8) {
      const int hit = _mm256_movemask_ps(_mm256_cmp_ps(_mm256_andnot_ps(signBit, _mm256_loadu_ps(x + i)), _mm256_set1_ps(a), _CMP_EQ_OQ));
      if (hit) {
        max = x[i + __builtin_ctz((unsigned)hit)];
        break;
      }
    }
    const float iscale = -127 / max;
    const __m256 vscale = _mm256_set1_ps(iscale), magic = _mm256_set1_ps(12582912.f);
    const __m256i mantissa = _mm256_set1_epi32(0x007fffff), half = _mm256_set1_epi32(0x00400000);
    const __m256i lo = _mm256_set1_epi32(-127), hi = _mm256_set1_epi32(127);
    __m256i quads[QK_K / 32];
    for (int i = 0; i < QK_K; i += 32) {
      __m256i q[4];
      for (int k = 0; k < 4; k++) {
        const __m256 v = _mm256_add_ps(_mm256_mul_ps(vscale, _mm256_loadu_ps(x + i + 8 * k)), magic);
        const __m256i r = _mm256_sub_epi32(_mm256_and_si256(_mm256_castps_si256(v), mantissa), half);
        q[k] = _mm256_min_epi32(_mm256_max_epi32(r, lo), hi);
      }
      const __m256i w01 = _mm256_packs_epi32(q[0], q[1]), w23 = _mm256_packs_epi32(q[2], q[3]);
      const __m256i bytes = _mm256_permutevar8x32_epi32(_mm256_packs_epi16(w01, w23), _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(y[b].qs + i), bytes);
      quads[i / 32] = _mm256_madd_epi16(_mm256_maddubs_epi16(_mm256_set1_epi8(1), bytes), _mm256_set1_epi16(1));
    }
    // Sums of 16: chunk c's lanes 0-3 hold quarters of sum 2c, lanes 4-7 of sum 2c + 1. Two
    // horizontal adds give sums 0, 2, 4, 6 in the low lane and 1, 3, 5, 7 in the high (then 8-15).
    const __m256i first = _mm256_hadd_epi32(_mm256_hadd_epi32(quads[0], quads[1]), _mm256_hadd_epi32(quads[2], quads[3]));
    const __m256i second = _mm256_hadd_epi32(_mm256_hadd_epi32(quads[4], quads[5]), _mm256_hadd_epi32(quads[6], quads[7]));
    const __m256i packed = _mm256_packs_epi32(first, second);
    const __m128i lo16 = _mm256_castsi256_si128(packed), hi16 = _mm256_extracti128_si256(packed, 1);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(y[b].bsums), _mm_unpacklo_epi16(lo16, hi16));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(y[b].bsums + 8), _mm_unpackhi_epi16(lo16, hi16));
    y[b].d = 1 / iscale;
  }
}

// fromFloatF16 eight values at a time: F16C rounds to nearest even as floatToFp16 does, and a NaN
// becomes the same quiet NaN (sign | 0x7e00) rather than one carrying part of its payload.
void fromFloatF16_avx2(const float* src, void* dst, int64_t n) {
  fp16_t* y = static_cast<fp16_t*>(dst);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 v = _mm256_loadu_ps(src + i);
    __m128i h = _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT);
    const __m256 nan = _mm256_cmp_ps(v, v, _CMP_UNORD_Q);
    if (_mm256_movemask_ps(nan)) {
      const __m256i n32 = _mm256_castps_si256(nan);
      const __m128i n16 = _mm_packs_epi32(_mm256_castsi256_si128(n32), _mm256_extracti128_si256(n32, 1));
      const __m128i quiet = _mm_or_si128(_mm_and_si128(h, _mm_set1_epi16((short)0x8000)), _mm_set1_epi16(0x7e00));
      h = _mm_blendv_epi8(h, quiet, n16);
    }
    _mm_storeu_si128(reinterpret_cast<__m128i*>(y + i), h);
  }
  for (; i < n; i++) {
    const float v = src[i];
    y[i] = v != v ? (fp16_t)((_cvtss_sh(v, _MM_FROUND_TO_NEAREST_INT) & 0x8000) | 0x7e00) : _cvtss_sh(v, _MM_FROUND_TO_NEAREST_INT);
  }
}

}  // namespace kiln

// CPU kernels for the non-matmul ops of a forward step. Each takes (ith, nth) and does its
// share of the rows, so the executor can run it on every thread of the pool.
#pragma once
#include <cstdint>

#include "../common/quant-blocks.h"

namespace kiln {

// y = x / sqrt(mean(x^2) + eps) * w over each contiguous group of `width` values.
void rmsNormRows(const float* x, const float* w, float* y, int64_t nGroups, int64_t width, float eps, int ith, int nth);

struct RopeParams {
  int nHeads;
  int headDim;
  int nRot;      // rotated dimensions per head (<= headDim)
  bool neox;     // NeoX pairs (i, i + nRot/2) instead of adjacent (2i, 2i+1)
  float freqBase;
  float freqScale;
};

// Rotates x (nTokens, nHeads * headDim) in place. freqFactors: nRot/2 divisors, or null.
void ropeRows(float* x, int64_t nTokens, const int32_t* positions, const RopeParams& p, const float* freqFactors,
              int ith, int nth);

struct AttentionParams {
  int nHeads;
  int nKvHeads;
  int headDim;
  float scale;
};

// Key/value cache of one layer of one slot: `capacity` rows of nKvHeads * headDim, F32 or F16.
struct KvView {
  void* k;
  void* v;
  GgmlType type;
  int64_t capacity;
};

// Stores the new keys/values (nTokens, nKvHeads * headDim) at their positions.
void kvStoreRows(const KvView& kv, const float* k, const float* v, int64_t nTokens, const int32_t* positions,
                 int64_t rowWidth, int ith, int nth);

// Causal GQA: query token i at position p attends to cache rows 0..p.
// q and out: (nTokens, nHeads * headDim). scratch: nth * attentionScratchFloats(capacity, headDim).
void attentionRows(const float* q, const KvView& kv, float* out, int64_t nTokens, const int32_t* positions,
                   const AttentionParams& p, float* scratch, int ith, int nth);

// Positions whose keys (then values) the SIMD attention widens to float at a time.
constexpr int kAttentionBlock = 64;

// Scratch floats of one part (ith) of attentionRows: the scores of 8 queries at every position,
// a block of keys or values as floats, and 8 queries' 8 lanes of accumulators per output.
static inline int64_t attentionScratchFloats(int64_t capacity, int headDim) {
  return 8 * (capacity + 8) + (kAttentionBlock + 64) * (int64_t)headDim;
}

// y = silu(gate) * up.
void swigluRows(const float* gate, const float* up, float* y, int64_t n, int ith, int nth);

// y = a + b.
void addRows(const float* a, const float* b, float* y, int64_t n, int ith, int nth);

// y[r] += bias for each of nRows rows of width.
void addBiasRows(float* y, const float* bias, int64_t nRows, int64_t width, int ith, int nth);

// The exps of a whole row of logits as the sampler weighs candidates (src/sampling/sampler.ts):
// each x_i becomes its candidate logit (NaN -> -FLT_MAX, +-inf -> +-FLT_MAX, divided by t in
// double and clamped again unless t is 1), then e_i = expf(x_i - max) (ggml's expf, in float),
// into e (x itself allowed); each block of eight summed in double as ((e0 + e4) + (e2 + e6)) + ((e1 + e5) +
// (e3 + e7)) into blocks[(n + 7) / 8]. Returns the total, the blocks added in order. The AVX2
// version gives the same bits.
double softmaxExps(const float* x, float* e, int64_t n, double t, double* blocks);

// The softmax of x[0..n) at temperature 1, in double: softmaxExps into e (n floats; blocks: (n + 7)
// / 8 doubles), each divided by their total. What sampling weighs its candidates with
// (src/sampling/candidates.ts).
void softmaxRow(const float* x, int64_t n, float* e, double* blocks, double* probs);

// One draw from the softmax of a whole row at temperature t, u in [0, 1) (the sampler's draw when
// nothing narrows the candidates): softmaxExps in place, then the first token whose running sum
// (whole blocks, then its own block's e in order, in double) passes u * total.
int64_t softmaxDrawRow(float* x, int64_t n, double t, double u, double* blocks);

// Top-p over a whole row (temperature 1): the smallest best-first prefix, in selectTopRow's order,
// whose exps (softmaxExps) reach p x their total, into ids and logits (its length returned); the
// best 64 are tried first, then 8 times as many, up to maxK (none that could not hold p, each exp
// being at most 1): -1 when the nucleus needs more. e: n floats of scratch, blocks: (n + 7) / 8.
// A selection that falls short is made again from the row at the next size.
int64_t nucleusRow(const float* x, int64_t n, double p, int64_t maxK, float* e, double* blocks, int32_t* ids, float* logits);

// The best k of x[0..n) as the sampler ranks candidates (src/sampling/select-top.ts): each value
// clamped as a candidate's logit (NaN and -inf to -FLT_MAX, +inf to FLT_MAX), the higher first,
// the lower index on ties; written best first to ids[0..k) and logits[0..k). 0 < k <= n.
void selectTopRow(const float* x, int64_t n, int64_t k, int32_t* ids, float* logits);

// The tokens whose candidate logit (selectTopRow's clamp) is at least `threshold`, in id order, into
// ids and logits; returns how many. Min-p straight from the row (src/sampling/sampler.ts).
int64_t keepAtLeastRow(const float* x, int64_t n, double threshold, int32_t* ids, float* logits);

// The index of the largest of x[0..n): the lowest index on ties (-0 and +0 tie), NaN never wins, 0
// when nothing is above -infinity. Greedy decoding's pick (src/sampling/greedy.ts is its definition).
int64_t argmaxF32(const float* x, int64_t n);

// Splits [0, n) into nth near-equal parts; returns part ith as [begin, end). `static` so that
// the AVX2 file's copy can never be the one other files link to (see quants.h).
static inline void splitRange(int64_t n, int ith, int nth, int64_t* begin, int64_t* end) {
  const int64_t per = (n + nth - 1) / nth;
  *begin = per * ith < n ? per * ith : n;
  *end = *begin + per < n ? *begin + per : n;
}

#if defined(__x86_64__) || defined(__i386__)
// ops-avx2.cpp: the same contracts, for CPUs with AVX2, FMA and F16C.
void rmsNormRows_avx2(const float* x, const float* w, float* y, int64_t nGroups, int64_t width, float eps, int ith, int nth);
void ropeRows_avx2(float* x, int64_t nTokens, const int32_t* positions, const RopeParams& p, const float* freqFactors,
                   int ith, int nth);
void kvStoreRows_avx2(const KvView& kv, const float* k, const float* v, int64_t nTokens, const int32_t* positions,
                      int64_t rowWidth, int ith, int nth);
void attentionRows_avx2(const float* q, const KvView& kv, float* out, int64_t nTokens, const int32_t* positions,
                        const AttentionParams& p, float* scratch, int ith, int nth);
void swigluRows_avx2(const float* gate, const float* up, float* y, int64_t n, int ith, int nth);
double softmaxExps_avx2(const float* x, float* e, int64_t n, double t, double* blocks);
void addRows_avx2(const float* a, const float* b, float* y, int64_t n, int ith, int nth);
#endif

// The op kernels the executor calls: the scalar definitions above, or SIMD versions with the same
// contracts when the kernel level is 'best' (setKernelLevel) and the CPU has them.
struct OpKernels {
  decltype(&rmsNormRows) rmsNorm;
  decltype(&ropeRows) rope;
  decltype(&kvStoreRows) kvStore;
  decltype(&attentionRows) attention;
  decltype(&swigluRows) swiglu;
  decltype(&addRows) add;
  decltype(&softmaxExps) exps;
};

const OpKernels& opKernels();

}  // namespace kiln

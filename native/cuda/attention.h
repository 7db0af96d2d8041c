// Attention on the device: new keys and values go into the KV cache, then causal GQA of the
// queries over the cache, flash-attention style (online softmax over tiles of the cache), with
// the cache split across blocks for decode steps (a second kernel merges the splits).
#pragma once
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

namespace kiln::cuda {

constexpr int kMaxAttentionHeadDim = 256;

// k, v (nTokens, width) stored at rows positions[t] of kCache / vCache ((capacity, width), F32 or
// F16 bits). positions are device memory, already checked against the capacity.
void storeKv(const float* k, const float* v, void* kCache, void* vCache, bool f16, int64_t nTokens,
             const int32_t* positions, int64_t width, cudaStream_t stream);

struct AttentionArgs {
  const float* q;           // (nTokens, nHeads * headDim)
  const void* kCache;       // (capacity, nKvHeads * headDim): this slot's and layer's cache
  const void* vCache;
  bool f16;                 // cache in F16 bits (else F32)
  float* out;               // (nTokens, nHeads * headDim)
  const int32_t* positions; // device memory; token t attends to cache rows 0 .. positions[t]
  int64_t nTokens;
  int nHeads, nKvHeads, headDim;
  float scale;
  int64_t capacity;
  float* partials;          // attentionScratchFloats floats
};

// Floats of scratch attention() needs for steps of up to maxTokens tokens.
size_t attentionScratchFloats(int64_t maxTokens, int nHeads, int headDim, int64_t capacity);

// Raises the kernels' shared memory limit where headDim needs more than the default 48 KiB. Call
// once before any attention() (and outside graph capture).
void attentionPrepare(int headDim);

void attention(const AttentionArgs& a, cudaStream_t stream);

}  // namespace kiln::cuda

// Causal GQA attention over the KV cache. A block takes up to 16 query rows (tokens x heads of one
// KV head) and walks the cache in tiles of 32 positions held in shared memory as F32; each warp
// keeps its rows' running max, sum and weighted values (online softmax), lane j scoring key j of
// the tile. Decode steps (few tokens) split the cache across blocks and merge the partial results.
#include <algorithm>

#include "attention.h"
#include "cuda-check.h"
#include "device-common.cuh"

namespace kiln::cuda {

namespace {

constexpr int kTile = 32;       // cache positions per tile: one per lane
constexpr int kWarps = 4;
constexpr int kMaxRows = 16;    // query rows per block
constexpr int kRowsPerWarp = kMaxRows / kWarps;
constexpr int64_t kSplitPositions = 256;  // cache positions per split, at least
constexpr int kMaxSplits = 32;
constexpr int64_t kSplitMaxTokens = 8;    // steps with more tokens have blocks enough unsplit
constexpr int kStoreThreads = 256;

template <bool kF16>
__device__ __forceinline__ float cacheAt(const void* cache, int64_t i) {
  if constexpr (kF16) return halfToFloat(static_cast<const uint16_t*>(cache)[i]);
  else return static_cast<const float*>(cache)[i];
}

__global__ void storeKvKernel(const float* __restrict__ k, const float* __restrict__ v, void* kCache, void* vCache,
                              bool f16, int64_t n, const int32_t* __restrict__ positions, int64_t width) {
  const int64_t i = (int64_t)blockIdx.x * kStoreThreads + threadIdx.x;
  if (i >= n) return;
  const int64_t t = i / width, c = i % width;
  const int64_t dst = (int64_t)positions[t] * width + c;
  if (f16) {
    static_cast<uint16_t*>(kCache)[dst] = __half_as_ushort(__float2half_rn(k[i]));
    static_cast<uint16_t*>(vCache)[dst] = __half_as_ushort(__float2half_rn(v[i]));
  } else {
    static_cast<float*>(kCache)[dst] = k[i];
    static_cast<float*>(vCache)[dst] = v[i];
  }
}

struct Layout {
  int tokensPerBlock;   // query tokens per block
  int headsPerBlock;    // query heads per block (of one KV head's group)
  int headGroups;       // blocks per KV head
  int splits;           // blocks along the cache
  int64_t chunk;        // cache positions per split, a multiple of kTile
};

Layout layoutFor(int64_t nTokens, int nHeads, int nKvHeads, int64_t capacity) {
  Layout l;
  const int group = nHeads / nKvHeads;
  l.headsPerBlock = std::min(group, kMaxRows);
  l.headGroups = (group + l.headsPerBlock - 1) / l.headsPerBlock;
  l.tokensPerBlock = std::max(1, kMaxRows / l.headsPerBlock);
  l.splits = nTokens <= kSplitMaxTokens
                 ? (int)std::clamp<int64_t>((capacity + kSplitPositions - 1) / kSplitPositions, 1, kMaxSplits)
                 : 1;
  const int64_t perSplit = (capacity + l.splits - 1) / l.splits;
  l.chunk = (perSplit + kTile - 1) / kTile * kTile;
  return l;
}

size_t sharedBytes(int headDim) { return sizeof(float) * (2 * (size_t)kTile * (headDim + 1) + (size_t)kMaxRows * headDim); }

template <int kDimsPerLane, bool kF16>
__global__ void __launch_bounds__(kWarps * kWarpSize)
    attentionKernel(const float* __restrict__ q, const void* __restrict__ kCache, const void* __restrict__ vCache,
                    float* __restrict__ out, float* __restrict__ partials, const int32_t* __restrict__ positions,
                    int64_t nTokens, int nHeads, int nKvHeads, int headDim, float scale, Layout l) {
  extern __shared__ float smem[];
  const int D = headDim, stride = headDim + 1;  // +1: lane j reading row j of a tile hits bank j
  float* sK = smem;
  float* sV = sK + kTile * stride;
  float* sQ = sV + kTile * stride;
  const int lane = threadIdx.x % kWarpSize, warp = threadIdx.x / kWarpSize;
  const int group = nHeads / nKvHeads;
  const int64_t t0 = (int64_t)blockIdx.x * l.tokensPerBlock;
  const int kvh = blockIdx.y / l.headGroups;
  const int firstHead = kvh * group + (blockIdx.y % l.headGroups) * l.headsPerBlock;
  const int nHeadsHere = min(l.headsPerBlock, kvh * group + group - firstHead);
  const int nTokensHere = (int)min((int64_t)l.tokensPerBlock, nTokens - t0);
  const int nRows = nTokensHere * nHeadsHere;
  const int64_t qWidth = (int64_t)nHeads * D, kvWidth = (int64_t)nKvHeads * D;

  int maxPos = 0;
  for (int i = 0; i < nTokensHere; i++) maxPos = max(maxPos, positions[t0 + i]);
  const int64_t jBegin = (int64_t)blockIdx.z * l.chunk;
  const int64_t jEnd = min(jBegin + l.chunk, (int64_t)maxPos + 1);

  for (int i = threadIdx.x; i < nRows * D; i += blockDim.x) {
    const int r = i / D, d = i % D;
    sQ[i] = q[(t0 + r / nHeadsHere) * qWidth + (int64_t)(firstHead + r % nHeadsHere) * D + d];
  }
  float m[kRowsPerWarp], s[kRowsPerWarp], acc[kRowsPerWarp][kDimsPerLane];
  int pos[kRowsPerWarp];
#pragma unroll
  for (int rr = 0; rr < kRowsPerWarp; rr++) {
    m[rr] = -INFINITY;
    s[rr] = 0.0f;
    const int r = warp + kWarps * rr;
    pos[rr] = r < nRows ? positions[t0 + r / nHeadsHere] : -1;
#pragma unroll
    for (int i = 0; i < kDimsPerLane; i++) acc[rr][i] = 0.0f;
  }

  for (int64_t j0 = jBegin; j0 < jEnd; j0 += kTile) {
    const int n = (int)min((int64_t)kTile, jEnd - j0);
    __syncthreads();  // the previous tile is no longer read (and sQ is written, on the first)
    for (int i = threadIdx.x; i < n * D; i += blockDim.x) {
      const int jj = i / D, d = i % D;
      const int64_t src = (j0 + jj) * kvWidth + (int64_t)kvh * D + d;
      sK[jj * stride + d] = cacheAt<kF16>(kCache, src);
      sV[jj * stride + d] = cacheAt<kF16>(vCache, src);
    }
    __syncthreads();
#pragma unroll
    for (int rr = 0; rr < kRowsPerWarp; rr++) {
      const int r = warp + kWarps * rr;
      if (r >= nRows || j0 > pos[rr]) continue;  // uniform across the warp
      float score = -INFINITY;
      if (lane < n && j0 + lane <= pos[rr]) {
        const float* qr = sQ + r * D;
        const float* kr = sK + lane * stride;
        float dot = 0.0f;
        for (int d = 0; d < D; d++) dot += qr[d] * kr[d];
        score = dot * scale;
      }
      const float mNew = fmaxf(m[rr], warpMax(score));  // finite: key j0 <= pos is in the tile
      const float correction = expf(m[rr] - mNew);
      const float p = lane < n && j0 + lane <= pos[rr] ? expf(score - mNew) : 0.0f;
      s[rr] = s[rr] * correction + warpSum(p);
#pragma unroll
      for (int i = 0; i < kDimsPerLane; i++) acc[rr][i] *= correction;
      for (int jj = 0; jj < n; jj++) {
        const float pj = __shfl_sync(kFullMask, p, jj);
        const float* vr = sV + jj * stride;
#pragma unroll
        for (int i = 0; i < kDimsPerLane; i++) {
          const int d = lane + kWarpSize * i;
          if (d < D) acc[rr][i] += pj * vr[d];
        }
      }
      m[rr] = mNew;
    }
  }

#pragma unroll
  for (int rr = 0; rr < kRowsPerWarp; rr++) {
    const int r = warp + kWarps * rr;
    if (r >= nRows) continue;
    const int64_t t = t0 + r / nHeadsHere;
    const int h = firstHead + r % nHeadsHere;
    if (l.splits == 1) {
      float* o = out + t * qWidth + (int64_t)h * D;
      const float inv = 1.0f / s[rr];
#pragma unroll
      for (int i = 0; i < kDimsPerLane; i++) {
        const int d = lane + kWarpSize * i;
        if (d < D) o[d] = acc[rr][i] * inv;
      }
    } else {
      float* part = partials + ((t * nHeads + h) * l.splits + blockIdx.z) * (int64_t)(D + 2);
      if (lane == 0) part[0] = m[rr], part[1] = s[rr];
#pragma unroll
      for (int i = 0; i < kDimsPerLane; i++) {
        const int d = lane + kWarpSize * i;
        if (d < D) part[2 + d] = acc[rr][i];
      }
    }
  }
}

// Merges the splits of one (token, head): each split's sum and values are rescaled to the largest
// running max. Splits past the token's position hold max -inf and sum 0 and drop out.
__global__ void mergeSplitsKernel(const float* __restrict__ partials, float* __restrict__ out, int nHeads, int headDim,
                                  int splits) {
  const int64_t row = blockIdx.x;  // token * nHeads + head
  const float* part = partials + row * splits * (int64_t)(headDim + 2);
  float mMax = -INFINITY;
  for (int i = 0; i < splits; i++) mMax = fmaxf(mMax, part[i * (headDim + 2)]);
  float sum = 0.0f;
  for (int i = 0; i < splits; i++) {
    const float* p = part + i * (headDim + 2);
    if (p[1] > 0.0f) sum += p[1] * expf(p[0] - mMax);
  }
  const float inv = 1.0f / sum;
  for (int d = threadIdx.x; d < headDim; d += blockDim.x) {
    float v = 0.0f;
    for (int i = 0; i < splits; i++) {
      const float* p = part + i * (headDim + 2);
      if (p[1] > 0.0f) v += p[2 + d] * expf(p[0] - mMax);
    }
    out[row * headDim + d] = v * inv;
  }
}

template <int kDimsPerLane, bool kF16>
void launch(const AttentionArgs& a, const Layout& l, cudaStream_t stream) {
  const dim3 grid(ceilDiv(a.nTokens, l.tokensPerBlock), a.nKvHeads * l.headGroups, l.splits);
  attentionKernel<kDimsPerLane, kF16><<<grid, kWarps * kWarpSize, sharedBytes(a.headDim), stream>>>(
      a.q, a.kCache, a.vCache, a.out, a.partials, a.positions, a.nTokens, a.nHeads, a.nKvHeads, a.headDim, a.scale, l);
}

template <int kDimsPerLane>
void launchFor(const AttentionArgs& a, const Layout& l, cudaStream_t stream) {
  if (a.f16) launch<kDimsPerLane, true>(a, l, stream);
  else launch<kDimsPerLane, false>(a, l, stream);
}

template <int kDimsPerLane>
void raiseSharedLimit(int headDim) {
  const int bytes = (int)sharedBytes(headDim);
  check(cudaFuncSetAttribute(attentionKernel<kDimsPerLane, true>, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes),
        "attention shared memory");
  check(cudaFuncSetAttribute(attentionKernel<kDimsPerLane, false>, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes),
        "attention shared memory");
}

}  // namespace

void storeKv(const float* k, const float* v, void* kCache, void* vCache, bool f16, int64_t nTokens,
             const int32_t* positions, int64_t width, cudaStream_t stream) {
  const int64_t n = nTokens * width;
  storeKvKernel<<<ceilDiv(n, kStoreThreads), kStoreThreads, 0, stream>>>(k, v, kCache, vCache, f16, n, positions, width);
  checkLaunch("attention (KV store)");
}

size_t attentionScratchFloats(int64_t maxTokens, int nHeads, int headDim, int64_t capacity) {
  const Layout l = layoutFor(std::min(maxTokens, kSplitMaxTokens), nHeads, 1, capacity);
  if (l.splits == 1) return 0;
  return (size_t)std::min(maxTokens, kSplitMaxTokens) * nHeads * l.splits * (headDim + 2);
}

void attentionPrepare(int headDim) {
  if (sharedBytes(headDim) <= 48 * 1024) return;
  if (headDim <= 64) raiseSharedLimit<2>(headDim);
  else if (headDim <= 128) raiseSharedLimit<4>(headDim);
  else raiseSharedLimit<8>(headDim);
}

void attention(const AttentionArgs& a, cudaStream_t stream) {
  if (a.headDim > kMaxAttentionHeadDim) throw CudaError("attention: head dim above 256");
  const Layout l = layoutFor(a.nTokens, a.nHeads, a.nKvHeads, a.capacity);
  if (a.headDim <= 64) launchFor<2>(a, l, stream);
  else if (a.headDim <= 128) launchFor<4>(a, l, stream);
  else launchFor<8>(a, l, stream);
  checkLaunch("attention");
  if (l.splits > 1) {
    mergeSplitsKernel<<<(unsigned)(a.nTokens * a.nHeads), std::min(a.headDim, 128), 0, stream>>>(a.partials, a.out, a.nHeads,
                                                                                                   a.headDim, l.splits);
    checkLaunch("attention (merge)");
  }
}

}  // namespace kiln::cuda

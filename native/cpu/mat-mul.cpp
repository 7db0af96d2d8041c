// y = x * W^T against weights in any supported type. Activations are converted to the weight
// type's vecDotType once; then threads take chunks of output rows and compute each chunk for
// every token, so a weight row comes from memory once per call, whatever the token count.
#include "mat-mul.h"

#include <algorithm>
#include <atomic>

namespace kiln {

namespace {

// A chunk's weights stay in L2 while every token passes over them.
constexpr size_t kChunkBytes = 64 * 1024;
// Enough chunks per thread that a thread slowed by the OS does not hold up the others.
constexpr int64_t kChunksPerThread = 4;
// Tokens that meet one weight row while it is still in L1.
constexpr int64_t kTokensPerRow = 4;

// Everything the workers read, behind one reference so that ThreadPool::run's std::function holds
// a small closure and does not allocate.
struct MulMatJob {
  const TypeTraits& w;
  const TypeTraits& act;
  const char* weights;
  int64_t rows, cols, nTokens;
  const float* x;
  float* y;
  char* scratch;
  size_t weightRowBytes, actRowBytes;
  int64_t chunkRows, chunks;
  std::atomic<int64_t> nextChunk;

  // Splits the tokens' blocks evenly, so one token's row is shared by all threads as well.
  void convert(int ith, int nth) {
    const int64_t perRow = cols / act.blockSize;
    const int64_t total = perRow * nTokens;
    for (int64_t b = total * ith / nth, end = total * (ith + 1) / nth; b < end;) {
      const int64_t t = b / perRow, first = b % perRow;
      const int64_t count = std::min(end - b, perRow - first);
      act.fromFloat(x + t * cols + first * act.blockSize, scratch + t * actRowBytes + first * act.typeSize,
                    count * act.blockSize);
      b += count;
    }
  }

  void multiply(int ith) {
    const char* xs = act.type == GgmlType::F32 ? reinterpret_cast<const char*>(x) : scratch;
    for (int64_t c = ith; c < chunks; c = nextChunk.fetch_add(1, std::memory_order_relaxed)) {
      const int64_t r0 = c * chunkRows, r1 = std::min(rows, r0 + chunkRows);
      for (int64_t t0 = 0; t0 < nTokens; t0 += kTokensPerRow) {
        const int64_t t1 = std::min(nTokens, t0 + kTokensPerRow);
        for (int64_t r = r0; r < r1; r++) {
          const char* row = weights + r * weightRowBytes;
          for (int64_t t = t0; t < t1; t++) w.vecDot(cols, y + t * rows + r, row, xs + t * actRowBytes);
        }
      }
    }
  }
};

}  // namespace

size_t mulMatScratchBytes(GgmlType weightType, int64_t cols, int64_t nTokens) {
  const TypeTraits* w = typeTraits(weightType);
  if (!w || w->vecDotType == GgmlType::F32) return 0;
  return rowBytes(w->vecDotType, cols) * (size_t)nTokens;
}

void mulMat(const TypeTraits& w, const void* weights, int64_t rows, int64_t cols, const float* x,
            int64_t nTokens, float* y, ThreadPool& pool, void* scratch) {
  const TypeTraits& act = *typeTraits(w.vecDotType);
  const size_t weightRowBytes = rowBytes(w.type, cols);
  const int64_t byBytes = std::max<int64_t>(1, (int64_t)(kChunkBytes / weightRowBytes));
  const int64_t byBalance = std::max<int64_t>(1, rows / (pool.size() * kChunksPerThread));
  const int64_t chunkRows = std::min(byBytes, byBalance);
  MulMatJob job{w,
                act,
                static_cast<const char*>(weights),
                rows,
                cols,
                nTokens,
                x,
                y,
                static_cast<char*>(scratch),
                weightRowBytes,
                rowBytes(act.type, cols),
                chunkRows,
                (rows + chunkRows - 1) / chunkRows,
                {pool.size()}};
  if (act.type != GgmlType::F32) pool.run([&job](int ith, int nth) { job.convert(ith, nth); });
  pool.run([&job](int ith, int) { job.multiply(ith); });
}

}  // namespace kiln

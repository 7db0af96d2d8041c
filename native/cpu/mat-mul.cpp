// y = x * W^T against weights in any supported type. Activations are converted to the weight
// type's vecDotType once; then threads take chunks of output rows and of tokens (see splitWork),
// each chunk's weights held in cache while its tokens pass over them.
#include "mat-mul.h"

#include <algorithm>
#include <cstring>

#include "cpu-features.h"
#include "quants.h"

namespace kiln {

namespace {

// Several tokens: a chunk's weights stay in L2 while the tokens pass over them, and each chunk pays
// once for what the tiles prepare of the tokens (F16's widened rows, Q8_0's prepared pairs). One
// thread of 512x2048 -> 5632, GFLOP/s from 64 KB to 1 MB chunks: Q8_0 109 -> 119, F16 78 -> 91,
// Q4_K and Q6_K the same.
constexpr size_t kChunkBytes = 1024 * 1024;
// With one token nothing is reused: longer runs of contiguous rows keep the hardware prefetcher
// streaming (2 threads, GB/s from 64 KB to 256 KB chunks: Q8_0 20.0 -> 21.6, packed Q4_0 18.2 ->
// 20.7, F16 21.6 -> 23.9), and fewer hand-offs restart fewer streams: Zen 5, TinyLlama decode@0
// (tok/s, alternating, 6 rounds) from 256 KB chunks, at least 4 per thread, to 1 MB, at least 2:
// Q8_0 36.9 -> 40.4 and 29.1 -> 30.3, Q4_0 71.8 -> 75.0; Q4_K and F16 within the noise. A read-only
// loop of decode's pattern over 6.5 MB matrices read 47 GB/s in 256 KB chunks, 52 in 1 MB.
constexpr size_t kVectorChunkBytes = 1024 * 1024;
constexpr int64_t kVectorChunksPerThread = 2;
// A multiple of every tile's row count (3, 4, 6 and 8).
constexpr int64_t kTileRowsMultiple = 24, kDecodeRowsMultiple = 8;
// Enough chunks per thread that a thread slowed by the OS does not hold up the others (decode:
// kVectorChunksPerThread).
constexpr int64_t kChunksPerThread = 4;
// Tokens that meet one weight row while it is still in L1.
constexpr int64_t kTokensPerRow = 4;
// Tokens per chunk of a product of many tokens (a multiple of every prefill tile's token count):
// their activations stay in L1 or L2 while each tile of the chunk's rows passes over them, and the
// chunks are small enough for the threads to finish together. Zen 5, prefill of 512 tokens, tok/s
// with 512 / 64 / 32 / 16 tokens per chunk: Qwen2.5 Q8_0 at the AVX2 tier 236 / 232 / 240 / -,
// later 241 / - / 251 / 251; TinyLlama Q8_0 AVX2 83 / - / 88 / 89, Q4_K AVX2 146 / - / 150 / 150,
// F16 AVX2 96 / - / 101 / 99, Q4_0 best 284 / - / 314 / 309.
constexpr int64_t kTokenChunk = 32;
// Fewer tokens where that keeps a chunk's activations in half of L1 and kTokenChunk's would not:
// each tile of rows reads every token's row of the chunk again, and the other half is for the
// tile's weights. Zen 3 (32 KB L1), Qwen2.5 Q8_0 (952-byte activation rows: 30 KB per 32 tokens,
// 15 KB per 16), prefill of 512 tokens, step time with 16 against 32, steps alternating in one
// process: 0.955 and 0.979; TinyLlama Q8_0 (2176-byte rows, neither fits) 1.013, so it keeps 32.
constexpr int64_t kSmallTokenChunk = 16;
int64_t tokenChunkFor(size_t actRowBytes) {
  const size_t half = (size_t)cpuFeatures().l1dBytes / 2;
  return actRowBytes * kTokenChunk > half && actRowBytes * kSmallTokenChunk <= half ? kSmallTokenChunk : kTokenChunk;
}
// Steps of up to this many tokens (decode, continuous batching's decode steps) run packed Q8_0 as
// decode does: each segment of a super-group's rows (35 KB, in L1) is read from memory once and met
// by every token in turn, each token as a decode step of its own (the same bits). The unpacked
// rows' tiles are built for prefill: TinyLlama Q8_0, 4 sequences' decode step on the Zen 5 VM took
// 3.6x one sequence's time; token after token over each segment 1.9x; with the AVX-512 kernel that
// loads each block's rows once for 4 tokens (gemvQ8_0x8Tokens_avx512) 1.5x.
constexpr int64_t kFewTokens = 8;
// Activation values converted per chunk: below this a conversion (a decode step's row) runs on
// the calling thread alone, since waking a worker costs more.
constexpr int64_t kConvertChunkValues = 32 * 1024;

// How a product's work is cut: output rows in chunks of whole tiles, as equal as the tiles allow,
// times tokens in chunks of tokenChunk (tokenChunkFor). Chunk c takes token chunk c % tokenChunks of
// row chunk c / tokenChunks.
struct Split {
  int64_t rows, multiple, rowChunks, tokens, tokenChunks, tokenChunk;
  int64_t chunks() const { return rowChunks * tokenChunks; }
  int64_t rowBegin(int64_t c) const { return rowAt(c / tokenChunks); }
  int64_t rowEnd(int64_t c) const { return rowAt(c / tokenChunks + 1); }
  int64_t tokenBegin(int64_t c) const { return std::min(tokens, c % tokenChunks * tokenChunk); }
  int64_t tokenEnd(int64_t c) const { return std::min(tokens, (c % tokenChunks + 1) * tokenChunk); }
  // Row chunk rc's first row: the units (whole tiles) shared out as evenly as they divide.
  int64_t rowAt(int64_t rc) const { return std::min(rows, rc * ((rows + multiple - 1) / multiple) / rowChunks * multiple); }
};

// Row r's block of a packed Q8_0 group block, as the file has it.
inline void unpackBlock(const BlockQ8_0x8& p, int r, BlockQ8_0* out) {
  out->d = p.d[r];
  std::memcpy(out->qs, p.qs + QK8_0 * r, QK8_0);
}

// Groups [g0, g1) of packed Q8_0 back in the file's layout: row 8g + r at (8(g - g0) + r) * nb.
// The records are read in their own order, segment by segment.
void unpackQ8_0(const BlockQ8_0x8* groups, const SegmentedLayout& layout, int64_t g0, int64_t g1, BlockQ8_0* dst) {
  const int64_t nb = layout.nb;
  for (int64_t sg = g0 / kQ8SuperGroup; sg * kQ8SuperGroup < g1; sg++) {
    const int64_t first = std::max(g0, sg * kQ8SuperGroup), last = std::min(g1, sg * kQ8SuperGroup + layout.groupsIn(sg));
    for (int64_t s = 0; s < layout.segments(); s++) {
      const int64_t n = layout.segmentBlocks(s);
      for (int64_t g = first; g < last; g++) {
        const BlockQ8_0x8* src = groups + layout.segmentAt(sg, s) + (g - sg * kQ8SuperGroup) * n;
        BlockQ8_0* rows = dst + 8 * (g - g0) * nb + s * layout.span;
        for (int64_t b = 0; b < n; b++)
          for (int r = 0; r < 8; r++) unpackBlock(src[b], r, rows + r * nb + b);
      }
    }
  }
}

// How a product's chunks run: against the file's layout, packed Q4_0, packed Q8_0 one token at a
// time, or packed Q8_0 unpacked per row chunk for several tokens.
enum class JobKind { Plain, PackedQ4_0, PackedQ8_0, UnpackedQ8_0 };

// Everything the workers read for one product, behind one reference so that ThreadPool's
// std::function holds a small closure and does not allocate.
struct MulMatJob {
  JobKind kind = JobKind::Plain;
  const TypeTraits* w = nullptr;
  const TypeTraits* act = nullptr;
  const char* weights = nullptr;
  int64_t rows = 0, cols = 0, nTokens = 0;
  const float* x = nullptr;
  float* y = nullptr;
  char* scratch = nullptr;
  size_t weightRowBytes = 0, actRowBytes = 0;
  // The kernel of a Plain product: w's vecDotMany, or the one for packed Q4_K or Q5_K rows.
  VecDotManyFn many = nullptr;
  Split split{};
  // Packed weights. Q4_0: after the Q8_0 rows in scratch, each block's sums. Q8_0 against several
  // tokens: after them, each thread's unpacked rows, `unpackedStride` bytes apart.
  const PackedWeights* packed = nullptr;
  Q8BlockSums* sums = nullptr;
  char* unpacked = nullptr;
  size_t unpackedStride = 0;

  int64_t chunks() const { return kind == JobKind::UnpackedQ8_0 ? split.rowChunks : split.chunks(); }

  void run(int64_t c, int ith) {
    switch (kind) {
      case JobKind::Plain: multiply(c); break;
      case JobKind::PackedQ4_0: multiplyPacked(c); break;
      case JobKind::PackedQ8_0: multiplyPackedQ8_0(c); break;
      case JobKind::UnpackedQ8_0: multiplyUnpackedQ8_0(c, ith); break;
    }
  }

  // Converts the activations in parallel chunks of blocks (one token's row may be split).
  void convert(ThreadPool& pool) {
    const int64_t values = cols * nTokens;
    const int64_t n = std::min<int64_t>(pool.size() * kChunksPerThread, std::max<int64_t>(1, values / kConvertChunkValues));
    pool.parallelFor(n, [this, n](int64_t c, int) { convertPart(c, n); });
  }

  // Part ith of nth of the tokens' blocks.
  void convertPart(int64_t ith, int64_t nth) {
    const int64_t perRow = cols / act->blockSize;
    const int64_t total = perRow * nTokens;
    for (int64_t b = total * ith / nth, end = total * (ith + 1) / nth; b < end;) {
      const int64_t t = b / perRow, first = b % perRow;
      const int64_t count = std::min(end - b, perRow - first);
      act->fromFloat(x + t * cols + first * act->blockSize, scratch + t * actRowBytes + first * act->typeSize,
                     count * act->blockSize);
      if (sums) blockSums(t, first, count);
      b += count;
    }
  }

  void blockSums(int64_t t, int64_t first, int64_t count) {
    const BlockQ8_0* q = reinterpret_cast<const BlockQ8_0*>(scratch + t * actRowBytes);
    for (int64_t b = first; b < first + count; b++) {
      int32_t sum = 0;
      for (int j = 0; j < QK8_0; j++) sum += q[b].qs[j];
      sums[t * (cols / QK8_0) + b] = {fp16ToFloat(q[b].d), 8 * sum};
    }
  }

  void multiplyPacked(int64_t c) {
    const int64_t nb = cols / QK4_0;
    const BlockQ4_0x8* groups = reinterpret_cast<const BlockQ4_0x8*>(packed->data);
    const int64_t g0 = split.rowBegin(c) / 8, g1 = split.rowEnd(c) / 8;
    const int64_t t0 = split.tokenBegin(c), t1 = split.tokenEnd(c);
    const BlockQ8_0* tokens = reinterpret_cast<const BlockQ8_0*>(scratch) + t0 * nb;
    if (packed->groupRows == 16) gemmQ4_0x16_avx512(nb, rows / 8, g0, g1, t1 - t0, y + t0 * rows + 8 * g0, rows, groups, tokens, sums + t0 * nb);
    else gemmQ4_0x8_avx2(nb, g1 - g0, t1 - t0, y + t0 * rows + 8 * g0, rows, groups + g0 * nb, tokens, sums + t0 * nb);
  }

  // Whole super-groups, each segment by segment with the rows' lanes carried between segments;
  // every token (up to kFewTokens) meets a segment while it is in L1.
  void multiplyPackedQ8_0(int64_t c) {
    const SegmentedLayout layout{cols / QK8_0, packed->rows / 8, kQ8SuperGroup, kQ8SegmentBlocks};
    const BlockQ8_0x8* groups = reinterpret_cast<const BlockQ8_0x8*>(packed->data);
    const BlockQ8_0* tokens = reinterpret_cast<const BlockQ8_0*>(scratch);
    const int64_t nb = cols / QK8_0;
    const auto gemv = useAvx512() ? gemvQ8_0x8_avx512 : gemvQ8_0x8_avx2;
    const int64_t superRows = 8 * kQ8SuperGroup, nSegments = layout.segments();
    alignas(64) float acc[kFewTokens][64 * kQ8SuperGroup];
    const int64_t sg0 = split.rowBegin(c) / superRows, sg1 = (split.rowEnd(c) + superRows - 1) / superRows;
    if (nTokens == 1 && useAvx512()) {
      gemvQ8_0x8Decode_avx512(layout, sg0, sg1, y, groups, tokens);
      return;
    }
    for (int64_t sg = sg0; sg < sg1; sg++) {
      const int64_t n = layout.groupsIn(sg);
      for (int64_t s = 0; s < nSegments; s++) {
        const bool last = s + 1 == nSegments;
        if (nTokens > 1 && useAvx512()) {
          gemvQ8_0x8Tokens_avx512(layout.segmentBlocks(s), n, nTokens, acc[0], 64 * kQ8SuperGroup, s == 0, last ? y + sg * superRows : nullptr,
                                  rows, groups + layout.segmentAt(sg, s), tokens + s * layout.span, nb);
          continue;
        }
        for (int64_t t = 0; t < nTokens; t++)
          gemv(layout.segmentBlocks(s), n, acc[t], s == 0, last ? y + t * rows + sg * superRows : nullptr, groups + layout.segmentAt(sg, s),
               tokens + t * nb + s * layout.span);
      }
    }
  }

  // Row chunk c unpacked into thread ith's part of scratch, then every token chunk against it.
  void multiplyUnpackedQ8_0(int64_t c, int ith) {
    const int64_t r0 = split.rowAt(c), r1 = split.rowAt(c + 1);
    char* mine = unpacked + unpackedStride * (size_t)ith;
    unpackQ8_0(reinterpret_cast<const BlockQ8_0x8*>(packed->data), {cols / QK8_0, packed->rows / 8, kQ8SuperGroup, kQ8SegmentBlocks}, r0 / 8, r1 / 8,
               reinterpret_cast<BlockQ8_0*>(mine));
    for (int64_t t0 = 0; t0 < nTokens; t0 += split.tokenChunk) {
      const int64_t t1 = std::min(nTokens, t0 + split.tokenChunk);
      w->vecDotMany(cols, r1 - r0, t1 - t0, y + t0 * rows + r0, rows, mine, weightRowBytes, scratch + t0 * actRowBytes, actRowBytes);
    }
  }

  void multiply(int64_t c) {
    const char* xs = act->type == GgmlType::F32 ? reinterpret_cast<const char*>(x) : scratch;
    const int64_t r0 = split.rowBegin(c), r1 = split.rowEnd(c);
    const int64_t tBegin = split.tokenBegin(c), tEnd = split.tokenEnd(c);
    if (many) {
      many(cols, r1 - r0, tEnd - tBegin, y + tBegin * rows + r0, rows, weights + r0 * weightRowBytes, weightRowBytes, xs + tBegin * actRowBytes,
           actRowBytes);
      return;
    }
    for (int64_t t0 = tBegin; t0 < tEnd; t0 += kTokensPerRow) {
      const int64_t t1 = std::min(tEnd, t0 + kTokensPerRow);
      for (int64_t r = r0; r < r1; r++) {
        const char* row = weights + r * weightRowBytes;
        for (int64_t t = t0; t < t1; t++) w->vecDot(cols, y + t * rows + r, row, xs + t * actRowBytes);
      }
    }
  }
};

// The chunks: each chunk's weights fit in L2 (or, for one token, make a long stream), there are
// enough chunks for every thread to take several, and the row chunks are as equal as the tiles
// allow. Many tokens go tokenChunkFor(their activation row's bytes) at a time, the token chunks
// of one row chunk in turn, so both threads share its weights in L3. Chunks of a fixed row count
// over every token left a short last one and too few to share (a 128-row K projection went as
// 5 x 24 + 8 rows, on 2 threads). Zen 5,
// AVX2 tier, 2 threads, Q8_0 x 512 tokens in chunks of 64, GFLOP/s before -> after (ggml's
// tinyBLAS): 896 -> 128 135 -> 155 (173), 896 -> 896 181 -> 187 (198), 4864 -> 896 187 -> 200
// (198), TinyLlama's shapes unchanged (197-200).
Split splitWork(size_t weightRowBytes, size_t actRowBytes, int64_t rows, int threads, int64_t multiple, int64_t nTokens) {
  const size_t bytes = nTokens == 1 ? kVectorChunkBytes : kChunkBytes;
  const int64_t perThread = nTokens == 1 ? kVectorChunksPerThread : kChunksPerThread;
  // Whole tiles of rows (the tiles take 3, 4 or 8 rows at a time), so no row of a wide matrix
  // (F16 ffn_down: 5 rows per 64 KB) falls to a one-row tile, and decode's 8-row streams stay whole.
  if (multiple == 1) multiple = nTokens > 1 ? kTileRowsMultiple : kDecodeRowsMultiple;
  const int64_t units = (rows + multiple - 1) / multiple;
  const int64_t tokenChunk = tokenChunkFor(actRowBytes);
  const int64_t tokenChunks = std::max<int64_t>(1, (nTokens + tokenChunk - 1) / tokenChunk);
  const int64_t byBytes = (int64_t)((weightRowBytes * (size_t)rows + bytes - 1) / bytes);
  const int64_t byThreads = (threads * perThread + tokenChunks - 1) / tokenChunks;
  int64_t rowChunks = std::max(byBytes, byThreads);
  if (tokenChunks == 1) rowChunks = (rowChunks + threads - 1) / threads * threads;
  return {rows, multiple, std::max<int64_t>(1, std::min(rowChunks, units)), nTokens, tokenChunks, tokenChunk};
}

}  // namespace

size_t mulMatScratchBytes(GgmlType weightType, int64_t cols, int64_t nTokens) {
  const TypeTraits* w = typeTraits(weightType);
  if (!w || w->vecDotType == GgmlType::F32) return 0;
  return rowBytes(w->vecDotType, cols) * (size_t)nTokens;
}

size_t packedBytes(const TypeTraits& w, int64_t rows, int64_t cols) {
#if defined(__x86_64__) || defined(__i386__)
  const CpuFeatures& f = cpuFeatures();
  // Q8_0 only where the AVX-512 kernels run: at the AVX2 tier its decode gained 4% (47.2 -> 49.1
  // tok/s) and its prefill, through the unpacking, lost 3-4% (TinyLlama 85.8 -> 82.7, Qwen2.5
  // 203 -> 198), the tier where Q8_0 prefill is level with llama.cpp's.
  const bool q8 = w.type == GgmlType::Q8_0 && useAvx512();
  if (kernelLevel() == KernelLevel::Generic || !(f.avx2 && f.fma && f.f16c)) return 0;
  // Q4_K and Q5_K row by row for the AVX2 kernels; the AVX-512 ones read the file's layout.
  if (w.type == GgmlType::Q4_K || w.type == GgmlType::Q5_K)
    return useAvx512() ? 0 : (size_t)scaleMinKPackedRowBytes(w.type == GgmlType::Q5_K, cols / QK_K) * (size_t)rows;
  if ((w.type != GgmlType::Q4_0 && !q8) || rows % 8 != 0) return 0;
  return rowBytes(w.type, cols) * (size_t)rows;
#else
  (void)w, (void)rows, (void)cols;
  return 0;
#endif
}

namespace {

PackedWeights packQ8_0(const TypeTraits& w, const void* weights, int64_t rows, int64_t cols, uint8_t* dst) {
  const int64_t nb = cols / QK8_0;
  const SegmentedLayout layout{nb, rows / 8, kQ8SuperGroup, kQ8SegmentBlocks};
  const BlockQ8_0* src = static_cast<const BlockQ8_0*>(weights);
  BlockQ8_0x8* groups = reinterpret_cast<BlockQ8_0x8*>(dst);
  for (int64_t g = 0; g < rows / 8; g++) {
    for (int64_t b = 0; b < nb; b++) {
      BlockQ8_0x8& p = groups[layout.at(g, b)];
      for (int r = 0; r < 8; r++) {
        const BlockQ8_0& q = src[(8 * g + r) * nb + b];
        p.d[r] = q.d;
        std::memcpy(p.qs + QK8_0 * r, q.qs, QK8_0);
      }
    }
  }
  return PackedWeights{w.type, rows, cols, 8, dst};
}

// Group g's 32 bytes of nibbles of a packed Q4_K or Q5_K row's block (see ScaleMinKHeader): byte
// 4l + j holds x0's value and, in its high nibble, x1's, where x0's 4-byte lane l is lo[4l],
// lo[4l + 1], hi[4l], hi[4l + 1] and x1's lo[4l + 2], lo[4l + 3], hi[4l + 2], hi[4l + 3]. The
// file's byte i of the group holds lo[i] and, high, hi[i] (Q5_K's fifth bits: bits 2g and 2g + 1
// of qh[i]). forEach(packedByte, packedHalf, fileByte, fileHalf) visits all 64 values (halves: 0
// for x0 and lo, 1 for x1 and hi). packScaleMinK_avx2 packs in this order; get_rows reads it back.
template <typename F>
void scaleMinKPairedOrder(F forEach) {
  for (int k = 0; k < 32; k++) {
    const int l = k / 4, j = k % 4;
    // x0: lo or hi of value 4l + j % 2; x1: of value 4l + 2 + j % 2.
    forEach(k, 0, 4 * l + j % 2, j / 2);
    forEach(k, 1, 4 * l + 2 + j % 2, j / 2);
  }
}

// Row r of packed Q4_K or Q5_K as floats, each block back in the file's layout and through the
// type's toFloat (a block on the stack: get_rows runs in the forward step).
template <typename Block>
void packedScaleMinKRowToFloat(const PackedWeights& w, int64_t r, float* out) {
  constexpr bool kFifthBit = std::is_same_v<Block, BlockQ5_K>;
  const int64_t nb = w.cols / QK_K;
  const ScaleMinKPackedRow<kFifthBit> row(w.data + r * scaleMinKPackedRowBytes(kFifthBit, nb), nb);
  const TypeTraits& traits = *typeTraits(w.type);
  for (int64_t b = 0; b < nb; b++) {
    Block q;
    std::memset(&q, 0, sizeof q);
    q.d = row.header(b).d;
    q.dmin = row.header(b).dmin;
    packScalesMinsK4(row.header(b).scalesMins, row.header(b).scalesMins + 8, q.scales);
    for (int g = 0; g < QK_K / 64; g++) {
      const uint8_t* in = row.nibbles(b) + 32 * g;
      uint8_t* file = q.qs + 32 * g;
      scaleMinKPairedOrder([&](int k, int half, int i, int fileHalf) {
        file[i] |= (uint8_t)(((in[k] >> (4 * half)) & 0x0f) << (4 * fileHalf));
        if constexpr (kFifthBit) q.qh[i] |= (uint8_t)(((row.fifthBits(b)[k] >> (2 * g + half)) & 1) << (2 * g + fileHalf));
      });
    }
    traits.toFloat(&q, out + b * QK_K, QK_K);
  }
}

}  // namespace

// Packs W's rows 8 at a time (BlockQ4_0x8, BlockQ8_0x8), for the AVX-512 Q4_0 tile 16 at a time
// (BlockQ4_0x16 in a SegmentedLayout, an odd last group of 8 after them as BlockQ4_0x8), or Q4_K
// and Q5_K row by row (ScaleMinKHeader).
PackedWeights packWeights(const TypeTraits& w, const void* weights, int64_t rows, int64_t cols, uint8_t* dst) {
  if (w.type == GgmlType::Q8_0) return packQ8_0(w, weights, rows, cols, dst);
#if defined(__x86_64__) || defined(__i386__)
  if (w.type == GgmlType::Q4_K || w.type == GgmlType::Q5_K) {
    packScaleMinK_avx2(w.type == GgmlType::Q5_K, weights, rows, cols / QK_K, dst);
    return PackedWeights{w.type, rows, cols, 1, dst};
  }
#endif
  const int64_t nb = cols / QK4_0, nGroups = rows / 8, nPairs = useAvx512() ? nGroups / 2 : 0;
  const SegmentedLayout pairs{nb, nPairs, kQ4SuperPairs, kQ4SegmentBlocks};
  const BlockQ4_0* src = static_cast<const BlockQ4_0*>(weights);
  BlockQ4_0x8* groups = reinterpret_cast<BlockQ4_0x8*>(dst);
  for (int64_t g = 0; g < nGroups; g++) {
    const bool paired = g < 2 * nPairs;
    for (int64_t b = 0; b < nb; b++) {
      // Where this group's block goes: its half of its pair's x16 block, or its own x8 block.
      fp16_t* d;
      uint8_t* qs;
      int64_t stride;
      if (paired) {
        const SplitRun<BlockQ4_0x16, uint8_t> run(reinterpret_cast<BlockQ4_0x16*>(groups) + pairs.runAt(g / 2, b / pairs.span),
                                                  pairs.segmentBlocks(b / pairs.span));
        d = run.d(b % pairs.span) + 8 * (g % 2);
        qs = run.qs(b % pairs.span) + 32 * (g % 2);
        stride = 64;
      } else {
        BlockQ4_0x8& p = groups[g * nb + b];
        d = p.d;
        qs = p.qs;
        stride = 32;
      }
      for (int r = 0; r < 8; r++) {
        const BlockQ4_0& q = src[(8 * g + r) * nb + b];
        d[r] = q.d;
        for (int c = 0; c < 4; c++) std::memcpy(qs + stride * c + 4 * r, q.qs + 4 * c, 4);
      }
    }
  }
  return PackedWeights{w.type, rows, cols, useAvx512() ? 16 : 8, dst};
}

namespace {

// The Q8_0 rows, then (aligned) their blocks' sums (Q4_0) or each thread's unpacked rows (Q8_0).
size_t packedSumsOffset(int64_t cols, int64_t nTokens) {
  return (rowBytes(GgmlType::Q8_0, cols) * (size_t)nTokens + 63) / 64 * 64;
}

// Packed Q8_0 against several tokens: row chunks of whole groups, each unpacked once by the thread
// that takes it (into its own part of scratch, in L2) and then passed over by every token chunk with
// the file layout's tiles; so prefill and decode share one copy of the weights. Chunks fit L2, each
// thread takes several, and in units of one group they come out equal for the small products
// (units of 24 rows cut a 256-row K projection 2-2-1-...: 9% slower than the file layout's split).
Split unpackSplit(const PackedWeights& w, int threads) {
  const size_t bytes = rowBytes(w.type, w.cols) * (size_t)w.rows;
  int64_t chunks = std::max<int64_t>((int64_t)((bytes + kChunkBytes - 1) / kChunkBytes), threads * kChunksPerThread);
  chunks = (chunks + threads - 1) / threads * threads;
  return {w.rows, 8, std::max<int64_t>(1, std::min(chunks, w.rows / 8)), 1, 1, tokenChunkFor(rowBytes(GgmlType::Q8_0, w.cols))};
}

// At least the rows of any chunk of a split (rowAt gives each at most the units rounded up).
int64_t unpackRows(const Split& split) {
  const int64_t units = (split.rows + split.multiple - 1) / split.multiple;
  return (units + split.rowChunks - 1) / split.rowChunks * split.multiple;
}

size_t unpackedStride(const PackedWeights& w, const Split& split) {
  return (rowBytes(w.type, w.cols) * (size_t)unpackRows(split) + 63) / 64 * 64;
}

// Whether a product of nTokens rows streams its weights from memory, each chunk read once for every
// token, and its threads are few enough for runs: then each thread takes a run of consecutive chunks (ThreadPool::parallelForRuns, runs of
// equal bytes by runStarts). TinyLlama decode on the Zen 5 VM, steps alternating between the two
// ways in one process (4 windows of 100 steps each, so the memory's swings fall on both alike),
// step time with runs against turns: Q4_0 0.979-0.989, Q8_0 0.989-1.002, Q4_K 0.984-1.009, in a
// slow-memory stretch. Many tokens take a row chunk's token chunks in turn, so both threads share
// its weights in L3.
// Runs are worked out for up to kMaxRunThreads threads (more take turns).
constexpr int kMaxRunThreads = 64;
bool inRuns(int64_t nTokens, int threads) { return nTokens <= kTokenChunk && threads <= kMaxRunThreads; }

// The runs of the chunks of `count` jobs (numbered as mulMatShared numbers them) for `threads`
// threads, as equal in weight bytes as whole chunks allow: a layer's Q chunks are 8 times its K and
// V chunks, and equal counts of chunks gave one thread Q's 2.4 MB and the other K and V's 0.6 (then
// mended by taking Q's last chunks, each a stream of its own).
void runStarts(const MulMatJob* jobs, int count, int threads, int64_t* starts) {
  size_t total = 0;
  for (int i = 0; i < count; i++) total += jobs[i].weightRowBytes * (size_t)jobs[i].rows;
  starts[0] = 0;
  int t = 1;
  size_t before = 0;  // the bytes of the chunks before chunk c
  int64_t c = 0;
  for (int i = 0; i < count; i++) {
    const MulMatJob& job = jobs[i];
    const size_t rb = job.weightRowBytes;
    for (int64_t k = 0; k < job.chunks(); k++, c++) {
      const size_t bytes = rb * (size_t)(job.split.rowEnd(k) - job.split.rowBegin(k));
      // Thread t's run starts at the chunk boundary nearest t / threads of the bytes.
      while (t < threads && (before + bytes / 2) * (size_t)threads >= total * (size_t)t) starts[t++] = c;
      before += bytes;
    }
  }
  while (t <= threads) starts[t++] = c;
}

// One product's job: its kind, its chunks, and where in scratch its activations (and their sums,
// or its unpacked rows) go.
MulMatJob makeJob(const MulMatProduct& p, int64_t cols, const float* x, int64_t nTokens, int threads, char* scratch) {
  MulMatJob job;
  job.rows = p.rows;
  job.cols = cols;
  job.nTokens = nTokens;
  job.x = x;
  job.y = p.y;
  job.scratch = scratch;
  const bool scaleMinK = p.packed && (p.packed->type == GgmlType::Q4_K || p.packed->type == GgmlType::Q5_K);
  if (const PackedWeights* w = p.packed; w && !scaleMinK) {
    const TypeTraits& q8 = *typeTraits(GgmlType::Q8_0);
    job.packed = w;
    job.act = &q8;
    job.actRowBytes = rowBytes(GgmlType::Q8_0, cols);
    if (w->type == GgmlType::Q8_0) {
      job.w = &q8;
      job.weightRowBytes = job.actRowBytes;
      if (nTokens <= kFewTokens) {
        job.kind = JobKind::PackedQ8_0;
        job.split = splitWork(job.weightRowBytes, job.actRowBytes, w->rows, threads, 8 * kQ8SuperGroup, 1);
      } else {
        job.kind = JobKind::UnpackedQ8_0;
        job.split = unpackSplit(*w, threads);
        job.unpacked = scratch ? scratch + packedSumsOffset(cols, nTokens) : nullptr;
        job.unpackedStride = unpackedStride(*w, job.split);
      }
    } else {
      // The AVX-512 tiles take two groups of 8 rows at a time, in super-groups: chunks of whole
      // super-groups.
      job.kind = JobKind::PackedQ4_0;
      job.w = typeTraits(w->type);
      job.weightRowBytes = rowBytes(w->type, cols);
      job.split = splitWork(rowBytes(w->type, cols), job.actRowBytes, w->rows, threads, w->groupRows == 16 && nTokens == 1 ? 16 * kQ4SuperPairs : w->groupRows, nTokens);
      job.sums = scratch ? reinterpret_cast<Q8BlockSums*>(scratch + packedSumsOffset(cols, nTokens)) : nullptr;
    }
    return job;
  }
  // The file's layout, or packed Q4_K/Q5_K rows: the same product at another row width, with
  // their own kernel.
  if (!scaleMinK) {
    job.w = p.w;
    job.weights = static_cast<const char*>(p.weights);
    job.weightRowBytes = rowBytes(p.w->type, cols);
    job.many = p.w->vecDotMany;
  } else {
#if defined(__x86_64__) || defined(__i386__)
    const bool q5 = p.packed->type == GgmlType::Q5_K;
    job.w = typeTraits(p.packed->type);
    job.weights = reinterpret_cast<const char*>(p.packed->data);
    job.weightRowBytes = (size_t)scaleMinKPackedRowBytes(q5, cols / QK_K);
    job.many = q5 ? vecDotManyQ5_KPacked_avx2 : vecDotManyQ4_KPacked_avx2;
#endif
  }
  job.act = typeTraits(job.w->vecDotType);
  job.actRowBytes = rowBytes(job.act->type, cols);
  job.split = splitWork(job.weightRowBytes, job.actRowBytes, p.rows, threads, 1, nTokens);
  return job;
}

}  // namespace

size_t mulMatPackedScratchBytes(const PackedWeights& w, int64_t nTokens, int threads) {
  if (w.type == GgmlType::Q4_K || w.type == GgmlType::Q5_K) return mulMatScratchBytes(w.type, w.cols, nTokens);
  if (w.type == GgmlType::Q8_0) return packedSumsOffset(w.cols, nTokens) + unpackedStride(w, unpackSplit(w, threads)) * (size_t)threads;
  return packedSumsOffset(w.cols, nTokens) + (size_t)(w.cols / QK8_0) * sizeof(Q8BlockSums) * (size_t)nTokens;
}

bool packedRowsReadable(GgmlType type) { return type == GgmlType::Q8_0 || type == GgmlType::Q4_K || type == GgmlType::Q5_K; }

void packedRowToFloat(const PackedWeights& w, int64_t row, float* out) {
  if (w.type == GgmlType::Q4_K) return packedScaleMinKRowToFloat<BlockQ4_K>(w, row, out);
  if (w.type == GgmlType::Q5_K) return packedScaleMinKRowToFloat<BlockQ5_K>(w, row, out);
  const int64_t nb = w.cols / QK8_0;
  const SegmentedLayout layout{nb, w.rows / 8, kQ8SuperGroup, kQ8SegmentBlocks};
  const BlockQ8_0x8* groups = reinterpret_cast<const BlockQ8_0x8*>(w.data);
  const TypeTraits& q8 = *typeTraits(GgmlType::Q8_0);
  for (int64_t b = 0; b < nb; b++) {
    BlockQ8_0 block;
    unpackBlock(groups[layout.at(row / 8, b)], (int)(row % 8), &block);
    q8.toFloat(&block, out + b * QK8_0, QK8_0);
  }
}

// The products' activations are converted once (with the block sums if a packed Q4_0 product needs
// them) and every product's chunks go to one parallel loop, the products in order. Products that
// cannot share (other activation types, or packed Q4_0's sums beside unpacked Q8_0 rows in the
// same part of scratch) run one after another. Each product's rows get the kernels' own bits.
void mulMatShared(const MulMatProduct* products, int count, int64_t cols, const float* x, int64_t nTokens, ThreadPool& pool,
                  void* scratch) {
  char* s = static_cast<char*>(scratch);
  MulMatJob jobs[kMaxSharedProducts];
  bool share = count <= kMaxSharedProducts;
  Q8BlockSums* sums = nullptr;
  size_t stride = 0;
  for (int i = 0; share && i < count; i++) {
    jobs[i] = makeJob(products[i], cols, x, nTokens, pool.size(), s);
    if (jobs[i].act != jobs[0].act) share = false;
    if (jobs[i].sums) sums = jobs[i].sums;
    stride = std::max(stride, jobs[i].unpackedStride);
  }
  if (sums && stride) share = false;
  if (!share) {
    for (int i = 0; i < count; i++) mulMatShared(products + i, 1, cols, x, nTokens, pool, scratch);
    return;
  }
  // Threads take chunks of different products: each thread's unpacked rows at the largest stride.
  int64_t firstChunk[kMaxSharedProducts + 1] = {0};
  for (int i = 0; i < count; i++) {
    if (jobs[i].unpacked) jobs[i].unpackedStride = stride;
    firstChunk[i + 1] = firstChunk[i] + jobs[i].chunks();
  }
  MulMatJob converter = jobs[0];
  converter.sums = sums;
  if (converter.act->type != GgmlType::F32) converter.convert(pool);
  const auto run = [&jobs, &firstChunk](int64_t c, int ith) {
    int i = 0;
    while (c >= firstChunk[i + 1]) i++;
    jobs[i].run(c - firstChunk[i], ith);
  };
  if (inRuns(nTokens, pool.size())) {
    int64_t starts[kMaxRunThreads + 1];
    runStarts(jobs, count, pool.size(), starts);
    pool.parallelForRuns(firstChunk[count], starts, run);
  } else {
    pool.parallelFor(firstChunk[count], run);
  }
}

void mulMatFirstChunks(const MulMatProduct* products, int count, int64_t cols, int64_t nTokens, int threads, const char** spans,
                       size_t* bytes) {
  MulMatJob jobs[kMaxSharedProducts];
  int64_t total = 0;
  count = std::min(count, kMaxSharedProducts);
  for (int i = 0; i < count; i++) {
    jobs[i] = makeJob(products[i], cols, nullptr, nTokens, threads, nullptr);
    total += jobs[i].chunks();
  }
  const bool runs = inRuns(nTokens, threads);
  int64_t starts[kMaxRunThreads + 1];
  if (runs) runStarts(jobs, count, threads, starts);
  for (int t = 0; t < threads; t++) {
    spans[t] = nullptr;
    bytes[t] = 0;
    // Thread t's first chunk: the start of its run, or chunk t when the threads take turns.
    int64_t c = runs ? starts[t] : t;
    if (c >= total || (runs && c == starts[t + 1])) continue;  // none, or an empty run
    int i = 0;
    while (c >= jobs[i].chunks()) c -= jobs[i++].chunks();
    // Every layout keeps a chunk's rows together, at the file layout's bytes per row (packed Q4_K
    // and Q5_K at their own): the packed groups one after another, packed Q8_0's segments within their
    // super-group.
    const size_t rb = jobs[i].weightRowBytes;
    const char* base = products[i].packed ? reinterpret_cast<const char*>(products[i].packed->data) : static_cast<const char*>(products[i].weights);
    const int64_t r0 = jobs[i].split.rowBegin(c), r1 = jobs[i].split.rowEnd(c);
    spans[t] = base + rb * (size_t)r0;
    bytes[t] = rb * (size_t)(r1 - r0);
  }
}

void mulMatPacked(const PackedWeights& w, const float* x, int64_t nTokens, float* y, ThreadPool& pool, void* scratch) {
  const MulMatProduct p{nullptr, nullptr, &w, w.rows, y};
  mulMatShared(&p, 1, w.cols, x, nTokens, pool, scratch);
}

void mulMat(const TypeTraits& w, const void* weights, int64_t rows, int64_t cols, const float* x,
            int64_t nTokens, float* y, ThreadPool& pool, void* scratch) {
  const MulMatProduct p{&w, weights, nullptr, rows, y};
  mulMatShared(&p, 1, cols, x, nTokens, pool, scratch);
}

}  // namespace kiln

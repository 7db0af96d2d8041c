// Matrix products against weights in any supported type.
#pragma once
#include <cstddef>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "thread-pool.h"
#include "type-traits.h"

namespace kiln {

// Scratch bytes mulMat needs for nTokens activation rows of width cols.
size_t mulMatScratchBytes(GgmlType weightType, int64_t cols, int64_t nTokens);

// y (nTokens, rows) = x (nTokens, cols) * W^T, with W (rows, cols) in its GGML block layout.
// Activations are first converted to the weight type's vecDotType into `scratch`
// (mulMatScratchBytes bytes), then output rows are split across the pool's threads.
// Called from the pool's owner thread; uses every thread of the pool.
void mulMat(const TypeTraits& w, const void* weights, int64_t rows, int64_t cols, const float* x,
            int64_t nTokens, float* y, ThreadPool& pool, void* scratch);

// Q4_0 blocks of 8 consecutive rows at one block index, interleaved so that one 32-byte load
// holds 4 bytes (8 values) of each row and a product's 8 lanes are the 8 rows: the layout
// llama.cpp's AVX2 build repacks Q4_0 into (block_q4_0x8), with the nibbles left unsigned.
struct BlockQ4_0x8 {
  fp16_t d[8];        // the rows' scales
  uint8_t qs[4 * 32]; // chunk c holds bytes 4c..4c+3 of each row's qs, row r at 32c + 4r
};
static_assert(sizeof(BlockQ4_0x8) == 8 * sizeof(BlockQ4_0), "wrong q4_0x8 block size");

// Two groups of 8 rows (16 rows) at one block index, for the AVX-512 tile: group g's scales and
// 32-byte chunks in the lower halves, group g + 1's in the upper, so a chunk of 16 rows is one
// 64-byte load and a pair of groups is one stream. The same bytes as two BlockQ4_0x8, reordered: a
// pair's nb blocks take the place of the two groups' 2 * nb.
// Packed, each pair's run of blocks in a segment keeps its scales and values apart (SplitRun).
struct BlockQ4_0x16 {
  fp16_t d[16];        // the rows' scales, row r at r
  uint8_t qs[4 * 64];  // chunk c at 64c: BlockQ4_0x8::qs chunk c of group g, then of group g + 1
};
static_assert(sizeof(BlockQ4_0x16) == 2 * sizeof(BlockQ4_0x8), "wrong q4_0x16 block size");

// Q4_K and Q5_K rows repacked for the AVX2 kernels, row by row, so that each row is still one
// stream: the row's block headers (ScaleMinKHeader: d, dmin, and the 6-bit scales and mins already
// unpacked to bytes, scalesMinsK4's order), padded to 32 bytes, then its blocks' values (Q5_K: 32
// bytes of fifth bits, then the nibbles), each 32-byte load on one line. Each group g of 64 values
// (sub-blocks 2g and 2g + 1: lo and hi) keeps its 32 bytes of nibbles, but in the order the
// kernels multiply them: the low nibbles of byte 4l + j are x0 and the high nibbles x1, where
// 32-bit lane l of x0 holds lo[4l], lo[4l + 1], hi[4l], hi[4l + 1] and of x1 lo[4l + 2],
// lo[4l + 3], hi[4l + 2], hi[4l + 3] (the tokens' values paired the same way); Q5_K's fifth bit
// of x0's byte k is bit 2g of fifth-bit byte k, of x1's bit 2g + 1. One madd then takes both
// sub-blocks' sums of 4 with their two scales, where the file's order needs a madd and a scale
// shuffle for each, and no block unpacks its scales. A block takes 4 bytes more than the file's
// (Q4_K 148 against 144, Q5_K 180 against 176). Zen 3, TinyLlama Q4_K at the AVX2 tier, 2
// threads, processes alternating (4 rounds, medians of 3): decode 31-36 -> 45-55 tok/s, a 128-token
// prefill 120-133 -> 125-144 tok/s, the same tokens; Q5_K, 7 rounds, decode 1.02-1.38x a round
// (median 1.08x), the 128-token prefill within the swing (0.98-1.09x).
struct ScaleMinKHeader {
  fp16_t d, dmin;
  uint8_t scalesMins[16];  // the 8 scales, then the 8 mins
};
static_assert(sizeof(ScaleMinKHeader) == 20, "d, dmin, 16 bytes");
// A packed block's values: Q4_K's nibbles, or Q5_K's fifth bits and nibbles.
constexpr int64_t scaleMinKValueBytes(bool fifthBit) { return QK_K / 2 + (fifthBit ? QK_K / 8 : 0); }
constexpr int64_t scaleMinKHeaderBytes(int64_t nb) { return (nb * (int64_t)sizeof(ScaleMinKHeader) + 31) / 32 * 32; }
constexpr int64_t scaleMinKPackedRowBytes(bool fifthBit, int64_t nb) { return scaleMinKHeaderBytes(nb) + nb * scaleMinKValueBytes(fifthBit); }
// Where a packed Q4_K (kFifthBit false) or Q5_K row of nb blocks keeps its parts.
template <bool kFifthBit>
struct ScaleMinKPackedRow {
  static constexpr int64_t kValueBytes = scaleMinKValueBytes(kFifthBit), kBitBytes = kFifthBit ? QK_K / 8 : 0;
  const ScaleMinKHeader* headers = nullptr;
  const uint8_t* data = nullptr;  // the blocks' values, after the headers
  ScaleMinKPackedRow() = default;
  ScaleMinKPackedRow(const void* row, int64_t nb)
      : headers(static_cast<const ScaleMinKHeader*>(row)), data(static_cast<const uint8_t*>(row) + scaleMinKHeaderBytes(nb)) {}
  const ScaleMinKHeader& header(int64_t b) const { return headers[b]; }
  const uint8_t* fifthBits(int64_t b) const { return data + kValueBytes * b; }
  const uint8_t* nibbles(int64_t b) const { return fifthBits(b) + kBitBytes; }
};

// A Q8_0 activation block's scale as a float and 8 times the sum of its values: what a product
// with unsigned Q4_0 nibbles n needs to give sum((n - 8) * y).
struct Q8BlockSums {
  float d;
  int32_t sum8;
};

// 8 Q8_0 rows, block by block: block b of rows 8g..8g+7 is one 272-byte record, their 8 scales
// then their 8 x 32 values. Decode reads a group as one stream, which the hardware prefetcher
// follows; 8 rows in the file's layout are 8 short streams, which it does not.
struct BlockQ8_0x8 {
  fp16_t d[8];
  int8_t qs[8 * QK8_0];
};
static_assert(sizeof(BlockQ8_0x8) == 8 * sizeof(BlockQ8_0), "8 blocks, rearranged");

// Where packed weights keep their records (BlockQ8_0x8 for Q8_0's groups of 8 rows, BlockQ4_0x16
// for the AVX-512 Q4_0 tile's pairs of groups): the groups go in super-groups of `superGroup`;
// within a super-group the blocks go in segments of 32 blocks (1024 values), segment after
// segment, each segment group after group. Decode takes whole super-groups, so a chunk is still one
// stream, while the token's blocks of one segment (1 KB) serve each group in turn. With the token's
// whole row (2-6 KB) read between one group's blocks and the next's, Q8_0 decode products of 5632
// values per row (ffn_down) streamed 12-15% slower than those of 2048 at the same bytes (Zen 5);
// the rows' lanes now wait in memory between segments instead. TinyLlama Q8_0 decode@0,
// alternating, 8 rounds: ahead in 6 pairs, +3% the median pair (1.03-1.17x). Packed Q4_0 paid the
// same: its ffn_down products read 0.77x the rate of the step's output product (Q6_K, untouched)
// where gate/up read 0.97x; segmented, 0.91x and 0.98x (per-op timer, TinyLlama decode, three
// alternating runs each). Prefill takes each pair's segments in one pass and its rows in chunks of
// 16: segment by segment in chunks of whole super-groups it lost 3-5% (TinyLlama Q4_0, 512
// tokens), this way -1% in the median of 5 alternating pairs, within their spread.
constexpr int64_t kQ8SuperGroup = 4, kQ8SegmentBlocks = 32;   // groups of 8 Q8_0 rows: 32 rows
constexpr int64_t kQ4SuperPairs = 2, kQ4SegmentBlocks = 32;    // pairs of groups of 8 Q4_0 rows: 32 rows

struct SegmentedLayout {
  int64_t nb, nGroups, superGroup, span;  // blocks per row, groups, groups per super-group, blocks per segment
  int64_t segments() const { return (nb + span - 1) / span; }
  int64_t segmentBlocks(int64_t s) const { return nb - s * span < span ? nb - s * span : span; }
  int64_t superGroups() const { return (nGroups + superGroup - 1) / superGroup; }
  int64_t groupsIn(int64_t sg) const { return nGroups - sg * superGroup < superGroup ? nGroups - sg * superGroup : superGroup; }
  // The first record of super-group sg's segment s (its groups' blocks follow, group after group).
  int64_t segmentAt(int64_t sg, int64_t s) const { return sg * superGroup * nb + s * span * groupsIn(sg); }
  // Group g's run of blocks in segment s: the first of its segmentBlocks(s) records.
  int64_t runAt(int64_t g, int64_t s) const { return segmentAt(g / superGroup, s) + g % superGroup * segmentBlocks(s); }
  // Group g's block b.
  int64_t at(int64_t g, int64_t b) const { return runAt(g, b / span) + b % span; }
};

// Where a group's run of n records within a segment (BlockQ4_0x16, `Block`) keeps them: a line's
// worth of records at a time (2 of Q4_0's 32 bytes of scales), their scales on one 64-byte line,
// then their 256-byte value parts. Every block's values then start on a line (when the weights
// start on one and n is even), where whole 288-byte records put every value load of every other
// block across two lines; and the run is still read in order, one stream. One thread, 256 rows x
// 2048 in L2 (bench kernel-timer, alternating builds): 1 token 4.46 -> 3.93 us, 4 tokens 10.90 ->
// 9.85. From memory the cost is the stream's: TinyLlama Q8_0 decode with every product replaced
// by a plain read of its weights read them 1.23-1.37x slower 16 bytes off the lines than on them
// (steps alternating in one process, Zen 5). (Packed Q8_0, 272-byte records, kept them: aligned
// that way it went 2.5% slower in L2 and no faster from memory.) All the scales of a run first and
// then all its values, two streams, was 1.6x slower.
template <typename Block, typename Byte = const uint8_t>
struct SplitRun {
  static constexpr int64_t kScaleBytes = sizeof(Block::d), kValueBytes = sizeof(Block::qs), kPerLine = 64 / kScaleBytes;
  static_assert(kScaleBytes + kValueBytes == sizeof(Block), "a record is its scales and its values");
  static_assert(kValueBytes % 64 == 0 && 64 % kScaleBytes == 0, "whole lines");
  Byte* base;  // the run's first record
  int64_t n;
  template <typename B>
  SplitRun(B* records, int64_t count) : base(reinterpret_cast<Byte*>(records)), n(count) {}
  // Record i's scales (fp16_t[8 or 16]) and values.
  auto d(int64_t i) const {
    return reinterpret_cast<std::conditional_t<std::is_const_v<Byte>, const fp16_t, fp16_t>*>(line(i) + kScaleBytes * (i % kPerLine));
  }
  Byte* qs(int64_t i) const {
    const int64_t first = i - i % kPerLine, count = n - first < kPerLine ? n - first : kPerLine;
    return line(i) + kScaleBytes * count + kValueBytes * (i % kPerLine);
  }

 private:
  Byte* line(int64_t i) const { return base + (int64_t)sizeof(Block) * (i - i % kPerLine); }
};

#if defined(__x86_64__) || defined(__i386__)
// mat-mul-avx2.cpp and mat-mul-avx512.cpp: one token against nGroups groups of 8 packed Q8_0 rows,
// nb blocks of each (x: group after group; y: the token's same nb blocks), carried in acc (64
// floats per group: row r's 8 lanes at 8r), started at zero when `first`. With s, the last blocks
// of the rows: s[8g + r] is row r's sum, and acc is left as it was. Segment after segment, every
// row gets the bits of vecDotQ8_0_avx2.
void gemvQ8_0x8_avx2(int64_t nb, int64_t nGroups, float* acc, bool first, float* s, const BlockQ8_0x8* x, const BlockQ8_0* y);
void gemvQ8_0x8_avx512(int64_t nb, int64_t nGroups, float* acc, bool first, float* s, const BlockQ8_0x8* x, const BlockQ8_0* y);
// One token (decode) against super-groups [sg0, sg1) of packed Q8_0 in `layout`, two streams a
// thread: row r's sum at s[r], its bits as gemvQ8_0x8_avx512's.
void gemvQ8_0x8Decode_avx512(const SegmentedLayout& layout, int64_t sg0, int64_t sg1, float* s, const BlockQ8_0x8* x, const BlockQ8_0* y);
// gemvQ8_0x8_avx512 for nt tokens (a continuous-batching step), the rows read once for each 4:
// token t's acc at acc + t * ldAcc, its blocks at y + t * ldY, its row sums at s + t * ldS; every
// token gets the bits it gets alone.
void gemvQ8_0x8Tokens_avx512(int64_t nb, int64_t nGroups, int64_t nt, float* acc, int64_t ldAcc, bool first, float* s, int64_t ldS,
                             const BlockQ8_0x8* x, const BlockQ8_0* y, int64_t ldY);
// mat-mul-avx2.cpp: s[t * ldS + 8g + r] for nGroups groups of 8 packed rows (nb blocks each) and nt
// Q8_0 activation rows (nb blocks each, with their sums): one FMA per block in block order on the
// block's exact integer sum, the bits of vecDotQ4_0_generic.
void gemmQ4_0x8_avx2(int64_t nb, int64_t nGroups, int64_t nt, float* s, int64_t ldS, const BlockQ4_0x8* x,
                     const BlockQ8_0* y, const Q8BlockSums* sums);
// mat-mul-avx512.cpp: the same with VNNI over pairs of groups packed as BlockQ4_0x16 in a
// SegmentedLayout of kQ4SuperPairs (an odd last group after the pairs as BlockQ4_0x8, its blocks in
// order), 16 rows per 512-bit tile, the same bits: groups [g0, g1) (g0 even) of the nGroups at x,
// s[t * ldS + 8(g - g0) + r].
void gemmQ4_0x16_avx512(int64_t nb, int64_t nGroups, int64_t g0, int64_t g1, int64_t nt, float* s, int64_t ldS,
                        const BlockQ4_0x8* x, const BlockQ8_0* y, const Q8BlockSums* sums);
// mat-mul-k-avx2.cpp: vecDotManyQ4_K_avx2's and vecDotManyQ5_K_avx2's products, with their bits,
// against rows packed as ScaleMinKHeader describes (xStride: scaleMinKPackedRowBytes).
void vecDotManyQ4_KPacked_avx2(int64_t n, int64_t nr, int64_t nt, float* s, int64_t ldS, const void* x, size_t xStride,
                               const void* y, size_t yStride);
void vecDotManyQ5_KPacked_avx2(int64_t n, int64_t nr, int64_t nt, float* s, int64_t ldS, const void* x, size_t xStride,
                               const void* y, size_t yStride);
// mat-mul-k-avx2.cpp: rows of Q4_K (fifthBit false) or Q5_K blocks (nb a row) packed into dst as
// ScaleMinKHeader describes.
void packScaleMinK_avx2(bool fifthBit, const void* src, int64_t rows, int64_t nb, uint8_t* dst);
#endif

// Weights rearranged once, when a plan is built, for a kernel that reads several rows at once.
// Products against them have the same bits as mulMat on the original layout.
// The packed bytes live where the caller put them (the plan's weight arena, on huge pages).
struct PackedWeights {
  GgmlType type = GgmlType::F32;
  int64_t rows = 0, cols = 0;
  // Rows per packed block: 8 (BlockQ4_0x8, BlockQ8_0x8), 16 (pairs of groups as BlockQ4_0x16), or 1
  // (Q4_K, Q5_K).
  int groupRows = 8;
  const uint8_t* data = nullptr;
};

// Bytes of W's packed form when this CPU has a kernel for one at the current kernel level (Q4_0
// with AVX2 and Q8_0 with the AVX-512 kernels, rows a multiple of 8; Q4_K and Q5_K with the AVX2
// kernels, not the AVX-512 ones); 0 when it has none. A plan built at one level and run at
// another still gets the same bits (gemvQ8_0x8_avx2 reads packed Q8_0, and the AVX2 kernels read
// packed Q4_K and Q5_K at any level).
size_t packedBytes(const TypeTraits& w, int64_t rows, int64_t cols);

// Packs W into dst (packedBytes(w, rows, cols) bytes, which must not be 0).
PackedWeights packWeights(const TypeTraits& w, const void* weights, int64_t rows, int64_t cols, uint8_t* dst);

size_t mulMatPackedScratchBytes(const PackedWeights& w, int64_t nTokens, int threads);

// Whether single rows of a packed type can be read back (Q8_0, Q4_K, Q5_K), so that get_rows of
// tied embeddings reads the packed copy and the file's pages can go; then packedRowToFloat gives
// row `row` with the bits of the type's toFloat on the file's row.
bool packedRowsReadable(GgmlType type);
void packedRowToFloat(const PackedWeights& w, int64_t row, float* out);

// mulMat against packed weights; scratch: mulMatPackedScratchBytes bytes.
void mulMatPacked(const PackedWeights& w, const float* x, int64_t nTokens, float* y, ThreadPool& pool, void* scratch);

// One of several products of the same activations: W (rows, cols) of type w at `weights` in its
// GGML block layout, or `packed` (then w and weights are unused).
struct MulMatProduct {
  const TypeTraits* w = nullptr;
  const void* weights = nullptr;
  const PackedWeights* packed = nullptr;
  int64_t rows = 0;
  float* y = nullptr;  // (nTokens, rows)
};

// y_i = x (nTokens, cols) * W_i^T for `count` products of one x: a layer's q/k/v projections, or
// its gate and up. x is converted once, and the products' chunks run in one parallel loop: one
// hand-off and one wait instead of one per product, and the small K and V products stream on
// with Q's. Each y_i has the bits mulMat (or mulMatPacked) gives it. scratch: the most that any one
// product needs (mulMatScratchBytes, mulMatPackedScratchBytes). More than kMaxSharedProducts run in turn.
constexpr int kMaxSharedProducts = 4;
void mulMatShared(const MulMatProduct* products, int count, int64_t cols, const float* x, int64_t nTokens, ThreadPool& pool,
                  void* scratch);

// The weights each of the first `threads` chunks of mulMatShared(products, count, cols, x, nTokens)
// reads, for asking for them ahead (ThreadPool::prefetchWhileIdle): chunk c's start in spans[c],
// its size in bytes[c]; null and 0 past the last chunk. Chunks are numbered as the shared loop
// numbers them, the products in order.
void mulMatFirstChunks(const MulMatProduct* products, int count, int64_t cols, int64_t nTokens, int threads, const char** spans,
                       size_t* bytes);

}  // namespace kiln

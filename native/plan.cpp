// Plans a graph once (validation, buffer assignment by liveness, scratch and KV sizing) and
// runs it per step without allocating.
#include "plan.h"

#include <algorithm>
#include <cstring>
#include <fstream>
#include <sstream>

#if defined(__linux__)
#include <sys/mman.h>
#include <unistd.h>
#endif

namespace kiln {

namespace {

// Gives back the pages of [p, p + n) to the file they map, when that is what they are: a model
// file mapped private, whose weights now live in a packed copy. The memory is not lost (touching
// it again reads the file) but no longer counts twice. Any other memory (weights a caller built in
// a buffer) is left alone, since MADV_DONTNEED would zero it.
void releaseFilePages(const uint8_t* p, size_t n) {
#if defined(__linux__)
  const uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
  const uintptr_t begin = ((uintptr_t)p + page - 1) / page * page;
  const uintptr_t end = ((uintptr_t)p + n) / page * page;
  if (end <= begin) return;
  std::ifstream maps("/proc/self/maps");
  std::string line;
  while (std::getline(maps, line)) {
    std::istringstream fields(line);
    std::string range, perms, offset, device;
    unsigned long inode = 0;
    fields >> range >> perms >> offset >> device >> inode;
    const size_t dash = range.find('-');
    if (dash == std::string::npos) continue;
    const uintptr_t lo = std::stoull(range.substr(0, dash), nullptr, 16);
    const uintptr_t hi = std::stoull(range.substr(dash + 1), nullptr, 16);
    if (begin < lo || end > hi) continue;
    if (inode != 0 && perms.size() == 4 && perms[3] == 'p') madvise(reinterpret_cast<void*>(begin), end - begin, MADV_DONTNEED);
    return;
  }
#endif
}

// Ops split their work into chunks of about this many values (64 KB of floats); a decode step's
// small ops are one chunk and run on the calling thread without waking the pool.
constexpr int64_t kValuesPerChunk = 16 * 1024;
// Enough chunks per thread that a thread the OS deschedules does not hold up the step.
constexpr int64_t kChunksPerThread = 4;
// Attention of a long prompt is causal, so later rows cost more: finer chunks balance it.
constexpr int64_t kAttentionChunksPerThread = 16;

// Steps of at most this many rows stream the weights (decode, a few sequences' decode): their
// idle threads ask ahead for the next product's weights (Plan::prefetchWhileIdle).
constexpr int64_t kIdlePrefetchRows = 8;
// How much of its next chunk a thread asks for ahead: about an L2 (1 MB on Zen 4 and 5, 2 MB on
// Sapphire Rapids; Zen 3's 512 KB spills into its L3, still closer than memory).
constexpr size_t kIdlePrefetchBytes = 1024 * 1024;

int64_t chunksFor(int64_t values, int threads, int64_t perThread = kChunksPerThread) {
  return std::max<int64_t>(1, std::min<int64_t>(threads * perThread, values / kValuesPerChunk));
}

}  // namespace

Plan::Plan(std::vector<PlanTensor> tensors, std::vector<PlanNode> nodes, int output, const PlanOptions& options)
    : tensors_(std::move(tensors)), nodes_(std::move(nodes)), output_(output), options_(options), pool_(options.threads) {
  const GraphShape shape = validateGraph(tensors_, nodes_, output_, options_);
  nLayers_ = shape.nLayers;
  kvWidth_ = shape.kvWidth;
  packWeightsOnce();
  allocate();
  findSharedProducts();
  labelOps();
}

// Profile labels: a product by its weights' names without the layer ("blk.3.attn_q.weight" ->
// "attn_q") and their type, the products of one run joined ("mul_mat attn_q+attn_k+attn_v
// q4_0"); any other op by its name. Every layer's op of one kind shares a label.
void Plan::labelOps() {
  opLabels_.assign(nodes_.size(), -1);
  for (size_t i = 0; i < nodes_.size(); i++) {
    const PlanNode& node = nodes_[i];
    if (node.op != OpCode::MulMat) {
      opLabels_[i] = profiler_.label(opName(node.op), 0, 0);
      continue;
    }
    std::string names;
    int64_t bytes = 0, elements = 0;
    for (int k = 0; k < sharedProducts_[i]; k++) {
      const PlanTensor& w = tensors_[nodes_[i + k].inputs[0]];
      std::string name = w.name;
      if (name.rfind("blk.", 0) == 0 && name.find('.', 4) != std::string::npos) name = name.substr(name.find('.', 4) + 1);
      if (name.size() > 7 && name.compare(name.size() - 7, 7, ".weight") == 0) name.resize(name.size() - 7);
      names += (k ? "+" : "") + name;
      bytes += (int64_t)w.byteLength;
      elements += w.rows * w.cols;
    }
    opLabels_[i] = profiler_.label(std::string("mul_mat ") + names + " " + typeTraits(tensors_[node.inputs[0]].dtype)->name, bytes, elements);
    i += sharedProducts_[i] - 1;
  }
}

// Products in a row that read the same activation (a layer's q, k and v; its gate and up) run as
// one mulMatShared, when running them at the first one's turn is safe: their outputs have the same
// rows and buffers of their own, apart from the activation's (assignBuffers could hand a buffer
// freed within the run to a later product of it, but the shared activation stays live throughout).
// TinyLlama decode: 7 hand-offs and waits per block become 4, and the 0.3 MB K and V products
// stream on with Q's rows instead of alone.
void Plan::findSharedProducts() {
  sharedProducts_.assign(nodes_.size(), 1);
  std::vector<size_t> starts;
  for (size_t i = 0; i < nodes_.size(); i++) {
    if (nodes_[i].op != OpCode::MulMat) continue;
    starts.push_back(i);
    const int x = nodes_[i].inputs[1];
    std::vector<int> buffers{tensors_[x].buffer};
    size_t j = i;
    for (; j < nodes_.size() && j - i < (size_t)kMaxSharedProducts; j++) {
      const PlanNode& n = nodes_[j];
      if (n.op != OpCode::MulMat || n.inputs[1] != x || tensors_[n.output].rows != tensors_[nodes_[i].output].rows) break;
      const int b = tensors_[n.output].buffer;
      if (std::find(buffers.begin(), buffers.end(), b) != buffers.end()) break;
      buffers.push_back(b);
    }
    sharedProducts_[i] = (int)(j - i);
    i = j - 1;
  }
  // Each run's next run, the first one after the last (the next step's first product).
  nextProducts_.assign(nodes_.size(), 0);
  for (size_t k = 0; k < starts.size(); k++) nextProducts_[starts[k]] = starts[(k + 1) % starts.size()];
  idleSpans_.assign(pool_.size(), nullptr);
  idleBytes_.assign(pool_.size(), 0);
}

// Decode streams every weight once per step, and between products the pool's threads wait: on
// each other at a product's end, and a worker on the caller's small ops (norms, rope, attention's
// last head, the activations' conversion). Meanwhile each asks for the start of the chunk of the
// next run of products it will most likely take (the chunks go out in order, the caller's first:
// thread t's is chunk t), so the memory works on through the waits. TinyLlama decode on the Zen 5
// VM, three sets of alternating rounds, by the median round's ratio: Q4_0 +4.5%, +7.6% and +5.3%
// (16 of 19 rounds faster); Q8_0 and Q4_K within their noise (bench/README.md).
void Plan::prefetchWhileIdle(size_t group, int64_t nTokens, int64_t nOutputs) {
  const size_t next = nextProducts_[group];
  const int count = sharedProducts_[next];
  MulMatProduct products[kMaxSharedProducts];
  for (int k = 0; k < count; k++) products[k] = product(nodes_[next + k]);
  const int64_t cols = tensors_[nodes_[next].inputs[0]].cols;
  const int64_t rows = rowsOf(tensors_[nodes_[next].output], nTokens, nOutputs);
  mulMatFirstChunks(products, rows > 0 ? count : 0, cols, rows, pool_.size(), idleSpans_.data(), idleBytes_.data());
  for (size_t& bytes : idleBytes_) bytes = std::min(bytes, kIdlePrefetchBytes);
  pool_.prefetchWhileIdle(idleSpans_.data(), idleBytes_.data());
}

MulMatProduct Plan::product(const PlanNode& node) {
  const PlanTensor& w = tensors_[node.inputs[0]];
  const int packed = packedOf_[node.inputs[0]];
  if (packed >= 0 && kernelLevel() != KernelLevel::Generic) return {nullptr, nullptr, &packed_[packed], w.rows, act(node.output)};
  return {typeTraits(w.dtype), w.data, nullptr, w.rows, act(node.output)};
}

// Matrix weights move out of the model file's mapping into one arena of anonymous memory on huge
// pages: those with a packed form for this CPU packed there, the others copied. The file's pages
// go back unless another op (get_rows of tied embeddings) still reads them, and then the weights
// stay where they are; packed Q8_0 serves get_rows itself, so tied Q8_0 embeddings are held once
// (Qwen2.5-0.5B Q8_0: 788 MiB RSS with the second copy, 649 without). Decode streams every weight
// once per token: with 4 KB pages of a file (or of malloc) each page costs a TLB walk and stops the
// hardware prefetchers, and on a VM the page cache's pages can stream much slower than fresh
// memory (TinyLlama F16 decode 10.7 -> 13.4 tok/s).
void Plan::packWeightsOnce() {
  packedOf_.assign(tensors_.size(), -1);
  std::vector<bool> readElsewhere(tensors_.size(), false), rowsRead(tensors_.size(), false), matrix(tensors_.size(), false);
  for (const PlanNode& node : nodes_) {
    for (size_t i = node.op == OpCode::MulMat ? 1 : 0; i < node.inputs.size(); i++) {
      if (node.op == OpCode::GetRows && i == 0) rowsRead[node.inputs[i]] = true;
      else readElsewhere[node.inputs[i]] = true;
    }
    if (node.op == OpCode::MulMat) matrix[node.inputs[0]] = true;
  }
  const auto pages = [](size_t n) { return (n + 4095) / 4096 * 4096; };
  struct Move {
    int id;
    size_t packed;  // packed bytes, or 0 for a plain copy
    size_t bytes;   // its place in the arena, whole pages
  };
  std::vector<Move> moves;
  size_t total = 0;
  for (int id = 0; id < (int)tensors_.size(); id++) {
    const PlanTensor& w = tensors_[id];
    if (!matrix[id] || w.data == nullptr) continue;
    const size_t packed = packedBytes(*typeTraits(w.dtype), w.rows, w.cols);
    // get_rows of tied embeddings reads a packed copy whose rows can be read back (Q8_0); otherwise
    // a packed form is a second copy beside the one another op reads, and a plain copy would be a
    // waste there.
    if (rowsRead[id] && !(packed && packedRowsReadable((GgmlType)w.dtype))) readElsewhere[id] = true;
    if (packed == 0 && readElsewhere[id]) continue;
    moves.push_back({id, packed, pages(packed ? packed : w.byteLength)});
    total += moves.back().bytes;
  }
  if (total == 0) return;
  weights_ = HugePageMemory(total);
  uint8_t* at = weights_.data();
  for (const Move& m : moves) {
    PlanTensor& w = tensors_[m.id];
    if (m.packed) {
      packedOf_[m.id] = (int)packed_.size();
      packed_.push_back(packWeights(*typeTraits(w.dtype), w.data, w.rows, w.cols, at));
    } else {
      std::memcpy(at, w.data, w.byteLength);
    }
    if (!readElsewhere[m.id]) releaseFilePages(w.data, w.byteLength);
    if (!m.packed) w.data = at;
    at += m.bytes;
  }
}

// Aligned to 2 MB, so that every whole 2 MB of it can be one huge page.
HugePageMemory::HugePageMemory(size_t n) {
  if (n == 0) return;
  size_ = n + kHugePage;
  void* p = mmap(nullptr, size_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) throw std::bad_alloc();
  base_ = static_cast<uint8_t*>(p);
  data_ = reinterpret_cast<uint8_t*>(((uintptr_t)base_ + kHugePage - 1) / kHugePage * kHugePage);
#if defined(MADV_HUGEPAGE)
  madvise(data_, n, MADV_HUGEPAGE);
#endif
}

HugePageMemory& HugePageMemory::operator=(HugePageMemory&& o) noexcept {
  if (this != &o) {
    if (base_) munmap(base_, size_);
    base_ = std::exchange(o.base_, nullptr);
    data_ = std::exchange(o.data_, nullptr);
    size_ = std::exchange(o.size_, 0);
  }
  return *this;
}

HugePageMemory::~HugePageMemory() {
  if (base_) munmap(base_, size_);
}

const float* Plan::constF32(int id) const {
  const PlanTensor& t = tensors_[id];
  return t.f32.empty() ? reinterpret_cast<const float*>(t.data) : t.f32.data();
}

void Plan::allocate() {
  const std::vector<size_t> sizes = assignBuffers(tensors_, nodes_, output_, options_.maxBatch);
  buffers_.clear();
  for (size_t size : sizes) buffers_.emplace_back(size);

  tokenIds_.assign(options_.maxBatch, 0);
  stepSlots_.assign(options_.maxBatch, 0);
  stepOutputs_.assign(options_.maxBatch, 0);
  segments_.reserve(options_.slots);
  size_t scratch = 0;
  int maxHeadDim = 0;
  for (const PlanNode& node : nodes_) {
    if (node.op == OpCode::MulMat) {
      const PlanTensor& w = tensors_[node.inputs[0]];
      const PlanTensor& x = tensors_[node.inputs[1]];
      const int64_t n = std::max<int64_t>(x.rows, options_.maxBatch);
      scratch = std::max(scratch, mulMatScratchBytes((GgmlType)w.dtype, w.cols, n));
      if (packedOf_[node.inputs[0]] >= 0) scratch = std::max(scratch, mulMatPackedScratchBytes(packed_[packedOf_[node.inputs[0]]], n, pool_.size()));
    }
    if (node.op == OpCode::Attention) maxHeadDim = std::max(maxHeadDim, (int)node.params[3]);
  }
  matScratch_.assign(scratch + 64, 0);
  // One scratch part per attention chunk (the kernel indexes its scratch by part).
  attnScratch_.assign((size_t)options_.threads * kAttentionChunksPerThread * (size_t)attentionScratchFloats(options_.contextSize, maxHeadDim), 0.0f);
  const size_t elem = options_.kvType == GgmlType::F16 ? 2 : 4;
  const size_t kvBytes = (size_t)options_.slots * nLayers_ * options_.contextSize * kvWidth_ * elem;
  kvK_ = HugePageMemory(kvBytes);
  kvV_ = HugePageMemory(kvBytes);
}

KvView Plan::kvView(int slot, int layer) {
  const size_t elem = options_.kvType == GgmlType::F16 ? 2 : 4;
  const size_t off = ((size_t)slot * nLayers_ + layer) * options_.contextSize * kvWidth_ * elem;
  return KvView{kvK_.data() + off, kvV_.data() + off, options_.kvType, options_.contextSize};
}

void Plan::forward(const int32_t* tokens, const int32_t* positions, int64_t nTokens, int slot, bool allOutputs,
                   float* out, size_t outLength) {
  forwardBatch(oneSlotRows(options_, tokens, positions, nTokens, slot, allOutputs, stepSlots_, stepOutputs_), out, outLength);
}

void Plan::forwardBatch(const BatchRows& step, float* out, size_t outLength) {
  const size_t resultSize = checkBatchStep(tensors_, nodes_, output_, options_, step, outLength, segments_);
  const int64_t nTokens = step.nTokens;
  const int64_t nOutputs = step.nOutputs;
  const int32_t* positions = step.positions;
  std::memcpy(tokenIds_.data(), step.tokens, sizeof(int32_t) * nTokens);

  auto input = [&](const PlanNode& node, size_t i) -> const float* {
    const PlanTensor& t = tensors_[node.inputs[i]];
    return t.data ? constF32(node.inputs[i]) : buffers_[t.buffer].data();
  };

  const OpKernels& ops = opKernels();
  const int threads = pool_.size();
  const bool profiling = opProfiling();
  const OpProfiler::Clock::time_point stepStart = profiling ? OpProfiler::Clock::now() : OpProfiler::Clock::time_point{};
  for (size_t i = 0; i < nodes_.size(); i++) {
    const PlanNode& node = nodes_[i];
    PlanTensor& outT = tensors_[node.output];
    float* y = act(node.output);
    const int64_t rows = rowsOf(outT, nTokens, nOutputs);
    if (rows == 0) continue;  // the output rows of a step that wants none (a prompt chunk's)
    const size_t first = i;
    const OpProfiler::Clock::time_point opStart = profiling ? OpProfiler::Clock::now() : OpProfiler::Clock::time_point{};
    switch (node.op) {
      case OpCode::GetRows: {
        const PlanTensor& table = tensors_[node.inputs[0]];
        const TypeTraits* tr = typeTraits(table.dtype);
        const size_t rb = rowBytes(tr->type, table.cols);
        const int packed = packedOf_[node.inputs[0]];
        const PackedWeights* fromPacked = packed >= 0 && packedRowsReadable(tr->type) ? &packed_[packed] : nullptr;
        const int64_t n = std::min(rows, chunksFor(rows * table.cols, threads));
        pool_.parallelFor(n, [&](int64_t c, int) {
          int64_t r0, r1;
          splitRange(rows, (int)c, (int)n, &r0, &r1);
          for (int64_t r = r0; r < r1; r++) {
            if (fromPacked) packedRowToFloat(*fromPacked, tokenIds_[r], y + r * table.cols);
            else tr->toFloat(table.data + rb * tokenIds_[r], y + r * table.cols, table.cols);
          }
        });
        break;
      }
      case OpCode::RmsNorm: {
        const float* x = input(node, 0);
        const float* w = constF32(node.inputs[1]);
        const int64_t width = (int64_t)node.params[1];
        const int64_t groups = rows * outT.cols / width;
        const float eps = (float)node.params[0];
        const int64_t n = std::min(groups, chunksFor(rows * outT.cols, threads));
        pool_.parallelFor(n, [&](int64_t c, int) { ops.rmsNorm(x, w, y, groups, width, eps, (int)c, (int)n); });
        break;
      }
      case OpCode::MulMat: {
        const int count = sharedProducts_[i];
        if (nTokens <= kIdlePrefetchRows && threads > 1) prefetchWhileIdle(i, nTokens, nOutputs);
        MulMatProduct products[kMaxSharedProducts];
        for (int k = 0; k < count; k++) products[k] = product(nodes_[i + k]);
        mulMatShared(products, count, tensors_[node.inputs[0]].cols, input(node, 1), rows, pool_, matScratch_.data());
        for (int k = 0; k < count; k++) {
          const PlanNode& p = nodes_[i + k];
          if (p.inputs.size() < 3) continue;
          const float* bias = constF32(p.inputs[2]);
          const int64_t width = tensors_[p.output].cols;
          float* out = act(p.output);
          const int64_t n = std::min(rows, chunksFor(rows * width, threads));
          pool_.parallelFor(n, [&](int64_t c, int) { addBiasRows(out, bias, rows, width, (int)c, (int)n); });
        }
        i += count - 1;
        break;
      }
      case OpCode::Add: {
        const float* a = input(node, 0);
        const float* b = input(node, 1);
        const int64_t n = chunksFor(rows * outT.cols, threads);
        pool_.parallelFor(n, [&](int64_t c, int) { ops.add(a, b, y, rows * outT.cols, (int)c, (int)n); });
        break;
      }
      case OpCode::SwiGlu: {
        const float* g = input(node, 0);
        const float* u = input(node, 1);
        const int64_t n = chunksFor(rows * outT.cols, threads);
        pool_.parallelFor(n, [&](int64_t c, int) { ops.swiglu(g, u, y, rows * outT.cols, (int)c, (int)n); });
        break;
      }
      case OpCode::Rope: {
        const float* x = input(node, 0);
        if (x != y) std::memcpy(y, x, sizeof(float) * rows * outT.cols);
        const RopeParams p{(int)node.params[0], (int)node.params[1], (int)node.params[2], node.params[3] != 0.0,
                           (float)node.params[4], (float)node.params[5]};
        const float* ff = node.inputs.size() > 1 ? constF32(node.inputs[1]) : nullptr;
        const int64_t n = std::min(rows * p.nHeads, chunksFor(rows * outT.cols, threads));
        pool_.parallelFor(n, [&](int64_t c, int) { ops.rope(y, rows, positions, p, ff, (int)c, (int)n); });
        break;
      }
      case OpCode::Attention: {
        // Each slot's rows store into and read from that slot's cache only; one parallel loop
        // over every slot's rows, each chunk taking its share of each slot.
        const int layer = (int)node.params[0];
        const AttentionParams p{(int)node.params[1], (int)node.params[2], (int)node.params[3], (float)node.params[4]};
        const int64_t qWidth = (int64_t)p.nHeads * p.headDim;
        const float* q = input(node, 0);
        const float* k = input(node, 1);
        const float* v = input(node, 2);
        const int64_t nStore = std::min(rows, chunksFor(2 * rows * kvWidth_, threads));
        pool_.parallelFor(nStore, [&](int64_t c, int) {
          for (const SlotSegment& s : segments_)
            ops.kvStore(kvView(s.slot, layer), k + s.begin * kvWidth_, v + s.begin * kvWidth_, s.end - s.begin, positions + s.begin,
                        kvWidth_, (int)c, (int)nStore);
        });
        // Work: every query head reads a key and a value row per position it attends to.
        int64_t work = 0;
        for (const SlotSegment& s : segments_) work += (s.end - s.begin) * p.nHeads * (positions[s.end - 1] + 1) * 2 * p.headDim / 16;
        const int64_t n = std::min(rows * p.nHeads, chunksFor(work, threads, kAttentionChunksPerThread));
        pool_.parallelFor(n, [&](int64_t c, int) {
          for (const SlotSegment& s : segments_)
            ops.attention(q + s.begin * qWidth, kvView(s.slot, layer), y + s.begin * qWidth, s.end - s.begin, positions + s.begin, p,
                          attnScratch_.data(), (int)c, (int)n);
        });
        break;
      }
      case OpCode::OutputRows: {
        const float* x = input(node, 0);
        for (int64_t j = 0; j < nOutputs; j++) std::memcpy(y + j * outT.cols, x + step.outputs[j] * outT.cols, sizeof(float) * outT.cols);
        break;
      }
    }
    if (profiling) profiler_.add(opLabels_[first], opStart, rows);
  }
  std::memcpy(out, act(output_), sizeof(float) * resultSize);
  if (profiling) profiler_.finishStep(nTokens, stepStart);
}

void Plan::copySlot(int from, int to, int64_t n) {
  checkCopySlot(options_, from, to, n);
  if (from == to || n == 0) return;
  const size_t elem = options_.kvType == GgmlType::F16 ? 2 : 4;
  const size_t bytes = (size_t)n * kvWidth_ * elem;
  for (int layer = 0; layer < nLayers_; layer++) {
    const KvView a = kvView(from, layer), b = kvView(to, layer);
    std::memcpy(b.k, a.k, bytes);
    std::memcpy(b.v, a.v, bytes);
  }
}

}  // namespace kiln

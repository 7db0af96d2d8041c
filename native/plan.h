// The graph executor: a model's forward step compiled once into a flat list of ops over
// preallocated buffers, run by one call per step on a persistent thread pool.
#pragma once
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <new>
#include <utility>
#include <vector>

#include "cpu/mat-mul.h"
#include "cpu/ops.h"
#include "cpu/thread-pool.h"
#include "cpu/type-traits.h"
#include "graph-plan.h"
#include "op-profile.h"

namespace kiln {

// Zero-filled memory from calloc, which takes large blocks straight from mmap: pages that are never
// written stay unbacked, so a buffer sized for the largest case (logits for a full batch) costs
// resident memory only for what a step uses.
template <typename T>
class ZeroedArray {
 public:
  ZeroedArray() = default;
  explicit ZeroedArray(size_t n) : data_(n ? static_cast<T*>(std::calloc(n, sizeof(T))) : nullptr) {
    if (n && !data_) throw std::bad_alloc();
  }
  T* data() { return data_.get(); }
  const T* data() const { return data_.get(); }

 private:
  struct Free {
    void operator()(T* p) const { std::free(p); }
  };
  std::unique_ptr<T, Free> data_;
};

// Zero-filled anonymous memory from mmap, 2 MB aligned and asked to be backed by transparent huge
// pages where the kernel allows (madvise mode): what every step streams through, the matrix weights
// (packed or copied out of the model file's mapping) and the KV cache. With 4 KB pages each page
// read costs a TLB miss (a two-level walk on a VM) and stops the hardware prefetchers. Pages never
// written stay unbacked, as with calloc, in 2 MB steps.
class HugePageMemory {
 public:
  HugePageMemory() = default;
  explicit HugePageMemory(size_t n);
  HugePageMemory(HugePageMemory&& o) noexcept { *this = std::move(o); }
  HugePageMemory& operator=(HugePageMemory&& o) noexcept;
  ~HugePageMemory();
  uint8_t* data() { return data_; }

 private:
  static constexpr uintptr_t kHugePage = uintptr_t{2} << 20;
  uint8_t* base_ = nullptr;  // what mmap gave
  uint8_t* data_ = nullptr;  // base_ rounded up to a huge page
  size_t size_ = 0;
};

class Plan {
 public:
  // Validates every tensor and node; throws PlanError naming what is wrong.
  Plan(std::vector<PlanTensor> tensors, std::vector<PlanNode> nodes, int output, const PlanOptions& options);

  const PlanOptions& options() const { return options_; }
  int64_t outputCols() const { return tensors_[output_].cols; }

  // One forward step. Throws PlanError on bad arguments (checked before any work is done).
  void forward(const int32_t* tokens, const int32_t* positions, int64_t nTokens, int slot, bool allOutputs,
               float* out, size_t outLength);

  // One step over rows of several slots (see BatchRows); writes the wanted rows' outputs in order.
  // A row's output does not depend on the other rows of the step. Throws PlanError on bad
  // arguments (checked before any work is done).
  void forwardBatch(const BatchRows& step, float* out, size_t outLength);

  void copySlot(int from, int to, int64_t n);

 private:
  void allocate();
  void packWeightsOnce();
  void findSharedProducts();
  void labelOps();
  MulMatProduct product(const PlanNode& node);
  void prefetchWhileIdle(size_t group, int64_t nTokens, int64_t nOutputs);
  float* act(int id) { return buffers_[tensors_[id].buffer].data(); }
  const float* constF32(int id) const;
  KvView kvView(int slot, int layer);

  std::vector<PlanTensor> tensors_;
  std::vector<PlanNode> nodes_;
  // Per node: for the first of consecutive products of one activation (q/k/v, gate/up), how many
  // run together (mulMatShared); 1 for any other product.
  std::vector<int> sharedProducts_;
  // Per node that starts a run of products: the node that starts the next run, the first again
  // after the last (the next step's).
  std::vector<size_t> nextProducts_;
  std::vector<const char*> idleSpans_;
  std::vector<size_t> idleBytes_;
  int output_;
  PlanOptions options_;
  ThreadPool pool_;
  std::vector<ZeroedArray<float>> buffers_;
  std::vector<int32_t> tokenIds_;
  std::vector<int32_t> stepSlots_, stepOutputs_;  // forward()'s step as a batch of one slot
  std::vector<SlotSegment> segments_;
  std::vector<uint8_t> matScratch_;
  std::vector<float> attnScratch_;
  OpProfiler profiler_;
  std::vector<int> opLabels_;  // per node that runs (a run of shared products: its first), its profile label
  int nLayers_ = 0;
  int64_t kvWidth_ = 0;
  HugePageMemory kvK_, kvV_;   // [slot][layer][capacity][kvWidth] in kvType
  std::vector<PackedWeights> packed_;
  std::vector<int> packedOf_;        // tensor id -> index in packed_, or -1
  HugePageMemory weights_;  // matrix weights out of the file mapping, packed or copied
};

}  // namespace kiln

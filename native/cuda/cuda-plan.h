// The CUDA executor. It plans a graph exactly as the CPU plan does (graph-plan: the same
// validation, buffer liveness and step checks), uploads the weights once, keeps activations and
// the KV cache in device memory, and enqueues each forward step on one stream without returning
// to JavaScript; once a step shape repeats, the step is captured as a CUDA graph and replayed.
#pragma once
#include <cuda_runtime_api.h>

#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <vector>

#include "../graph-plan.h"

namespace kiln::cuda {

struct CudaPlanOptions {
  PlanOptions plan;
  int device = 0;
  bool graphs = true;  // capture repeated step shapes as CUDA graphs
};

struct DeviceMemory {
  size_t weights = 0, activations = 0, kvCache = 0;
};

class CudaPlan {
 public:
  // Validates the graph and allocates every device buffer; throws PlanError (a graph the CUDA
  // kernels cannot run), CudaOutOfMemoryError or CudaError.
  CudaPlan(std::vector<PlanTensor> tensors, std::vector<PlanNode> nodes, int output, const CudaPlanOptions& options);
  ~CudaPlan();
  CudaPlan(const CudaPlan&) = delete;
  CudaPlan& operator=(const CudaPlan&) = delete;

  // Copies every constant to the device, calling progress(fraction done) as it goes. Once, before
  // the first forward step; the constants' host memory must stay valid until it returns.
  void upload(const std::function<void(double)>& progress);

  // One forward step of one slot, as Plan::forward: the one-slot case of forwardBatch.
  void forward(const int32_t* tokens, const int32_t* positions, int64_t nTokens, int slot, bool allOutputs, float* out,
               size_t outLength);

  // One step over rows of several slots, as Plan::forwardBatch: each slot's rows store into and
  // attend over that slot's cache only, and a row's output does not depend on the other rows.
  void forwardBatch(const BatchRows& step, float* out, size_t outLength);

  // A forward step that returns only the index of the largest value of the last output row.
  int32_t forwardArgmax(const int32_t* tokens, const int32_t* positions, int64_t nTokens, int slot);

  void copySlot(int from, int to, int64_t n);

  // Device milliseconds per step over `iterations` back-to-back runs of one step (after one run
  // to warm up and, with graphs on, capture). The step writes the KV cache like any other.
  double benchmark(const int32_t* tokens, const int32_t* positions, int64_t nTokens, int slot, int iterations);

  DeviceMemory memory() const { return memory_; }

 private:
  // What a step's launches depend on besides device memory, the graph cache key: argmax only, the
  // token count, each slot segment (slot, begin, end), then the output rows.
  using StepKey = std::vector<int64_t>;

  void checkSupported() const;
  void planScratch();
  void allocate();
  void release();
  void requireUploaded() const;
  // Checks a step (filling segments_ and outputs_) and copies its ids to pinned memory; returns
  // the floats it writes to `out`.
  size_t stage(const BatchRows& step, size_t outLength);
  // The one-slot step of forward(), forwardArgmax() and benchmark(): every row's output or the last's.
  BatchRows oneSlot(const int32_t* tokens, const int32_t* positions, int64_t nTokens, int slot, bool allOutputs);
  StepKey keyOf(int64_t nTokens, bool argmaxOnly) const;
  void run(const StepKey& key);
  void enqueue(const StepKey& key);
  void capture(const StepKey& key);
  void enqueueNode(size_t n, int64_t nTokens, int64_t nOutputs);
  bool quantizesForNext(size_t n, int64_t cols) const;
  size_t enqueueMulMat(size_t first, int64_t rows);
  void dropGraphs();
  const float* f32Of(int id) const;
  float* act(int id) const { return actPtr_[id]; }
  void* kvAt(uint8_t* base, int slot, int layer) const;

  std::vector<PlanTensor> tensors_;
  std::vector<PlanNode> nodes_;
  int output_;
  CudaPlanOptions options_;
  GraphShape shape_;
  DeviceMemory memory_;
  bool uploaded_ = false;

  cudaStream_t stream_ = nullptr;
  std::vector<void*> deviceAllocations_;
  std::vector<void*> hostAllocations_;
  std::vector<const uint8_t*> raw_;      // per tensor: the constant's bytes on the device
  std::vector<const float*> f32_;        // per tensor: its F32 copy (small constants)
  std::vector<float*> actPtr_;           // per tensor: its activation buffer
  int64_t scratchRows_ = 0;              // most activation rows a product reads
  int64_t q8Cols_ = 0, halfCols_ = 0;    // widest activation each scratch form holds
  int8_t* q8_ = nullptr;
  float* q8Scales_ = nullptr;
  uint16_t* half_ = nullptr;
  float* halfScales_ = nullptr;
  size_t attnFloats_ = 0;
  float* attnScratch_ = nullptr;
  uint8_t* kvK_ = nullptr;
  uint8_t* kvV_ = nullptr;
  int32_t* dTokens_ = nullptr;
  int32_t* dPositions_ = nullptr;
  int32_t* dArgmax_ = nullptr;
  int32_t* hTokens_ = nullptr;           // pinned, so captured copies read them at replay
  int32_t* hPositions_ = nullptr;
  float* hOut_ = nullptr;
  size_t hOutFloats_ = 0;
  int32_t* hArgmax_ = nullptr;
  // The step being staged and enqueued: its slot segments and output rows.
  std::vector<SlotSegment> segments_;
  std::vector<int32_t> outputs_;
  std::vector<int32_t> oneSlots_, oneOutputs_;  // oneSlot()'s rows
  // Which activation each scratch form holds during the enqueue of a step (q, k and v read the
  // same normed activation: it is converted once).
  int q8Source_ = -1, halfSource_ = -1;
  bool halfIsBf16_ = false;

  struct CapturedStep {
    cudaGraphExec_t exec;
    uint64_t lastUse;
  };
  std::map<StepKey, CapturedStep> graphs_;
  std::set<StepKey> seen_;
  uint64_t clock_ = 0;
};

}  // namespace kiln::cuda

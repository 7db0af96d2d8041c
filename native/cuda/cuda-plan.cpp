// The CUDA plan: device memory laid out once at construction, weights copied in by upload(), and
// forward steps enqueued op by op (or replayed as captured CUDA graphs). Host code; the kernels
// live in the .cu files, one op each.
#include "cuda-plan.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "../cpu/type-traits.h"
#include "add.h"
#include "argmax.h"
#include "attention.h"
#include "cuda-check.h"
#include "get-rows.h"
#include "mat-mul-half.h"
#include "mat-mul-int8.h"
#include "mat-mul-tiled.h"
#include "mat-vec.h"
#include "quantize-activations.h"
#include "rms-norm.h"
#include "rope.h"
#include "swiglu.h"

namespace kiln::cuda {

namespace {

constexpr size_t kAlign = 256;
// Token counts become a grid's y dimension (at most 65535) in several kernels.
constexpr int64_t kMaxBatch = 32768;
// Weights reach the device through two pinned buffers of this size, one filling while the other
// is copied.
constexpr size_t kStagingBytes = size_t{32} << 20;
// Captured step shapes kept; decode needs one per slot, prefill chunks a few more.
constexpr size_t kMaxGraphs = 16;
// Output rows staged in pinned memory (inside a captured step): a decode step's logits. Every row of
// a long step goes to the caller's array directly instead, which keeps, say, 256 rows of a
// 152k-token vocabulary (155 MB) out of pinned memory.
constexpr int64_t kPinnedOutputRows = 8;

size_t alignUp(size_t n) { return (n + kAlign - 1) / kAlign * kAlign; }

std::string mib(size_t bytes) { return std::to_string((bytes + (size_t{1} << 20) - 1) >> 20) + " MiB"; }

// libuv's worker threads are shared, and the current device is per thread: every entry point
// selects it again.
void useDevice(int device) { check(cudaSetDevice(device), "cudaSetDevice"); }

bool supportedWeightType(int32_t dtype) {
  const GgmlType t = (GgmlType)dtype;
  return matVecTakesQ8(t) || t == GgmlType::F32 || t == GgmlType::F16 || t == GgmlType::BF16;
}

// The pinned staging buffers of an upload and their events, freed on every path out.
struct Staging {
  void* buffers[2] = {nullptr, nullptr};
  cudaEvent_t done[2] = {nullptr, nullptr};
  ~Staging() {
    for (int i = 0; i < 2; i++) {
      if (done[i]) cudaEventSynchronize(done[i]), cudaEventDestroy(done[i]);
      if (buffers[i]) cudaFreeHost(buffers[i]);
    }
  }
};

}  // namespace

CudaPlan::CudaPlan(std::vector<PlanTensor> tensors, std::vector<PlanNode> nodes, int output, const CudaPlanOptions& options)
    : tensors_(std::move(tensors)), nodes_(std::move(nodes)), output_(output), options_(options) {
  options_.plan.threads = 1;  // checked by validateGraph; the device needs no host threads
  shape_ = validateGraph(tensors_, nodes_, output_, options_.plan);
  checkSupported();
  useDevice(options_.device);
  try {
    allocate();
  } catch (...) {
    release();
    throw;
  }
}

CudaPlan::~CudaPlan() { release(); }

// What the CUDA kernels cannot run is refused here, when the graph is planned.
void CudaPlan::checkSupported() const {
  if (options_.plan.maxBatch > kMaxBatch)
    throw PlanError("the CUDA backend takes at most " + std::to_string(kMaxBatch) + " tokens per step; lower maxBatch");
  if (tensors_[output_].data) throw PlanError("graph output must be computed by a node");
  for (size_t n = 0; n < nodes_.size(); n++) {
    const PlanNode& node = nodes_[n];
    const std::string where = "node " + std::to_string(n) + " (" + opName(node.op) + ")";
    switch (node.op) {
      case OpCode::GetRows:
      case OpCode::MulMat: {
        const PlanTensor& w = tensors_[node.inputs[0]];
        if (!supportedWeightType(w.dtype))
          throw PlanError(where + ": the CUDA backend has no kernel for " + typeTraits(w.dtype)->name + " weights");
        break;
      }
      case OpCode::Rope:
      case OpCode::Attention:
        for (int in : node.inputs)
          if (!tensors_[in].data && tensors_[in].rows != kRowsPerToken)
            throw PlanError(where + ": its activations must have one row per token");
        if (node.op == OpCode::Attention && node.params[3] > kMaxAttentionHeadDim)
          throw PlanError(where + ": the CUDA backend supports head dimensions up to " + std::to_string(kMaxAttentionHeadDim) +
                          ", the model has " + std::to_string((int)node.params[3]));
        break;
      default: break;
    }
  }
}

void CudaPlan::planScratch() {
  const int64_t maxBatch = options_.plan.maxBatch;
  scratchRows_ = maxBatch;
  for (const PlanNode& node : nodes_) {
    if (node.op == OpCode::MulMat) {
      const PlanTensor& w = tensors_[node.inputs[0]];
      const PlanTensor& x = tensors_[node.inputs[1]];
      const int64_t rows = std::max(x.rows, maxBatch);
      scratchRows_ = std::max(scratchRows_, rows);
      if (matVecTakesQ8((GgmlType)w.dtype)) q8Cols_ = std::max(q8Cols_, w.cols);
      if (rows > kMaxMatVecTokens && matMulHalfSupports((GgmlType)w.dtype, w.cols)) halfCols_ = std::max(halfCols_, w.cols);
    }
    if (node.op == OpCode::Attention)
      attnFloats_ = std::max(attnFloats_, attentionScratchFloats(maxBatch, (int)node.params[1], (int)node.params[3],
                                                                 options_.plan.contextSize));
  }
}

void CudaPlan::allocate() {
  const PlanOptions& o = options_.plan;
  const size_t nT = tensors_.size();
  planScratch();

  // Constants: the raw bytes of each, plus an F32 copy of the small ones ops read as floats.
  std::vector<size_t> rawOffset(nT, 0), f32Offset(nT, SIZE_MAX);
  size_t weightBytes = 0;
  for (size_t i = 0; i < nT; i++) {
    const PlanTensor& t = tensors_[i];
    if (!t.data) continue;
    rawOffset[i] = weightBytes;
    weightBytes += alignUp(t.byteLength);
    if (!t.f32.empty()) {
      f32Offset[i] = weightBytes;
      weightBytes += alignUp(sizeof(float) * t.f32.size());
    }
  }

  // Activations, by the same liveness assignment as the CPU plan, then the scratch forms.
  const std::vector<size_t> bufferFloats = assignBuffers(tensors_, nodes_, output_, o.maxBatch);
  std::vector<size_t> bufferOffset(bufferFloats.size());
  size_t actBytes = 0;
  for (size_t b = 0; b < bufferFloats.size(); b++) {
    bufferOffset[b] = actBytes;
    actBytes += alignUp(sizeof(float) * bufferFloats[b]);
  }
  const size_t q8Bytes = alignUp((size_t)(scratchRows_ * q8Cols_));
  const size_t q8ScaleBytes = alignUp(sizeof(float) * (size_t)(scratchRows_ * q8Cols_ / 32));
  const size_t halfBytes = alignUp(sizeof(uint16_t) * (size_t)(scratchRows_ * halfCols_));
  const size_t halfScaleBytes = halfCols_ ? alignUp(sizeof(float) * (size_t)scratchRows_) : 0;
  const size_t attnBytes = alignUp(sizeof(float) * attnFloats_);
  const size_t idBytes = alignUp(sizeof(int32_t) * (size_t)o.maxBatch);
  const size_t scratchBytes = q8Bytes + q8ScaleBytes + halfBytes + halfScaleBytes + attnBytes + 3 * idBytes;
  const size_t kvElement = o.kvType == GgmlType::F16 ? 2 : 4;
  const size_t kvBytes = (size_t)o.slots * shape_.nLayers * (size_t)o.contextSize * (size_t)shape_.kvWidth * kvElement;
  memory_ = DeviceMemory{weightBytes, actBytes + scratchBytes, 2 * kvBytes};

  size_t freeBytes = 0, totalBytes = 0;
  check(cudaMemGetInfo(&freeBytes, &totalBytes), "cudaMemGetInfo");
  const size_t need = memory_.weights + memory_.activations + memory_.kvCache;
  if (need > freeBytes) {
    throw CudaOutOfMemoryError("not enough GPU memory: the model needs " + mib(memory_.weights) + " for weights, " + mib(memory_.kvCache) +
                    " for the KV cache and " + mib(memory_.activations) + " for activations, and the device has " +
                    mib(freeBytes) + " free of " + mib(totalBytes) + "; lower contextSize or slots, or use a smaller model");
  }
  auto deviceAlloc = [&](size_t bytes) -> uint8_t* {
    if (bytes == 0) return nullptr;
    void* p = nullptr;
    const cudaError_t err = cudaMalloc(&p, bytes);
    if (err != cudaSuccess) {
      cudaGetLastError();
      throw CudaOutOfMemoryError("not enough GPU memory: allocating " + mib(bytes) + " failed (" + cudaGetErrorString(err) + ")");
    }
    deviceAllocations_.push_back(p);
    return static_cast<uint8_t*>(p);
  };
  auto hostAlloc = [&](size_t bytes) -> void* {
    void* p = nullptr;
    check(cudaHostAlloc(&p, std::max<size_t>(bytes, 4), cudaHostAllocDefault), "cudaHostAlloc");
    hostAllocations_.push_back(p);
    return p;
  };

  check(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreate");
  uint8_t* weights = deviceAlloc(weightBytes);
  raw_.assign(nT, nullptr);
  f32_.assign(nT, nullptr);
  for (size_t i = 0; i < nT; i++) {
    const PlanTensor& t = tensors_[i];
    if (!t.data) continue;
    raw_[i] = weights + rawOffset[i];
    if (f32Offset[i] != SIZE_MAX) f32_[i] = reinterpret_cast<const float*>(weights + f32Offset[i]);
    else if (t.dtype == (int32_t)GgmlType::F32) f32_[i] = reinterpret_cast<const float*>(raw_[i]);
  }

  uint8_t* acts = deviceAlloc(actBytes);
  actPtr_.assign(nT, nullptr);
  for (size_t i = 0; i < nT; i++)
    if (tensors_[i].buffer >= 0) actPtr_[i] = reinterpret_cast<float*>(acts + bufferOffset[tensors_[i].buffer]);

  uint8_t* scratch = deviceAlloc(scratchBytes);
  auto carve = [&](size_t bytes) {
    uint8_t* p = bytes ? scratch : nullptr;
    scratch += bytes;
    return p;
  };
  q8_ = reinterpret_cast<int8_t*>(carve(q8Bytes));
  q8Scales_ = reinterpret_cast<float*>(carve(q8ScaleBytes));
  half_ = reinterpret_cast<uint16_t*>(carve(halfBytes));
  halfScales_ = reinterpret_cast<float*>(carve(halfScaleBytes));
  attnScratch_ = reinterpret_cast<float*>(carve(attnBytes));
  dTokens_ = reinterpret_cast<int32_t*>(carve(idBytes));
  dPositions_ = reinterpret_cast<int32_t*>(carve(idBytes));
  dArgmax_ = reinterpret_cast<int32_t*>(carve(idBytes));

  kvK_ = deviceAlloc(kvBytes);
  kvV_ = deviceAlloc(kvBytes);
  // Positions never written are never read (attention reads rows 0 .. position), but zeroed
  // memory keeps a stray read finite.
  if (kvBytes) {
    check(cudaMemset(kvK_, 0, kvBytes), "cudaMemset");
    check(cudaMemset(kvV_, 0, kvBytes), "cudaMemset");
  }

  const PlanTensor& result = tensors_[output_];
  hTokens_ = static_cast<int32_t*>(hostAlloc(sizeof(int32_t) * (size_t)o.maxBatch));
  hPositions_ = static_cast<int32_t*>(hostAlloc(sizeof(int32_t) * (size_t)o.maxBatch));
  hOutFloats_ = (size_t)std::min<int64_t>(std::max(result.rows, o.maxBatch), kPinnedOutputRows) * (size_t)result.cols;
  hOut_ = static_cast<float*>(hostAlloc(sizeof(float) * hOutFloats_));
  hArgmax_ = static_cast<int32_t*>(hostAlloc(sizeof(int32_t)));
  segments_.reserve(o.slots);
  outputs_.reserve(o.maxBatch);
  oneSlots_.assign(o.maxBatch, 0);
  oneOutputs_.assign(o.maxBatch, 0);
  for (const PlanNode& node : nodes_)
    if (node.op == OpCode::Attention) attentionPrepare((int)node.params[3]);
}

void CudaPlan::release() {
  cudaSetDevice(options_.device);  // the JS thread may have another device current
  dropGraphs();
  for (void* p : deviceAllocations_) cudaFree(p);
  for (void* p : hostAllocations_) cudaFreeHost(p);
  deviceAllocations_.clear();
  hostAllocations_.clear();
  if (stream_) cudaStreamDestroy(stream_);
  stream_ = nullptr;
  cudaGetLastError();
}

void CudaPlan::dropGraphs() {
  for (auto& entry : graphs_) cudaGraphExecDestroy(entry.second.exec);
  graphs_.clear();
  seen_.clear();
}

void CudaPlan::upload(const std::function<void(double)>& progress) {
  useDevice(options_.device);
  if (uploaded_) throw PlanError("the weights are already on the device");
  struct Piece {
    const void* src;
    void* dst;
    size_t bytes;
  };
  std::vector<Piece> pieces;
  size_t total = 0;
  for (size_t i = 0; i < tensors_.size(); i++) {
    const PlanTensor& t = tensors_[i];
    if (!t.data) continue;
    pieces.push_back({t.data, const_cast<uint8_t*>(raw_[i]), t.byteLength});
    total += t.byteLength;
    if (!t.f32.empty() && f32_[i] != reinterpret_cast<const float*>(raw_[i])) {
      pieces.push_back({t.f32.data(), const_cast<float*>(f32_[i]), sizeof(float) * t.f32.size()});
      total += sizeof(float) * t.f32.size();
    }
  }
  Staging staging;
  for (int i = 0; i < 2; i++) {
    check(cudaHostAlloc(&staging.buffers[i], kStagingBytes, cudaHostAllocDefault), "cudaHostAlloc (upload staging)");
    check(cudaEventCreateWithFlags(&staging.done[i], cudaEventDisableTiming), "cudaEventCreate");
  }
  size_t done = 0;
  int turn = 0;
  progress(0.0);
  for (const Piece& piece : pieces) {
    for (size_t off = 0; off < piece.bytes; off += kStagingBytes) {
      const size_t n = std::min(kStagingBytes, piece.bytes - off);
      check(cudaEventSynchronize(staging.done[turn]), "upload");  // this buffer's previous copy is done
      std::memcpy(staging.buffers[turn], static_cast<const uint8_t*>(piece.src) + off, n);
      check(cudaMemcpyAsync(static_cast<uint8_t*>(piece.dst) + off, staging.buffers[turn], n, cudaMemcpyHostToDevice, stream_),
            "upload");
      check(cudaEventRecord(staging.done[turn], stream_), "upload");
      turn ^= 1;
      done += n;
      progress(total ? (double)done / (double)total : 1.0);
    }
  }
  check(cudaStreamSynchronize(stream_), "upload");
  uploaded_ = true;
}

void CudaPlan::requireUploaded() const {
  if (!uploaded_) throw PlanError("the weights are not on the device yet; call upload() first");
}

const float* CudaPlan::f32Of(int id) const { return tensors_[id].data ? f32_[id] : actPtr_[id]; }

void* CudaPlan::kvAt(uint8_t* base, int slot, int layer) const {
  const size_t element = options_.plan.kvType == GgmlType::F16 ? 2 : 4;
  return base + ((size_t)slot * shape_.nLayers + layer) * (size_t)options_.plan.contextSize * (size_t)shape_.kvWidth * element;
}

size_t CudaPlan::stage(const BatchRows& step, size_t outLength) {
  const size_t resultSize = checkBatchStep(tensors_, nodes_, output_, options_.plan, step, outLength, segments_);
  outputs_.assign(step.outputs, step.outputs + step.nOutputs);
  std::memcpy(hTokens_, step.tokens, sizeof(int32_t) * step.nTokens);
  std::memcpy(hPositions_, step.positions, sizeof(int32_t) * step.nTokens);
  return resultSize;
}

BatchRows CudaPlan::oneSlot(const int32_t* tokens, const int32_t* positions, int64_t nTokens, int slot, bool allOutputs) {
  return oneSlotRows(options_.plan, tokens, positions, nTokens, slot, allOutputs, oneSlots_, oneOutputs_);
}

CudaPlan::StepKey CudaPlan::keyOf(int64_t nTokens, bool argmaxOnly) const {
  StepKey key{argmaxOnly ? 1 : 0, nTokens, (int64_t)segments_.size()};
  for (const SlotSegment& s : segments_) key.insert(key.end(), {(int64_t)s.slot, s.begin, s.end});
  key.insert(key.end(), outputs_.begin(), outputs_.end());
  return key;
}

void CudaPlan::forward(const int32_t* tokens, const int32_t* positions, int64_t nTokens, int slot, bool allOutputs,
                       float* out, size_t outLength) {
  forwardBatch(oneSlot(tokens, positions, nTokens, slot, allOutputs), out, outLength);
}

void CudaPlan::forwardBatch(const BatchRows& step, float* out, size_t outLength) {
  useDevice(options_.device);
  requireUploaded();
  const size_t resultSize = stage(step, outLength);
  run(keyOf(step.nTokens, false));
  if (resultSize <= hOutFloats_) {
    std::memcpy(out, hOut_, sizeof(float) * resultSize);
  } else {
    check(cudaMemcpy(out, act(output_), sizeof(float) * resultSize, cudaMemcpyDeviceToHost), "copy output");
  }
}

int32_t CudaPlan::forwardArgmax(const int32_t* tokens, const int32_t* positions, int64_t nTokens, int slot) {
  useDevice(options_.device);
  requireUploaded();
  stage(oneSlot(tokens, positions, nTokens, slot, false), SIZE_MAX);
  run(keyOf(nTokens, true));
  return *hArgmax_;
}

double CudaPlan::benchmark(const int32_t* tokens, const int32_t* positions, int64_t nTokens, int slot, int iterations) {
  useDevice(options_.device);
  requireUploaded();
  if (iterations < 1 || iterations > 100000) throw PlanError("benchmark: iterations must be between 1 and 100000");
  stage(oneSlot(tokens, positions, nTokens, slot, false), SIZE_MAX);
  const StepKey key = keyOf(nTokens, false);
  run(key);
  run(key);  // with graphs on, the second run captures
  cudaEvent_t start = nullptr, stop = nullptr;
  check(cudaEventCreate(&start), "cudaEventCreate");
  const cudaError_t err = cudaEventCreate(&stop);
  if (err != cudaSuccess) cudaEventDestroy(start);
  check(err, "cudaEventCreate");
  float ms = 0.0f;
  cudaError_t status = cudaEventRecord(start, stream_);
  const auto graph = graphs_.find(key);
  for (int i = 0; i < iterations && status == cudaSuccess; i++) {
    if (graph != graphs_.end()) status = cudaGraphLaunch(graph->second.exec, stream_);
    else enqueue(key);
  }
  if (status == cudaSuccess) status = cudaEventRecord(stop, stream_);
  if (status == cudaSuccess) status = cudaEventSynchronize(stop);
  if (status == cudaSuccess) status = cudaEventElapsedTime(&ms, start, stop);
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  check(status, "benchmark");
  return ms / iterations;
}

void CudaPlan::copySlot(int from, int to, int64_t n) {
  useDevice(options_.device);
  checkCopySlot(options_.plan, from, to, n);
  if (from == to || n == 0) return;
  const size_t bytes = (size_t)n * (size_t)shape_.kvWidth * (options_.plan.kvType == GgmlType::F16 ? 2 : 4);
  for (int layer = 0; layer < shape_.nLayers; layer++) {
    check(cudaMemcpyAsync(kvAt(kvK_, to, layer), kvAt(kvK_, from, layer), bytes, cudaMemcpyDeviceToDevice, stream_), "copySlot");
    check(cudaMemcpyAsync(kvAt(kvV_, to, layer), kvAt(kvV_, from, layer), bytes, cudaMemcpyDeviceToDevice, stream_), "copySlot");
  }
  check(cudaStreamSynchronize(stream_), "copySlot");
}

// Graphs are captured for a step shape only when it comes back: a prompt's one-off prefill chunk
// would pay the capture (about as long as running it) for nothing.
void CudaPlan::run(const StepKey& key) {
  if (!options_.graphs) {
    enqueue(key);
  } else if (auto it = graphs_.find(key); it != graphs_.end()) {
    it->second.lastUse = ++clock_;
    check(cudaGraphLaunch(it->second.exec, stream_), "cudaGraphLaunch");
  } else if (seen_.count(key)) {
    capture(key);
  } else {
    seen_.insert(key);
    enqueue(key);
  }
  const cudaError_t err = cudaStreamSynchronize(stream_);
  if (err != cudaSuccess) {
    throw CudaError(std::string("the forward step failed on the GPU: ") + cudaGetErrorString(err) +
                    "; the device state is lost, load the model again");
  }
}

void CudaPlan::capture(const StepKey& key) {
  cudaGraph_t graph = nullptr;
  check(cudaStreamBeginCapture(stream_, cudaStreamCaptureModeThreadLocal), "cudaStreamBeginCapture");
  try {
    enqueue(key);
  } catch (...) {
    cudaStreamEndCapture(stream_, &graph);
    if (graph) cudaGraphDestroy(graph);
    cudaGetLastError();
    throw;
  }
  check(cudaStreamEndCapture(stream_, &graph), "cudaStreamEndCapture");
  cudaGraphExec_t exec = nullptr;
  const cudaError_t err = cudaGraphInstantiate(&exec, graph, 0);
  cudaGraphDestroy(graph);
  check(err, "cudaGraphInstantiate");
  if (graphs_.size() >= kMaxGraphs) {
    auto oldest = std::min_element(graphs_.begin(), graphs_.end(),
                                   [](const auto& a, const auto& b) { return a.second.lastUse < b.second.lastUse; });
    cudaGraphExecDestroy(oldest->second.exec);
    graphs_.erase(oldest);
  }
  graphs_[key] = CapturedStep{exec, ++clock_};
  check(cudaGraphLaunch(exec, stream_), "cudaGraphLaunch");
}

// Enqueues the staged step (segments_, outputs_); `key` is its keyOf.
void CudaPlan::enqueue(const StepKey& key) {
  const bool argmaxOnly = key[0] != 0;
  const int64_t nTokens = key[1];
  check(cudaMemcpyAsync(dTokens_, hTokens_, sizeof(int32_t) * nTokens, cudaMemcpyHostToDevice, stream_), "copy tokens");
  check(cudaMemcpyAsync(dPositions_, hPositions_, sizeof(int32_t) * nTokens, cudaMemcpyHostToDevice, stream_), "copy positions");
  q8Source_ = halfSource_ = -1;
  const int64_t nOutputs = (int64_t)outputs_.size();
  for (size_t n = 0; n < nodes_.size(); n++) {
    const PlanNode& node = nodes_[n];
    const int64_t rows = rowsOf(tensors_[node.output], nTokens, nOutputs);
    if (rows == 0) continue;  // the output rows of a step that wants none
    if (node.op == OpCode::MulMat) n += enqueueMulMat(n, rows) - 1;
    else enqueueNode(n, nTokens, nOutputs);
  }
  const PlanTensor& result = tensors_[output_];
  const int64_t rows = rowsOf(result, nTokens, nOutputs);
  if (rows == 0) return;
  if (argmaxOnly) {
    argmax(act(output_) + (rows - 1) * result.cols, 1, result.cols, dArgmax_, stream_);
    check(cudaMemcpyAsync(hArgmax_, dArgmax_, sizeof(int32_t), cudaMemcpyDeviceToHost, stream_), "copy argmax");
  } else if ((size_t)(rows * result.cols) <= hOutFloats_) {
    check(cudaMemcpyAsync(hOut_, act(output_), sizeof(float) * rows * result.cols, cudaMemcpyDeviceToHost, stream_),
          "copy output");
  }  // larger outputs (every row of a long step) are copied by forward() straight into the caller's array
}

// Whether node n's output, `cols` wide, is read next by a quantized product: then the node writes
// its int8 blocks as well, saving the product a launch.
bool CudaPlan::quantizesForNext(size_t n, int64_t cols) const {
  if (n + 1 >= nodes_.size() || cols % 32 != 0) return false;
  const PlanNode& next = nodes_[n + 1];
  return next.op == OpCode::MulMat && next.inputs[1] == nodes_[n].output &&
         matVecTakesQ8((GgmlType)tensors_[next.inputs[0]].dtype);
}

void CudaPlan::enqueueNode(size_t n, int64_t nTokens, int64_t nOutputs) {
  const PlanNode& node = nodes_[n];
  const PlanTensor& outT = tensors_[node.output];
  float* y = act(node.output);
  const int64_t rows = rowsOf(outT, nTokens, nOutputs);
  auto in = [&](size_t i) { return f32Of(node.inputs[i]); };
  switch (node.op) {
    case OpCode::GetRows: {
      const PlanTensor& table = tensors_[node.inputs[0]];
      const GgmlType type = (GgmlType)table.dtype;
      getRows(type, raw_[node.inputs[0]], rowBytes(type, table.cols), table.cols, dTokens_, rows, y, stream_);
      break;
    }
    case OpCode::RmsNorm: {
      const int64_t width = (int64_t)node.params[1];
      const bool quantize = width == outT.cols && quantizesForNext(n, width);
      rmsNorm(in(0), in(1), y, rows * outT.cols / width, width, (float)node.params[0], quantize ? q8_ : nullptr,
              quantize ? q8Scales_ : nullptr, stream_);
      if (quantize) q8Source_ = node.output;
      break;
    }
    case OpCode::MulMat: break;  // enqueueMulMat
    case OpCode::Add: add(in(0), in(1), y, rows * outT.cols, stream_); break;
    case OpCode::SwiGlu: {
      const bool quantize = quantizesForNext(n, outT.cols);
      swiglu(in(0), in(1), y, rows * outT.cols, quantize ? q8_ : nullptr, quantize ? q8Scales_ : nullptr, stream_);
      if (quantize) q8Source_ = node.output;
      break;
    }
    case OpCode::Rope: {
      const int nRot = (int)node.params[2];
      const RopeArgs a{(int)node.params[0], (int)node.params[1], nRot, node.params[3] != 0.0,
                       std::pow((float)node.params[4], -2.0f / (float)nRot), (float)node.params[5]};
      rope(in(0), y, rows, dPositions_, a, node.inputs.size() > 1 ? in(1) : nullptr, stream_);
      break;
    }
    case OpCode::Attention: {
      // Slot segment by slot segment: each stores into and reads from its own slot's cache, with
      // the launches a step of that segment alone would make (the same bits).
      const int layer = (int)node.params[0];
      const bool f16 = options_.plan.kvType == GgmlType::F16;
      const int nHeads = (int)node.params[1], headDim = (int)node.params[3];
      const int64_t qWidth = (int64_t)nHeads * headDim;
      for (const SlotSegment& s : segments_) {
        void* k = kvAt(kvK_, s.slot, layer);
        void* v = kvAt(kvV_, s.slot, layer);
        const int64_t segRows = s.end - s.begin;
        storeKv(in(1) + s.begin * shape_.kvWidth, in(2) + s.begin * shape_.kvWidth, k, v, f16, segRows, dPositions_ + s.begin,
                shape_.kvWidth, stream_);
        AttentionArgs a{in(0) + s.begin * qWidth, k, v, f16, y + s.begin * qWidth, dPositions_ + s.begin, segRows, nHeads,
                        (int)node.params[2], headDim, (float)node.params[4], options_.plan.contextSize, attnScratch_};
        attention(a, stream_);
      }
      break;
    }
    case OpCode::OutputRows: {
      // The wanted rows in order, one copy per run of consecutive rows.
      const size_t rowBytes = sizeof(float) * outT.cols;
      for (size_t j = 0; j < outputs_.size();) {
        size_t end = j + 1;
        while (end < outputs_.size() && outputs_[end] == outputs_[end - 1] + 1) end++;
        check(cudaMemcpyAsync(y + j * outT.cols, in(0) + (int64_t)outputs_[j] * outT.cols, rowBytes * (end - j),
                              cudaMemcpyDeviceToDevice, stream_),
              "output_rows");
        j = end;
      }
      break;
    }
  }
}

// Quantized weights always meet int8 activation blocks (a row-streaming product for few tokens,
// int8 tensor cores for many), so decode and prefill sum the same integers. Float weights: a
// row-streaming product on F32 activations, fp16/bf16 tensor cores, or F32 tiles for F32 weights
// and odd widths. Row-streaming products that follow one another on the same activations (q, k,
// v; gate, up) share a launch. Returns the nodes enqueued.
size_t CudaPlan::enqueueMulMat(size_t first, int64_t rows) {
  const PlanNode& node = nodes_[first];
  const int wid = node.inputs[0], xid = node.inputs[1];
  const PlanTensor& w = tensors_[wid];
  const GgmlType type = (GgmlType)w.dtype;
  const float* x = f32Of(xid);
  auto biasOf = [&](const PlanNode& n) { return n.inputs.size() > 2 ? f32Of(n.inputs[2]) : nullptr; };
  const size_t wRowBytes = rowBytes(type, w.cols);
  const bool q8 = matVecTakesQ8(type);
  if (q8) {
    if (q8Source_ != xid) quantizeQ8Blocks(x, rows, w.cols, q8_, q8Scales_, stream_);
    q8Source_ = xid;
  }
  if (rows <= kMaxMatVecTokens) {
    MatVecArgs a{type, wRowBytes, w.cols, q8 ? nullptr : x, q8 ? q8_ : nullptr, q8 ? q8Scales_ : nullptr, rows, 0, {}};
    for (size_t n = first; n < nodes_.size() && a.count < kMaxMatVecMatrices; n++) {
      const PlanNode& next = nodes_[n];
      if (next.op != OpCode::MulMat || next.inputs[1] != xid) break;
      const PlanTensor& wn = tensors_[next.inputs[0]];
      if (wn.dtype != w.dtype || wn.cols != w.cols) break;
      a.m[a.count++] = MatVecMatrix{raw_[next.inputs[0]], wn.rows, biasOf(next), act(next.output)};
    }
    matVec(a, stream_);
    return (size_t)a.count;
  }
  const float* bias = biasOf(node);
  float* y = act(node.output);
  if (q8) {
    matMulInt8(MatMulInt8Args{type, raw_[wid], wRowBytes, w.rows, w.cols, q8_, q8Scales_, rows, bias, y}, stream_);
  } else if (matMulHalfSupports(type, w.cols)) {
    const bool bf16 = matMulHalfTakesBf16(type);
    if (halfSource_ != xid || halfIsBf16_ != bf16) toHalfRows(x, rows, w.cols, bf16, half_, halfScales_, stream_);
    halfSource_ = xid;
    halfIsBf16_ = bf16;
    matMulHalf(MatMulHalfArgs{type, raw_[wid], wRowBytes, w.rows, w.cols, half_, halfScales_, rows, bias, y}, stream_);
  } else {
    matMulTiled(MatMulTiledArgs{type, raw_[wid], wRowBytes, w.rows, w.cols, x, rows, bias, y}, stream_);
  }
  return 1;
}

}  // namespace kiln::cuda

// The graph executor: a model's forward step compiled once into a flat list of ops over
// preallocated buffers, run by one call per step on a persistent thread pool.
#pragma once
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "cpu/ops.h"
#include "cpu/thread-pool.h"
#include "cpu/type-traits.h"

namespace kiln {

// Op codes shared with src/backend/cpu/op-codes.ts.
enum class OpCode : int32_t {
  GetRows = 0,     // [table, tokens] -> (tokens, table.cols)
  RmsNorm = 1,     // [x, weight] params [eps, groupWidth]
  MulMat = 2,      // [weight, x, bias?] -> (x.rows, weight.rows)
  Add = 3,         // [a, b]
  Rope = 4,        // [x, freqFactors?] params [nHeads, headDim, nRot, neox, freqBase, freqScale]
  Attention = 5,   // [q, k, v] params [layer, nHeads, nKvHeads, headDim, scale]
  SwiGlu = 6,      // [gate, up]
  OutputRows = 7,  // [x] -> the last row, or every row when all outputs are requested
};

constexpr int32_t kTokensDtype = -1;
constexpr int64_t kRowsPerToken = 0;
constexpr int64_t kRowsPerOutput = -1;

struct PlanTensor {
  int32_t dtype = 0;
  int64_t cols = 0;
  int64_t rows = 0;                  // constants: fixed; activations: kRowsPerToken / kRowsPerOutput
  const uint8_t* data = nullptr;     // constants (weights) only
  size_t byteLength = 0;
  std::string name;
  // Filled by the planner.
  int buffer = -1;                   // activation buffer index
  std::vector<float> f32;            // small constants converted to F32 (norm weights, biases)
};

struct PlanNode {
  OpCode op;
  std::vector<int> inputs;
  int output;
  std::vector<double> params;
};

struct PlanOptions {
  int threads = 1;
  int slots = 1;
  int64_t contextSize = 512;
  int64_t maxBatch = 512;
  GgmlType kvType = GgmlType::F32;
};

class PlanError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
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

  void copySlot(int from, int to, int64_t n);

 private:
  void validate();
  void allocate();
  int64_t rowsOf(const PlanTensor& t, int64_t nTokens, int64_t nOutputs) const;
  float* act(int id) { return buffers_[tensors_[id].buffer].data(); }
  const float* constF32(int id) const;
  KvView kvView(int slot, int layer);

  std::vector<PlanTensor> tensors_;
  std::vector<PlanNode> nodes_;
  int output_;
  PlanOptions options_;
  ThreadPool pool_;
  std::vector<std::vector<float>> buffers_;
  std::vector<int32_t> tokenIds_;
  std::vector<uint8_t> matScratch_;
  std::vector<float> attnScratch_;
  int nLayers_ = 0;
  int64_t kvWidth_ = 0;
  std::vector<uint8_t> kvK_, kvV_;   // [slot][layer][capacity][kvWidth] in kvType
};

}  // namespace kiln

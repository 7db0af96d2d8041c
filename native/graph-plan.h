// What every graph executor (CPU, CUDA) shares: the graph description, its validation, buffer
// assignment by liveness, and the checks on one forward step's arguments.
#pragma once
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "cpu/type-traits.h"

namespace kiln {

// Op codes shared with src/model/graph.ts.
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

// What validation learns about the graph as a whole.
struct GraphShape {
  int nLayers = 0;        // attention layers (KV cache entries per slot)
  int64_t kvWidth = 0;    // nKvHeads * headDim, the same in every layer
  int maxHeadDim = 0;
};

const char* opName(OpCode op);

// Validates every tensor and node; throws PlanError naming what is wrong. Fills `f32` of the
// small constants ops read as floats (norm weights, biases, frequency factors).
GraphShape validateGraph(std::vector<PlanTensor>& tensors, std::vector<PlanNode>& nodes, int output,
                         const PlanOptions& options);

// Assigns each activation a buffer by liveness (a buffer is reused once its last reader ran);
// returns every buffer's size in floats, each big enough for maxBatch rows.
std::vector<size_t> assignBuffers(std::vector<PlanTensor>& tensors, const std::vector<PlanNode>& nodes, int output,
                                  int64_t maxBatch);

// Rows of a tensor in a step of nTokens tokens and nOutputs requested outputs.
inline int64_t rowsOf(const PlanTensor& t, int64_t nTokens, int64_t nOutputs) {
  if (t.rows > 0) return t.rows;
  return t.rows == kRowsPerToken ? nTokens : nOutputs;
}


// One batched step's rows: the token, position and slot of each, and the rows whose outputs are
// wanted (ascending). The rows of one slot are contiguous in the step.
struct BatchRows {
  const int32_t* tokens;
  const int32_t* positions;
  const int32_t* slots;
  int64_t nTokens;
  const int32_t* outputs;
  int64_t nOutputs;
};

// A slot's rows [begin, end) in a batched step.
struct SlotSegment {
  int64_t begin;
  int64_t end;
  int slot;
};

// Checks a batched step's arguments before any work is done and fills `segments` (cleared
// first); returns the number of floats the step writes to `out`. Throws PlanError.
size_t checkBatchStep(const std::vector<PlanTensor>& tensors, const std::vector<PlanNode>& nodes, int output,
                      const PlanOptions& options, const BatchRows& step, size_t outLength, std::vector<SlotSegment>& segments);

// forward()'s step as a batch: every row in `slot`, the last row's output (or every row's). Fills
// `slots` and `outputs` (maxBatch long) and returns rows pointing into them; throws PlanError when
// nTokens does not fit them (checkBatchStep checks the rest).
BatchRows oneSlotRows(const PlanOptions& options, const int32_t* tokens, const int32_t* positions, int64_t nTokens, int slot,
                      bool allOutputs, std::vector<int32_t>& slots, std::vector<int32_t>& outputs);

// Checks copySlot's arguments; throws PlanError.
void checkCopySlot(const PlanOptions& options, int from, int to, int64_t n);

}  // namespace kiln

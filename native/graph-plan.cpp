// Graph validation, buffer assignment by liveness and step checks, shared by the CPU and CUDA
// executors so both accept exactly the same graphs and steps.
#include "graph-plan.h"

#include <algorithm>

namespace kiln {

namespace {

std::string tensorLabel(const PlanTensor& t, int id) {
  return t.name.empty() ? "tensor #" + std::to_string(id) : "tensor '" + t.name + "'";
}

size_t paramCount(OpCode op) {
  switch (op) {
    case OpCode::RmsNorm: return 2;
    case OpCode::Rope: return 6;
    case OpCode::Attention: return 5;
    default: return 0;
  }
}

}  // namespace

const char* opName(OpCode op) {
  switch (op) {
    case OpCode::GetRows: return "get_rows";
    case OpCode::RmsNorm: return "rms_norm";
    case OpCode::MulMat: return "mul_mat";
    case OpCode::Add: return "add";
    case OpCode::Rope: return "rope";
    case OpCode::Attention: return "attention";
    case OpCode::SwiGlu: return "swiglu";
    case OpCode::OutputRows: return "output_rows";
  }
  return "unknown";
}

GraphShape validateGraph(std::vector<PlanTensor>& tensors, std::vector<PlanNode>& nodes, int output,
                         const PlanOptions& options) {
  const int nT = (int)tensors.size();
  GraphShape shape;
  auto fail = [](const std::string& msg) { throw PlanError(msg); };
  if (options.threads < 1 || options.threads > 512) fail("threads must be between 1 and 512");
  if (options.slots < 1 || options.slots > 256) fail("slots must be between 1 and 256");
  if (options.contextSize < 1 || options.contextSize > (1 << 22)) fail("contextSize must be between 1 and 4194304");
  if (options.maxBatch < 1 || options.maxBatch > (1 << 16)) fail("maxBatch must be between 1 and 65536");
  if (options.kvType != GgmlType::F32 && options.kvType != GgmlType::F16) fail("kvType must be F32 or F16");
  if (output < 0 || output >= nT) fail("graph output is not a tensor of the graph");

  for (int i = 0; i < nT; i++) {
    PlanTensor& t = tensors[i];
    if (t.cols < 1 || t.cols > (int64_t)1 << 32) fail(tensorLabel(t, i) + " has an invalid row width");
    if (t.dtype == kTokensDtype) continue;
    if (t.data) {
      const TypeTraits* tr = typeTraits(t.dtype);
      if (!tr) fail(tensorLabel(t, i) + " has unknown type " + std::to_string(t.dtype));
      if (t.rows < 1) fail(tensorLabel(t, i) + " is a constant without a row count");
      if (t.cols % tr->blockSize != 0) fail(tensorLabel(t, i) + ": row width is not a multiple of the block size");
      const size_t need = rowBytes(tr->type, t.cols) * (size_t)t.rows;
      if (need != t.byteLength) {
        fail(tensorLabel(t, i) + " needs " + std::to_string(need) + " bytes but has " + std::to_string(t.byteLength));
      }
    } else if (t.dtype != (int32_t)GgmlType::F32) {
      fail(tensorLabel(t, i) + ": activations must be F32");
    }
  }

  std::vector<bool> produced(nT, false);
  for (int i = 0; i < nT; i++) produced[i] = tensors[i].data != nullptr || tensors[i].dtype == kTokensDtype;
  int maxLayer = -1;
  for (size_t n = 0; n < nodes.size(); n++) {
    PlanNode& node = nodes[n];
    const std::string where = std::string("node ") + std::to_string(n) + " (" + opName(node.op) + ")";
    if ((int)node.op < 0 || (int)node.op > (int)OpCode::OutputRows) fail("node " + std::to_string(n) + " has an unknown op");
    if (node.params.size() < paramCount(node.op)) fail(where + " has too few parameters");
    for (int in : node.inputs) {
      if (in < 0 || in >= nT) fail(where + " reads a tensor that does not exist");
      if (!produced[in]) fail(where + " reads " + tensorLabel(tensors[in], in) + " before it is computed");
    }
    if (node.output < 0 || node.output >= nT) fail(where + " writes a tensor that does not exist");
    PlanTensor& out = tensors[node.output];
    if (out.data || out.dtype == kTokensDtype) fail(where + " writes into a constant");
    if (produced[node.output]) fail(where + " writes " + tensorLabel(out, node.output) + " a second time");
    produced[node.output] = true;

    auto need = [&](size_t count) {
      if (node.inputs.size() < count) fail(where + " has too few inputs");
    };
    auto act = [&](int id) -> const PlanTensor& {
      const PlanTensor& t = tensors[id];
      if (t.dtype != (int32_t)GgmlType::F32) fail(where + ": " + tensorLabel(t, id) + " must be F32");
      return t;
    };
    auto sameRows = [&](const PlanTensor& a, const PlanTensor& b) {
      if (a.rows != b.rows) fail(where + ": inputs and output disagree on their row count");
    };
    auto weightF32 = [&](int id, int64_t cols) {
      PlanTensor& t = tensors[id];
      if (!t.data) fail(where + ": " + tensorLabel(t, id) + " must be a constant");
      if (t.rows * t.cols != cols) fail(where + ": " + tensorLabel(t, id) + " must have " + std::to_string(cols) + " values");
      if (t.dtype != (int32_t)GgmlType::F32 && t.f32.empty()) {
        t.f32.resize(cols);
        typeTraits(t.dtype)->toFloat(t.data, t.f32.data(), cols);
      }
    };

    switch (node.op) {
      case OpCode::GetRows: {
        need(2);
        const PlanTensor& table = tensors[node.inputs[0]];
        const PlanTensor& ids = tensors[node.inputs[1]];
        if (!table.data) fail(where + ": the table must be a constant");
        if (ids.dtype != kTokensDtype) fail(where + ": the second input must be the token ids");
        if (out.cols != table.cols || out.rows != kRowsPerToken) fail(where + ": output must be (tokens, " + std::to_string(table.cols) + ")");
        break;
      }
      case OpCode::RmsNorm: {
        need(2);
        const PlanTensor& x = act(node.inputs[0]);
        const int64_t width = (int64_t)node.params[1];
        if (width < 1 || x.cols % width != 0) fail(where + ": group width must divide the row width");
        if (!(node.params[0] >= 0.0)) fail(where + ": eps must be non-negative");
        weightF32(node.inputs[1], width);
        if (out.cols != x.cols) fail(where + ": output width differs from input width");
        sameRows(x, out);
        break;
      }
      case OpCode::MulMat: {
        need(2);
        const PlanTensor& w = tensors[node.inputs[0]];
        const PlanTensor& x = act(node.inputs[1]);
        if (!w.data) fail(where + ": the weight must be a constant");
        if (!typeTraits(w.dtype)->isWeightType) fail(where + ": " + tensorLabel(w, node.inputs[0]) + " has a type kiln cannot multiply");
        if (x.cols != w.cols) fail(where + ": input width " + std::to_string(x.cols) + " does not match weight width " + std::to_string(w.cols));
        if (out.cols != w.rows) fail(where + ": output width must equal the weight's row count");
        sameRows(x, out);
        if (node.inputs.size() > 2) weightF32(node.inputs[2], w.rows);
        break;
      }
      case OpCode::Add:
      case OpCode::SwiGlu: {
        need(2);
        const PlanTensor& a = act(node.inputs[0]);
        const PlanTensor& b = act(node.inputs[1]);
        if (a.cols != b.cols || a.cols != out.cols) fail(where + ": shapes differ");
        sameRows(a, b);
        sameRows(a, out);
        break;
      }
      case OpCode::Rope: {
        need(1);
        const PlanTensor& x = act(node.inputs[0]);
        const int nHeads = (int)node.params[0], headDim = (int)node.params[1], nRot = (int)node.params[2];
        if (nHeads < 1 || headDim < 1 || (int64_t)nHeads * headDim != x.cols) fail(where + ": heads * headDim must equal the row width");
        if (nRot < 2 || nRot > headDim || nRot % 2 != 0) fail(where + ": rotated dimensions must be even and at most headDim");
        if (!(node.params[4] > 0.0) || !(node.params[5] > 0.0)) fail(where + ": frequency base and scale must be positive");
        if (node.inputs.size() > 1) weightF32(node.inputs[1], nRot / 2);
        if (out.cols != x.cols) fail(where + ": output width differs from input width");
        sameRows(x, out);
        break;
      }
      case OpCode::Attention: {
        need(3);
        const PlanTensor& q = act(node.inputs[0]);
        const PlanTensor& k = act(node.inputs[1]);
        const PlanTensor& v = act(node.inputs[2]);
        const int layer = (int)node.params[0], nHeads = (int)node.params[1], nKv = (int)node.params[2], headDim = (int)node.params[3];
        if (layer < 0 || layer > 4096) fail(where + ": bad layer index");
        if (nHeads < 1 || nKv < 1 || nHeads % nKv != 0) fail(where + ": heads must be a multiple of KV heads");
        if (headDim < 1 || q.cols != (int64_t)nHeads * headDim) fail(where + ": query width must be heads * headDim");
        const int64_t kvw = (int64_t)nKv * headDim;
        if (k.cols != kvw || v.cols != kvw) fail(where + ": key/value width must be kvHeads * headDim");
        if (shape.kvWidth != 0 && shape.kvWidth != kvw) fail(where + ": every layer must have the same key/value width");
        shape.kvWidth = kvw;
        sameRows(q, k);
        sameRows(q, v);
        sameRows(q, out);
        if (out.cols != q.cols) fail(where + ": output width must equal the query width");
        maxLayer = std::max(maxLayer, layer);
        shape.maxHeadDim = std::max(shape.maxHeadDim, headDim);
        break;
      }
      case OpCode::OutputRows: {
        need(1);
        const PlanTensor& x = act(node.inputs[0]);
        if (x.rows != kRowsPerToken || out.rows != kRowsPerOutput || out.cols != x.cols) fail(where + ": must map (tokens, n) to (outputs, n)");
        break;
      }
    }
  }
  if (!produced[output] || tensors[output].dtype != (int32_t)GgmlType::F32) fail("graph output is never computed");
  shape.nLayers = maxLayer + 1;
  return shape;
}

std::vector<size_t> assignBuffers(std::vector<PlanTensor>& tensors, const std::vector<PlanNode>& nodes, int output,
                                  int64_t maxBatch) {
  const int nT = (int)tensors.size();
  std::vector<int> lastUse(nT, -1);
  for (size_t n = 0; n < nodes.size(); n++)
    for (int in : nodes[n].inputs) lastUse[in] = (int)n;
  lastUse[output] = (int)nodes.size();

  auto capacity = [&](const PlanTensor& t) { return (size_t)std::max<int64_t>(t.rows, maxBatch) * (size_t)t.cols; };
  std::vector<size_t> sizes;
  std::vector<int> freeList;
  for (size_t n = 0; n < nodes.size(); n++) {
    PlanTensor& out = tensors[nodes[n].output];
    const size_t need = capacity(out);
    int best = -1;
    for (size_t f = 0; f < freeList.size(); f++) {
      const int b = freeList[f];
      if (sizes[b] >= need && (best < 0 || sizes[b] < sizes[freeList[best]])) best = (int)f;
    }
    if (best >= 0) {
      out.buffer = freeList[best];
      freeList.erase(freeList.begin() + best);
    } else if (!freeList.empty()) {  // grow the largest free buffer rather than add one
      auto it = std::max_element(freeList.begin(), freeList.end(), [&](int a, int b) { return sizes[a] < sizes[b]; });
      out.buffer = *it;
      sizes[*it] = need;
      freeList.erase(it);
    } else {
      out.buffer = (int)sizes.size();
      sizes.push_back(need);
    }
    for (int in : nodes[n].inputs) {
      const PlanTensor& t = tensors[in];
      if (lastUse[in] == (int)n && t.buffer >= 0 && !t.data &&
          std::find(freeList.begin(), freeList.end(), t.buffer) == freeList.end())
        freeList.push_back(t.buffer);
    }
  }
  return sizes;
}

BatchRows oneSlotRows(const PlanOptions& options, const int32_t* tokens, const int32_t* positions, int64_t nTokens, int slot,
                      bool allOutputs, std::vector<int32_t>& slots, std::vector<int32_t>& outputs) {
  if (nTokens < 1 || nTokens > options.maxBatch || (size_t)nTokens > slots.size() || (size_t)nTokens > outputs.size())
    throw PlanError("a forward step takes 1 to " + std::to_string(options.maxBatch) + " tokens, got " + std::to_string(nTokens));
  std::fill(slots.begin(), slots.begin() + nTokens, slot);
  const int64_t nOutputs = allOutputs ? nTokens : 1;
  for (int64_t j = 0; j < nOutputs; j++) outputs[j] = (int32_t)(allOutputs ? j : nTokens - 1);
  return BatchRows{tokens, positions, slots.data(), nTokens, outputs.data(), nOutputs};
}

size_t checkBatchStep(const std::vector<PlanTensor>& tensors, const std::vector<PlanNode>& nodes, int output,
                      const PlanOptions& options, const BatchRows& step, size_t outLength, std::vector<SlotSegment>& segments) {
  const int64_t n = step.nTokens;
  if (n < 1 || n > options.maxBatch)
    throw PlanError("a forward step takes 1 to " + std::to_string(options.maxBatch) + " tokens, got " + std::to_string(n));
  if (step.nOutputs < 0 || step.nOutputs > n) throw PlanError("a step of " + std::to_string(n) + " tokens cannot output " + std::to_string(step.nOutputs) + " rows");
  segments.clear();
  for (int64_t i = 0; i < n; i++) {
    const int slot = step.slots[i];
    if (slot < 0 || slot >= options.slots) throw PlanError("slot " + std::to_string(slot) + " does not exist");
    const int32_t pos = step.positions[i];
    if (pos < 0 || pos >= options.contextSize)
      throw PlanError("position " + std::to_string(pos) + " is outside the context of " + std::to_string(options.contextSize));
    if (i > 0 && slot == step.slots[i - 1]) {
      segments.back().end = i + 1;
      continue;
    }
    for (const SlotSegment& s : segments)
      if (s.slot == slot) throw PlanError("slot " + std::to_string(slot) + "'s rows are not contiguous in the step");
    segments.push_back(SlotSegment{i, i + 1, slot});
  }
  for (int64_t j = 0; j < step.nOutputs; j++) {
    const int32_t r = step.outputs[j];
    if (r < 0 || r >= n || (j > 0 && r <= step.outputs[j - 1])) throw PlanError("a step's outputs must be ascending row indices of the step");
  }
  for (const PlanNode& node : nodes) {
    if (node.op != OpCode::GetRows) continue;
    const int64_t vocab = tensors[node.inputs[0]].rows;
    for (int64_t i = 0; i < n; i++)
      if (step.tokens[i] < 0 || step.tokens[i] >= vocab)
        throw PlanError("token id " + std::to_string(step.tokens[i]) + " is outside the vocabulary of " + std::to_string(vocab));
  }
  const PlanTensor& result = tensors[output];
  const size_t resultSize = (size_t)rowsOf(result, n, step.nOutputs) * (size_t)result.cols;
  if (outLength < resultSize) throw PlanError("the output buffer holds " + std::to_string(outLength) + " values; " + std::to_string(resultSize) + " are needed");
  return resultSize;
}

void checkCopySlot(const PlanOptions& options, int from, int to, int64_t n) {
  if (from < 0 || from >= options.slots || to < 0 || to >= options.slots) throw PlanError("copySlot: slot out of range");
  if (n < 0 || n > options.contextSize) throw PlanError("copySlot: length out of range");
}

}  // namespace kiln

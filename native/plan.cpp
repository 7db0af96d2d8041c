// Plans a graph once (validation, buffer assignment by liveness, scratch and KV sizing) and
// runs it per step without allocating.
#include "plan.h"

#include <algorithm>
#include <cstring>

#include "cpu/mat-mul.h"

namespace kiln {

namespace {

std::string tensorLabel(const PlanTensor& t, int id) {
  return t.name.empty() ? "tensor #" + std::to_string(id) : "tensor '" + t.name + "'";
}

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

size_t paramCount(OpCode op) {
  switch (op) {
    case OpCode::RmsNorm: return 2;
    case OpCode::Rope: return 6;
    case OpCode::Attention: return 5;
    default: return 0;
  }
}

}  // namespace

Plan::Plan(std::vector<PlanTensor> tensors, std::vector<PlanNode> nodes, int output, const PlanOptions& options)
    : tensors_(std::move(tensors)), nodes_(std::move(nodes)), output_(output), options_(options), pool_(options.threads) {
  validate();
  allocate();
}

const float* Plan::constF32(int id) const {
  const PlanTensor& t = tensors_[id];
  return t.f32.empty() ? reinterpret_cast<const float*>(t.data) : t.f32.data();
}

int64_t Plan::rowsOf(const PlanTensor& t, int64_t nTokens, int64_t nOutputs) const {
  if (t.rows > 0) return t.rows;
  return t.rows == kRowsPerToken ? nTokens : nOutputs;
}

void Plan::validate() {
  const int nT = (int)tensors_.size();
  auto fail = [](const std::string& msg) { throw PlanError(msg); };
  if (options_.threads < 1 || options_.threads > 512) fail("threads must be between 1 and 512");
  if (options_.slots < 1 || options_.slots > 256) fail("slots must be between 1 and 256");
  if (options_.contextSize < 1 || options_.contextSize > (1 << 22)) fail("contextSize must be between 1 and 4194304");
  if (options_.maxBatch < 1 || options_.maxBatch > (1 << 16)) fail("maxBatch must be between 1 and 65536");
  if (options_.kvType != GgmlType::F32 && options_.kvType != GgmlType::F16) fail("kvType must be F32 or F16");
  if (output_ < 0 || output_ >= nT) fail("graph output is not a tensor of the graph");

  for (int i = 0; i < nT; i++) {
    PlanTensor& t = tensors_[i];
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
  for (int i = 0; i < nT; i++) produced[i] = tensors_[i].data != nullptr || tensors_[i].dtype == kTokensDtype;
  int maxLayer = -1;
  for (size_t n = 0; n < nodes_.size(); n++) {
    PlanNode& node = nodes_[n];
    const std::string where = std::string("node ") + std::to_string(n) + " (" + opName(node.op) + ")";
    if ((int)node.op < 0 || (int)node.op > (int)OpCode::OutputRows) fail("node " + std::to_string(n) + " has an unknown op");
    if (node.params.size() < paramCount(node.op)) fail(where + " has too few parameters");
    for (int in : node.inputs) {
      if (in < 0 || in >= nT) fail(where + " reads a tensor that does not exist");
      if (!produced[in]) fail(where + " reads " + tensorLabel(tensors_[in], in) + " before it is computed");
    }
    if (node.output < 0 || node.output >= nT) fail(where + " writes a tensor that does not exist");
    PlanTensor& out = tensors_[node.output];
    if (out.data || out.dtype == kTokensDtype) fail(where + " writes into a constant");
    if (produced[node.output]) fail(where + " writes " + tensorLabel(out, node.output) + " a second time");
    produced[node.output] = true;

    auto need = [&](size_t count) {
      if (node.inputs.size() < count) fail(where + " has too few inputs");
    };
    auto act = [&](int id) -> const PlanTensor& {
      const PlanTensor& t = tensors_[id];
      if (t.dtype != (int32_t)GgmlType::F32) fail(where + ": " + tensorLabel(t, id) + " must be F32");
      return t;
    };
    auto sameRows = [&](const PlanTensor& a, const PlanTensor& b) {
      if (a.rows != b.rows) fail(where + ": inputs and output disagree on their row count");
    };
    auto weightF32 = [&](int id, int64_t cols) {
      PlanTensor& t = tensors_[id];
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
        const PlanTensor& table = tensors_[node.inputs[0]];
        const PlanTensor& ids = tensors_[node.inputs[1]];
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
        const PlanTensor& w = tensors_[node.inputs[0]];
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
        if (kvWidth_ != 0 && kvWidth_ != kvw) fail(where + ": every layer must have the same key/value width");
        kvWidth_ = kvw;
        sameRows(q, k);
        sameRows(q, v);
        sameRows(q, out);
        if (out.cols != q.cols) fail(where + ": output width must equal the query width");
        maxLayer = std::max(maxLayer, layer);
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
  if (!produced[output_] || tensors_[output_].dtype != (int32_t)GgmlType::F32) fail("graph output is never computed");
  nLayers_ = maxLayer + 1;
}

void Plan::allocate() {
  const int nT = (int)tensors_.size();
  std::vector<int> lastUse(nT, -1);
  for (size_t n = 0; n < nodes_.size(); n++)
    for (int in : nodes_[n].inputs) lastUse[in] = (int)n;
  lastUse[output_] = (int)nodes_.size();

  auto capacity = [&](const PlanTensor& t) { return (size_t)std::max<int64_t>(t.rows, options_.maxBatch) * (size_t)t.cols; };
  std::vector<size_t> sizes;
  std::vector<int> freeList;
  for (size_t n = 0; n < nodes_.size(); n++) {
    PlanTensor& out = tensors_[nodes_[n].output];
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
    for (int in : nodes_[n].inputs) {
      const PlanTensor& t = tensors_[in];
      if (lastUse[in] == (int)n && t.buffer >= 0 && !t.data &&
          std::find(freeList.begin(), freeList.end(), t.buffer) == freeList.end())
        freeList.push_back(t.buffer);
    }
  }
  buffers_.resize(sizes.size());
  for (size_t b = 0; b < sizes.size(); b++) buffers_[b].assign(sizes[b], 0.0f);

  tokenIds_.assign(options_.maxBatch, 0);
  size_t scratch = 0;
  int maxHeadDim = 0;
  for (const PlanNode& node : nodes_) {
    if (node.op == OpCode::MulMat) {
      const PlanTensor& w = tensors_[node.inputs[0]];
      const PlanTensor& x = tensors_[node.inputs[1]];
      scratch = std::max(scratch, mulMatScratchBytes((GgmlType)w.dtype, w.cols, std::max<int64_t>(x.rows, options_.maxBatch)));
    }
    if (node.op == OpCode::Attention) maxHeadDim = std::max(maxHeadDim, (int)node.params[3]);
  }
  matScratch_.assign(scratch + 64, 0);
  attnScratch_.assign((size_t)options_.threads * (size_t)(options_.contextSize + maxHeadDim), 0.0f);
  const size_t elem = options_.kvType == GgmlType::F16 ? 2 : 4;
  const size_t kvBytes = (size_t)options_.slots * nLayers_ * options_.contextSize * kvWidth_ * elem;
  kvK_.assign(kvBytes, 0);
  kvV_.assign(kvBytes, 0);
}

KvView Plan::kvView(int slot, int layer) {
  const size_t elem = options_.kvType == GgmlType::F16 ? 2 : 4;
  const size_t off = ((size_t)slot * nLayers_ + layer) * options_.contextSize * kvWidth_ * elem;
  return KvView{kvK_.data() + off, kvV_.data() + off, options_.kvType, options_.contextSize};
}

void Plan::forward(const int32_t* tokens, const int32_t* positions, int64_t nTokens, int slot, bool allOutputs,
                   float* out, size_t outLength) {
  if (nTokens < 1 || nTokens > options_.maxBatch)
    throw PlanError("a forward step takes 1 to " + std::to_string(options_.maxBatch) + " tokens, got " + std::to_string(nTokens));
  if (slot < 0 || slot >= options_.slots) throw PlanError("slot " + std::to_string(slot) + " does not exist");
  for (int64_t i = 0; i < nTokens; i++) {
    if (positions[i] < 0 || positions[i] >= options_.contextSize)
      throw PlanError("position " + std::to_string(positions[i]) + " is outside the context of " + std::to_string(options_.contextSize));
  }
  for (const PlanNode& node : nodes_) {
    if (node.op != OpCode::GetRows) continue;
    const int64_t vocab = tensors_[node.inputs[0]].rows;
    for (int64_t i = 0; i < nTokens; i++)
      if (tokens[i] < 0 || tokens[i] >= vocab)
        throw PlanError("token id " + std::to_string(tokens[i]) + " is outside the vocabulary of " + std::to_string(vocab));
  }
  const int64_t nOutputs = allOutputs ? nTokens : 1;
  const PlanTensor& result = tensors_[output_];
  const size_t resultSize = (size_t)rowsOf(result, nTokens, nOutputs) * (size_t)result.cols;
  if (outLength < resultSize) throw PlanError("the output buffer holds " + std::to_string(outLength) + " values; " + std::to_string(resultSize) + " are needed");
  std::memcpy(tokenIds_.data(), tokens, sizeof(int32_t) * nTokens);

  auto input = [&](const PlanNode& node, size_t i) -> const float* {
    const PlanTensor& t = tensors_[node.inputs[i]];
    return t.data ? constF32(node.inputs[i]) : buffers_[t.buffer].data();
  };

  for (const PlanNode& node : nodes_) {
    PlanTensor& outT = tensors_[node.output];
    float* y = act(node.output);
    const int64_t rows = rowsOf(outT, nTokens, nOutputs);
    switch (node.op) {
      case OpCode::GetRows: {
        const PlanTensor& table = tensors_[node.inputs[0]];
        const TypeTraits* tr = typeTraits(table.dtype);
        const size_t rb = rowBytes(tr->type, table.cols);
        pool_.run([&](int ith, int nth) {
          int64_t r0, r1;
          splitRange(rows, ith, nth, &r0, &r1);
          for (int64_t r = r0; r < r1; r++) tr->toFloat(table.data + rb * tokenIds_[r], y + r * table.cols, table.cols);
        });
        break;
      }
      case OpCode::RmsNorm: {
        const float* x = input(node, 0);
        const float* w = constF32(node.inputs[1]);
        const int64_t width = (int64_t)node.params[1];
        const int64_t groups = rows * outT.cols / width;
        const float eps = (float)node.params[0];
        pool_.run([&](int ith, int nth) { rmsNormRows(x, w, y, groups, width, eps, ith, nth); });
        break;
      }
      case OpCode::MulMat: {
        const PlanTensor& w = tensors_[node.inputs[0]];
        mulMat(*typeTraits(w.dtype), w.data, w.rows, w.cols, input(node, 1), rows, y, pool_, matScratch_.data());
        if (node.inputs.size() > 2) {
          const float* bias = constF32(node.inputs[2]);
          pool_.run([&](int ith, int nth) { addBiasRows(y, bias, rows, outT.cols, ith, nth); });
        }
        break;
      }
      case OpCode::Add: {
        const float* a = input(node, 0);
        const float* b = input(node, 1);
        pool_.run([&](int ith, int nth) { addRows(a, b, y, rows * outT.cols, ith, nth); });
        break;
      }
      case OpCode::SwiGlu: {
        const float* g = input(node, 0);
        const float* u = input(node, 1);
        pool_.run([&](int ith, int nth) { swigluRows(g, u, y, rows * outT.cols, ith, nth); });
        break;
      }
      case OpCode::Rope: {
        const float* x = input(node, 0);
        if (x != y) std::memcpy(y, x, sizeof(float) * rows * outT.cols);
        const RopeParams p{(int)node.params[0], (int)node.params[1], (int)node.params[2], node.params[3] != 0.0,
                           (float)node.params[4], (float)node.params[5]};
        const float* ff = node.inputs.size() > 1 ? constF32(node.inputs[1]) : nullptr;
        pool_.run([&](int ith, int nth) { ropeRows(y, rows, positions, p, ff, ith, nth); });
        break;
      }
      case OpCode::Attention: {
        const KvView kv = kvView(slot, (int)node.params[0]);
        const AttentionParams p{(int)node.params[1], (int)node.params[2], (int)node.params[3], (float)node.params[4]};
        const float* q = input(node, 0);
        const float* k = input(node, 1);
        const float* v = input(node, 2);
        pool_.run([&](int ith, int nth) { kvStoreRows(kv, k, v, rows, positions, kvWidth_, ith, nth); });
        pool_.run([&](int ith, int nth) { attentionRows(q, kv, y, rows, positions, p, attnScratch_.data(), ith, nth); });
        break;
      }
      case OpCode::OutputRows: {
        const float* x = input(node, 0);
        const int64_t first = allOutputs ? 0 : nTokens - 1;
        std::memcpy(y, x + first * outT.cols, sizeof(float) * rows * outT.cols);
        break;
      }
    }
  }
  std::memcpy(out, act(output_), sizeof(float) * resultSize);
}

void Plan::copySlot(int from, int to, int64_t n) {
  if (from < 0 || from >= options_.slots || to < 0 || to >= options_.slots) throw PlanError("copySlot: slot out of range");
  if (n < 0 || n > options_.contextSize) throw PlanError("copySlot: length out of range");
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

// The `Plan` class seen from JS: builds a native plan from a graph description and runs forward
// steps on a libuv worker, returning a Promise. The JS objects a step reads or writes (the plan,
// its weight buffers, the token and output arrays) are kept alive while it runs.
#include <napi.h>

#include <atomic>
#include <memory>

#include "plan.h"

namespace kiln {

namespace {

double numberField(const Napi::Object& o, const char* key, double fallback) {
  const Napi::Value v = o.Get(key);
  if (v.IsUndefined()) return fallback;
  if (!v.IsNumber()) throw Napi::TypeError::New(o.Env(), std::string(key) + " must be a number");
  return v.As<Napi::Number>().DoubleValue();
}

class PlanWrap : public Napi::ObjectWrap<PlanWrap> {
 public:
  static Napi::Function Define(Napi::Env env) {
    return DefineClass(env, "Plan",
                       {InstanceMethod("forward", &PlanWrap::Forward), InstanceMethod("copySlot", &PlanWrap::CopySlot),
                        InstanceMethod("dispose", &PlanWrap::Dispose)});
  }

  explicit PlanWrap(const Napi::CallbackInfo& info) : Napi::ObjectWrap<PlanWrap>(info) {
    Napi::Env env = info.Env();
    if (info.Length() < 2 || !info[0].IsObject() || !info[1].IsObject())
      throw Napi::TypeError::New(env, "new Plan(graph, options)");
    const Napi::Object graph = info[0].As<Napi::Object>();
    const Napi::Object opts = info[1].As<Napi::Object>();
    PlanOptions options;
    options.threads = (int)numberField(opts, "threads", 1);
    options.slots = (int)numberField(opts, "slots", 1);
    options.contextSize = (int64_t)numberField(opts, "contextSize", 512);
    options.maxBatch = (int64_t)numberField(opts, "maxBatch", 512);
    options.kvType = (GgmlType)(int)numberField(opts, "kvType", 0);

    if (!graph.Get("tensors").IsArray() || !graph.Get("nodes").IsArray())
      throw Napi::TypeError::New(env, "graph.tensors and graph.nodes must be arrays");
    const Napi::Array tensors = graph.Get("tensors").As<Napi::Array>();
    const Napi::Array nodes = graph.Get("nodes").As<Napi::Array>();
    std::vector<PlanTensor> planTensors(tensors.Length());
    for (uint32_t i = 0; i < tensors.Length(); i++) {
      if (!tensors.Get(i).IsObject()) throw Napi::TypeError::New(env, "graph.tensors[" + std::to_string(i) + "] must be an object");
      const Napi::Object t = tensors.Get(i).As<Napi::Object>();
      PlanTensor& pt = planTensors[i];
      pt.dtype = (int32_t)numberField(t, "dtype", 0);
      pt.cols = (int64_t)numberField(t, "cols", 0);
      pt.rows = (int64_t)numberField(t, "rows", 0);
      if (t.Get("name").IsString()) pt.name = t.Get("name").As<Napi::String>();
      const Napi::Value data = t.Get("data");
      if (!data.IsUndefined()) {
        if (!data.IsArrayBuffer()) throw Napi::TypeError::New(env, "tensor data must be an ArrayBuffer");
        Napi::ArrayBuffer ab = data.As<Napi::ArrayBuffer>();
        const double offset = numberField(t, "byteOffset", 0);
        const double length = numberField(t, "byteLength", -1);
        if (offset < 0 || offset > (double)ab.ByteLength()) throw Napi::RangeError::New(env, "tensor byteOffset is outside its buffer");
        const size_t avail = ab.ByteLength() - (size_t)offset;
        pt.data = static_cast<const uint8_t*>(ab.Data()) + (size_t)offset;
        pt.byteLength = length < 0 ? avail : (size_t)length;
        if (length > (double)avail) throw Napi::RangeError::New(env, "tensor " + pt.name + " extends past the end of its buffer");
        buffers_.push_back(Napi::Persistent(ab.As<Napi::Object>()));
      }
    }
    std::vector<PlanNode> planNodes(nodes.Length());
    for (uint32_t i = 0; i < nodes.Length(); i++) {
      if (!nodes.Get(i).IsObject()) throw Napi::TypeError::New(env, "graph.nodes[" + std::to_string(i) + "] must be an object");
      const Napi::Object n = nodes.Get(i).As<Napi::Object>();
      PlanNode& pn = planNodes[i];
      pn.op = (OpCode)(int)numberField(n, "op", -1);
      pn.output = (int)numberField(n, "output", -1);
      const Napi::Value ins = n.Get("inputs"), ps = n.Get("params");
      if (!ins.IsArray()) throw Napi::TypeError::New(env, "node inputs must be an array");
      for (uint32_t j = 0; j < ins.As<Napi::Array>().Length(); j++) pn.inputs.push_back(ins.As<Napi::Array>().Get(j).ToNumber().Int32Value());
      if (ps.IsArray())
        for (uint32_t j = 0; j < ps.As<Napi::Array>().Length(); j++) pn.params.push_back(ps.As<Napi::Array>().Get(j).ToNumber().DoubleValue());
    }
    try {
      plan_ = std::make_unique<Plan>(std::move(planTensors), std::move(planNodes), (int)numberField(graph, "output", -1), options);
    } catch (const PlanError& e) {
      throw Napi::Error::New(env, std::string("invalid graph: ") + e.what());
    } catch (const std::bad_alloc&) {
      throw Napi::Error::New(env, "not enough memory for the plan's buffers and KV cache");
    }
  }

  Plan* plan() { return plan_.get(); }
  std::atomic<bool> busy{false};

 private:
  Napi::Value Forward(const Napi::CallbackInfo& info);

  Napi::Value CopySlot(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    requireLive(env);
    if (busy) throw Napi::Error::New(env, "copySlot during a forward step");
    try {
      plan_->copySlot(info[0].ToNumber().Int32Value(), info[1].ToNumber().Int32Value(), info[2].ToNumber().Int64Value());
    } catch (const PlanError& e) {
      throw Napi::RangeError::New(env, e.what());
    }
    return env.Undefined();
  }

  Napi::Value Dispose(const Napi::CallbackInfo& info) {
    if (busy) throw Napi::Error::New(info.Env(), "dispose during a forward step");
    plan_.reset();
    buffers_.clear();
    return info.Env().Undefined();
  }

  void requireLive(Napi::Env env) {
    if (!plan_) throw Napi::Error::New(env, "the plan was disposed");
  }

  std::unique_ptr<Plan> plan_;
  std::vector<Napi::ObjectReference> buffers_;
};

class ForwardWorker : public Napi::AsyncWorker {
 public:
  ForwardWorker(Napi::Env env, PlanWrap* owner, Napi::Object self, Napi::Int32Array tokens, Napi::Int32Array positions,
                int slot, bool all, Napi::Float32Array out)
      : Napi::AsyncWorker(env, "kiln.forward"), deferred_(Napi::Promise::Deferred::New(env)), owner_(owner),
        slot_(slot), all_(all) {
    self_ = Napi::Persistent(self);
    tokensRef_ = Napi::Persistent(tokens.As<Napi::Object>());
    positionsRef_ = Napi::Persistent(positions.As<Napi::Object>());
    outRef_ = Napi::Persistent(out.As<Napi::Object>());
    tokens_ = tokens.Data();
    positions_ = positions.Data();
    n_ = (int64_t)tokens.ElementLength();
    out_ = out.Data();
    outLength_ = out.ElementLength();
  }

  Napi::Promise promise() { return deferred_.Promise(); }

  void Execute() override {
    try {
      owner_->plan()->forward(tokens_, positions_, n_, slot_, all_, out_, outLength_);
    } catch (const std::exception& e) {
      SetError(e.what());
    }
  }

  void OnOK() override {
    owner_->busy = false;
    deferred_.Resolve(Env().Undefined());
  }

  void OnError(const Napi::Error& e) override {
    owner_->busy = false;
    deferred_.Reject(e.Value());
  }

 private:
  Napi::Promise::Deferred deferred_;
  PlanWrap* owner_;
  Napi::ObjectReference self_, tokensRef_, positionsRef_, outRef_;
  const int32_t* tokens_;
  const int32_t* positions_;
  int64_t n_;
  float* out_;
  size_t outLength_;
  int slot_;
  bool all_;
};

Napi::Value PlanWrap::Forward(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  requireLive(env);
  if (info.Length() < 5 || !info[0].IsTypedArray() || !info[1].IsTypedArray() || !info[4].IsTypedArray())
    throw Napi::TypeError::New(env, "forward(tokens: Int32Array, positions: Int32Array, slot, allOutputs, out: Float32Array)");
  const auto tokens = info[0].As<Napi::TypedArray>();
  const auto positions = info[1].As<Napi::TypedArray>();
  const auto out = info[4].As<Napi::TypedArray>();
  if (tokens.TypedArrayType() != napi_int32_array || positions.TypedArrayType() != napi_int32_array)
    throw Napi::TypeError::New(env, "tokens and positions must be Int32Array");
  if (out.TypedArrayType() != napi_float32_array) throw Napi::TypeError::New(env, "out must be a Float32Array");
  if (tokens.ElementLength() != positions.ElementLength())
    throw Napi::RangeError::New(env, "tokens and positions must have the same length");
  bool expected = false;
  if (!busy.compare_exchange_strong(expected, true)) throw Napi::Error::New(env, "a forward step is already running on this plan");
  auto* worker = new ForwardWorker(env, this, info.This().As<Napi::Object>(), info[0].As<Napi::Int32Array>(),
                                   info[1].As<Napi::Int32Array>(), info[2].ToNumber().Int32Value(), info[3].ToBoolean(),
                                   info[4].As<Napi::Float32Array>());
  Napi::Promise p = worker->promise();
  worker->Queue();
  return p;
}

}  // namespace

void registerPlanExports(Napi::Env env, Napi::Object exports) {
  exports.Set("Plan", PlanWrap::Define(env));
}

}  // namespace kiln

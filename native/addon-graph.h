// Reading a graph and plan options from JS, and running forward steps on a libuv worker: shared
// by the `Plan` (CPU) and `CudaPlan` wrappers.
#pragma once
#include <napi.h>

#include <atomic>
#include <string>
#include <vector>

#include "graph-plan.h"

namespace kiln {

struct ParsedGraph {
  std::vector<PlanTensor> tensors;
  std::vector<PlanNode> nodes;
  int output = -1;
};

// o[key] as a number, `fallback` when absent; a TypeError when it is something else.
double numberField(const Napi::Object& o, const char* key, double fallback);

// Reads graph.tensors, graph.nodes and graph.output. The ArrayBuffers behind the constants are
// appended to keepAlive: the native tensors point into them.
ParsedGraph parseGraph(const Napi::Object& graph, std::vector<Napi::ObjectReference>& keepAlive);

PlanOptions parsePlanOptions(const Napi::Object& opts);

// One forward step of owner->plan() on a libuv worker, as a Promise. The plan's wrapper object
// and the arrays the step reads and writes stay referenced until it settles; owner->busy is set
// for the duration (the caller sets it before queueing).
template <typename Owner>
class ForwardWorker : public Napi::AsyncWorker {
 public:
  ForwardWorker(Napi::Env env, Owner* owner, Napi::Object self, Napi::Int32Array tokens, Napi::Int32Array positions,
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
  Owner* owner_;
  Napi::ObjectReference self_, tokensRef_, positionsRef_, outRef_;
  const int32_t* tokens_;
  const int32_t* positions_;
  int64_t n_;
  float* out_;
  size_t outLength_;
  int slot_;
  bool all_;
};

// forward(tokens: Int32Array, positions: Int32Array, slot, allOutputs, out: Float32Array) for a
// wrapper with plan() and an atomic `busy`: checks the arguments' types and queues the step.
template <typename Owner>
Napi::Value queueForward(const Napi::CallbackInfo& info, Owner* owner) {
  Napi::Env env = info.Env();
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
  if (!owner->busy.compare_exchange_strong(expected, true)) throw Napi::Error::New(env, "a forward step is already running on this plan");
  auto* worker = new ForwardWorker<Owner>(env, owner, info.This().As<Napi::Object>(), info[0].As<Napi::Int32Array>(),
                                          info[1].As<Napi::Int32Array>(), info[2].ToNumber().Int32Value(), info[3].ToBoolean(),
                                          info[4].As<Napi::Float32Array>());
  Napi::Promise p = worker->promise();
  worker->Queue();
  return p;
}

}  // namespace kiln

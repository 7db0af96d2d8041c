// Reading a graph and plan options from JS, and running forward steps on a libuv worker: shared
// by the `Plan` (CPU) and `CudaPlan` wrappers.
#pragma once
#include <napi.h>

#include <atomic>
#include <functional>
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

// One step of owner->plan() on a libuv worker, as a Promise: `run` does the work there. The plan's
// wrapper object and the arrays the step reads and writes (`keep`) stay referenced until it
// settles; owner->busy is set for the duration (the caller sets it before queueing). A step the
// plan refuses (PlanError: a token, position, slot or size out of range) rejects with `kilnCode`
// 'invalid_step', which src/backend/native-graph.ts turns into a typed error.
template <typename Owner>
class StepWorker : public Napi::AsyncWorker {
 public:
  StepWorker(Napi::Env env, Owner* owner, Napi::Object self, const std::vector<Napi::Object>& keep, std::function<void()> run)
      : Napi::AsyncWorker(env, "kiln.forward"), deferred_(Napi::Promise::Deferred::New(env)), owner_(owner), run_(std::move(run)) {
    self_ = Napi::Persistent(self);
    for (const Napi::Object& o : keep) keep_.push_back(Napi::Persistent(o));
  }

  Napi::Promise promise() { return deferred_.Promise(); }

  void Execute() override {
    try {
      run_();
    } catch (const PlanError& e) {
      invalidStep_ = true;
      SetError(e.what());
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
    if (invalidStep_) e.Value().Set("kilnCode", Napi::String::New(Env(), "invalid_step"));
    deferred_.Reject(e.Value());
  }

 private:
  Napi::Promise::Deferred deferred_;
  Owner* owner_;
  Napi::ObjectReference self_;
  std::vector<Napi::ObjectReference> keep_;
  std::function<void()> run_;
  bool invalidStep_ = false;
};

// Marks owner busy (one step at a time) and queues `run` on a StepWorker; returns its Promise.
template <typename Owner>
Napi::Value queueStep(const Napi::CallbackInfo& info, Owner* owner, const std::vector<Napi::Object>& keep, std::function<void()> run) {
  bool expected = false;
  if (!owner->busy.compare_exchange_strong(expected, true)) throw Napi::Error::New(info.Env(), "a forward step is already running on this plan");
  auto* worker = new StepWorker<Owner>(info.Env(), owner, info.This().As<Napi::Object>(), keep, std::move(run));
  Napi::Promise p = worker->promise();
  worker->Queue();
  return p;
}

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
  const int32_t* tokensData = tokens.As<Napi::Int32Array>().Data();
  const int32_t* positionsData = positions.As<Napi::Int32Array>().Data();
  const int64_t n = (int64_t)tokens.ElementLength();
  const int slot = info[2].ToNumber().Int32Value();
  const bool all = info[3].ToBoolean();
  float* outData = out.As<Napi::Float32Array>().Data();
  const size_t outLength = out.ElementLength();
  return queueStep(info, owner, {tokens, positions, out}, [=] {
    owner->plan()->forward(tokensData, positionsData, n, slot, all, outData, outLength);
  });
}

// forwardBatch(tokens, positions, slots, outputs: Int32Array, out: Float32Array) for a wrapper
// whose plan() has forwardBatch(BatchRows, out, outLength): checks the arguments' types and
// lengths and queues the step (the plan checks the rows' values before any work).
template <typename Owner>
Napi::Value queueForwardBatch(const Napi::CallbackInfo& info, Owner* owner) {
  Napi::Env env = info.Env();
  const char* usage = "forwardBatch(tokens, positions, slots, outputs: Int32Array, out: Float32Array)";
  if (info.Length() < 5) throw Napi::TypeError::New(env, usage);
  for (int i = 0; i < 4; i++)
    if (!info[i].IsTypedArray() || info[i].As<Napi::TypedArray>().TypedArrayType() != napi_int32_array) throw Napi::TypeError::New(env, usage);
  if (!info[4].IsTypedArray() || info[4].As<Napi::TypedArray>().TypedArrayType() != napi_float32_array) throw Napi::TypeError::New(env, usage);
  const auto tokens = info[0].As<Napi::Int32Array>();
  const auto positions = info[1].As<Napi::Int32Array>();
  const auto slots = info[2].As<Napi::Int32Array>();
  const auto outputs = info[3].As<Napi::Int32Array>();
  auto out = info[4].As<Napi::Float32Array>();
  const int64_t n = (int64_t)tokens.ElementLength();
  if ((int64_t)positions.ElementLength() != n || (int64_t)slots.ElementLength() != n)
    throw Napi::RangeError::New(env, "tokens, positions and slots must have the same length");
  const BatchRows step{tokens.Data(), positions.Data(), slots.Data(), n, outputs.Data(), (int64_t)outputs.ElementLength()};
  float* outData = out.Data();
  const size_t outLength = out.ElementLength();
  return queueStep(info, owner, {tokens, positions, slots, outputs, out}, [=] { owner->plan()->forwardBatch(step, outData, outLength); });
}

}  // namespace kiln

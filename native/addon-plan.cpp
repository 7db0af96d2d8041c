// The `Plan` class seen from JS: builds a native plan from a graph description and runs forward
// steps on a libuv worker, returning a Promise. The JS objects a step reads or writes (the plan,
// its weight buffers, the token and output arrays) are kept alive while it runs.
#include <napi.h>

#include <atomic>
#include <memory>

#include "addon-graph.h"
#include "op-profile.h"
#include "plan.h"

namespace kiln {

namespace {

class PlanWrap : public Napi::ObjectWrap<PlanWrap> {
 public:
  static Napi::Function Define(Napi::Env env) {
    return DefineClass(env, "Plan",
                       {InstanceMethod("forward", &PlanWrap::Forward), InstanceMethod("forwardBatch", &PlanWrap::ForwardBatch),
                        InstanceMethod("copySlot", &PlanWrap::CopySlot),
                        InstanceMethod("dispose", &PlanWrap::Dispose)});
  }

  explicit PlanWrap(const Napi::CallbackInfo& info) : Napi::ObjectWrap<PlanWrap>(info) {
    Napi::Env env = info.Env();
    if (info.Length() < 2 || !info[0].IsObject() || !info[1].IsObject())
      throw Napi::TypeError::New(env, "new Plan(graph, options)");
    const Napi::Object graph = info[0].As<Napi::Object>();
    const PlanOptions options = parsePlanOptions(info[1].As<Napi::Object>());
    ParsedGraph parsed = parseGraph(graph, buffers_);
    try {
      plan_ = std::make_unique<Plan>(std::move(parsed.tensors), std::move(parsed.nodes), parsed.output, options);
    } catch (const PlanError& e) {
      throw Napi::Error::New(env, std::string("invalid graph: ") + e.what());
    } catch (const std::bad_alloc&) {
      throw Napi::Error::New(env, "not enough memory for the plan's buffers and KV cache");
    }
  }

  Plan* plan() { return plan_.get(); }
  std::atomic<bool> busy{false};

 private:
  Napi::Value Forward(const Napi::CallbackInfo& info) {
    requireLive(info.Env());
    return queueForward(info, this);
  }

  Napi::Value ForwardBatch(const Napi::CallbackInfo& info) {
    requireLive(info.Env());
    return queueForwardBatch(info, this);
  }

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

Napi::Value SetOpProfiling(const Napi::CallbackInfo& info) {
  if (info.Length() < 1 || !info[0].IsBoolean()) throw Napi::TypeError::New(info.Env(), "setOpProfiling takes a boolean");
  setOpProfiling(info[0].As<Napi::Boolean>().Value());
  return info.Env().Undefined();
}

Napi::Value TakeOpProfile(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const OpProfileTotals totals = takeOpProfile();
  Napi::Object o = Napi::Object::New(env);
  o.Set("steps", (double)totals.steps);
  o.Set("tokens", (double)totals.tokens);
  o.Set("stepSeconds", totals.stepSeconds);
  Napi::Array ops = Napi::Array::New(env, totals.ops.size());
  for (size_t i = 0; i < totals.ops.size(); i++) {
    const OpTime& t = totals.ops[i];
    Napi::Object op = Napi::Object::New(env);
    op.Set("label", t.label);
    op.Set("seconds", t.seconds);
    op.Set("calls", (double)t.calls);
    op.Set("weightBytes", (double)t.weightBytes);
    op.Set("flops", t.flops);
    ops.Set((uint32_t)i, op);
  }
  o.Set("ops", ops);
  return o;
}

}  // namespace

void registerPlanExports(Napi::Env env, Napi::Object exports) {
  exports.Set("Plan", PlanWrap::Define(env));
  exports.Set("setOpProfiling", Napi::Function::New(env, SetOpProfiling, "setOpProfiling"));
  exports.Set("takeOpProfile", Napi::Function::New(env, TakeOpProfile, "takeOpProfile"));
}

}  // namespace kiln

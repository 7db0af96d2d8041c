// The CUDA surface seen from JS: cudaDevices() and the CudaPlan class. Built without CUDA (no nvcc,
// KILN_CUDA=0, or node-gyp), the same names exist: cudaDevices() says why the list is empty and
// `new CudaPlan()` throws, so JS code never depends on how the addon was built.
#include <napi.h>

#include <atomic>
#include <functional>
#include <memory>

#include "addon-graph.h"

#if defined(KILN_CUDA)
#include "cuda/cuda-check.h"
#include "cuda/cuda-plan.h"
#include "cuda/devices.h"
#endif

namespace kiln {

namespace {

// Error objects carry `kilnCode` so src/backend/cuda maps them to typed errors without parsing
// messages: 'invalid_graph', 'cuda_out_of_memory', 'cuda_error' or 'cuda_unavailable'.
Napi::Error codedError(Napi::Env env, const std::string& message, const char* code) {
  Napi::Error e = Napi::Error::New(env, message);
  e.Set("kilnCode", Napi::String::New(env, code));
  return e;
}

#if defined(KILN_CUDA)

Napi::Value CudaDevicesJs(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const cuda::DeviceList list = cuda::listDevices();
  Napi::Array devices = Napi::Array::New(env, list.devices.size());
  for (size_t i = 0; i < list.devices.size(); i++) {
    const cuda::DeviceInfo& d = list.devices[i];
    Napi::Object o = Napi::Object::New(env);
    o.Set("index", d.index);
    o.Set("name", d.name);
    o.Set("computeCapability", std::to_string(d.major) + "." + std::to_string(d.minor));
    o.Set("totalMemory", (double)d.totalMemory);
    o.Set("multiProcessors", d.multiProcessors);
    o.Set("memoryBandwidth", d.memoryBandwidth);
    devices.Set((uint32_t)i, o);
  }
  Napi::Object result = Napi::Object::New(env);
  result.Set("devices", devices);
  result.Set("reason", list.reason.empty() ? env.Null() : Napi::String::New(env, list.reason));
  result.Set("architectures", cuda::compiledArchitectures());
  return result;
}

class CudaPlanWrap;

// Runs `task` on a libuv worker and resolves with the number it returns; the plan's wrapper stays
// referenced and marked busy until the promise settles.
class TaskWorker : public Napi::AsyncWorker {
 public:
  TaskWorker(Napi::Env env, CudaPlanWrap* owner, Napi::Object self, std::function<double()> task);
  Napi::Promise promise() { return deferred_.Promise(); }
  void Execute() override {
    try {
      result_ = task_();
    } catch (const std::exception& e) {
      SetError(e.what());
    }
  }
  void OnOK() override;
  void OnError(const Napi::Error& e) override;

 private:
  Napi::Promise::Deferred deferred_;
  CudaPlanWrap* owner_;
  Napi::ObjectReference self_;
  std::function<double()> task_;
  double result_ = 0;
};

class UploadWorker : public Napi::AsyncProgressWorker<double> {
 public:
  UploadWorker(Napi::Env env, CudaPlanWrap* owner, Napi::Object self, Napi::Function onProgress);
  Napi::Promise promise() { return deferred_.Promise(); }
  void Execute(const ExecutionProgress& progress) override;
  void OnProgress(const double* data, size_t count) override {
    if (count > 0 && !onProgress_.IsEmpty()) onProgress_.Call({Napi::Number::New(Env(), data[count - 1])});
  }
  void OnOK() override;
  void OnError(const Napi::Error& e) override;

 private:
  Napi::Promise::Deferred deferred_;
  CudaPlanWrap* owner_;
  Napi::ObjectReference self_;
  Napi::FunctionReference onProgress_;
};

class CudaPlanWrap : public Napi::ObjectWrap<CudaPlanWrap> {
 public:
  static Napi::Function Define(Napi::Env env) {
    return DefineClass(env, "CudaPlan",
                       {InstanceMethod("upload", &CudaPlanWrap::Upload), InstanceMethod("forward", &CudaPlanWrap::Forward),
                        InstanceMethod("forwardBatch", &CudaPlanWrap::ForwardBatch),
                        InstanceMethod("forwardArgmax", &CudaPlanWrap::ForwardArgmax),
                        InstanceMethod("benchmark", &CudaPlanWrap::Benchmark), InstanceMethod("copySlot", &CudaPlanWrap::CopySlot),
                        InstanceMethod("memory", &CudaPlanWrap::Memory), InstanceMethod("dispose", &CudaPlanWrap::Dispose)});
  }

  explicit CudaPlanWrap(const Napi::CallbackInfo& info) : Napi::ObjectWrap<CudaPlanWrap>(info) {
    Napi::Env env = info.Env();
    if (info.Length() < 2 || !info[0].IsObject() || !info[1].IsObject())
      throw Napi::TypeError::New(env, "new CudaPlan(graph, options)");
    const Napi::Object opts = info[1].As<Napi::Object>();
    cuda::CudaPlanOptions options;
    options.plan = parsePlanOptions(opts);
    options.device = (int)numberField(opts, "device", 0);
    options.graphs = !opts.Get("graphs").IsBoolean() || opts.Get("graphs").As<Napi::Boolean>().Value();
    ParsedGraph parsed = parseGraph(info[0].As<Napi::Object>(), buffers_);
    try {
      plan_ = std::make_unique<cuda::CudaPlan>(std::move(parsed.tensors), std::move(parsed.nodes), parsed.output, options);
    } catch (const PlanError& e) {
      throw codedError(env, std::string("invalid graph: ") + e.what(), "invalid_graph");
    } catch (const cuda::CudaOutOfMemoryError& e) {
      throw codedError(env, e.what(), "cuda_out_of_memory");
    } catch (const cuda::CudaError& e) {
      throw codedError(env, e.what(), "cuda_error");
    } catch (const std::bad_alloc&) {
      throw codedError(env, "not enough host memory for the CUDA plan", "cuda_out_of_memory");
    }
  }

  cuda::CudaPlan* plan() { return plan_.get(); }
  std::atomic<bool> busy{false};

 private:
  void requireIdle(Napi::Env env) {
    if (!plan_) throw Napi::Error::New(env, "the plan was disposed");
    bool expected = false;
    if (!busy.compare_exchange_strong(expected, true)) throw Napi::Error::New(env, "a step is already running on this plan");
  }

  Napi::Value Upload(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    const Napi::Function onProgress = info.Length() > 0 && info[0].IsFunction() ? info[0].As<Napi::Function>() : Napi::Function();
    requireIdle(env);
    auto* worker = new UploadWorker(env, this, info.This().As<Napi::Object>(), onProgress);
    Napi::Promise p = worker->promise();
    worker->Queue();
    return p;
  }

  Napi::Value Forward(const Napi::CallbackInfo& info) {
    if (!plan_) throw Napi::Error::New(info.Env(), "the plan was disposed");
    return queueForward(info, this);
  }

  Napi::Value ForwardBatch(const Napi::CallbackInfo& info) {
    if (!plan_) throw Napi::Error::New(info.Env(), "the plan was disposed");
    return queueForwardBatch(info, this);
  }

  // forwardArgmax(tokens, positions, slot) and benchmark(tokens, positions, slot, iterations).
  Napi::Value ForwardArgmax(const Napi::CallbackInfo& info) { return queueTask(info, false); }
  Napi::Value Benchmark(const Napi::CallbackInfo& info) { return queueTask(info, true); }

  Napi::Value queueTask(const Napi::CallbackInfo& info, bool benchmark) {
    Napi::Env env = info.Env();
    if (info.Length() < (benchmark ? 4u : 3u) || !info[0].IsTypedArray() || !info[1].IsTypedArray())
      throw Napi::TypeError::New(env, benchmark ? "benchmark(tokens: Int32Array, positions: Int32Array, slot, iterations)"
                                                : "forwardArgmax(tokens: Int32Array, positions: Int32Array, slot)");
    const auto tokens = info[0].As<Napi::TypedArray>(), positions = info[1].As<Napi::TypedArray>();
    if (tokens.TypedArrayType() != napi_int32_array || positions.TypedArrayType() != napi_int32_array)
      throw Napi::TypeError::New(env, "tokens and positions must be Int32Array");
    if (tokens.ElementLength() != positions.ElementLength())
      throw Napi::RangeError::New(env, "tokens and positions must have the same length");
    // The worker reads copies: the caller's arrays may change before it runs.
    auto ids = std::make_shared<std::vector<int32_t>>(tokens.As<Napi::Int32Array>().Data(),
                                                      tokens.As<Napi::Int32Array>().Data() + tokens.ElementLength());
    auto pos = std::make_shared<std::vector<int32_t>>(positions.As<Napi::Int32Array>().Data(),
                                                      positions.As<Napi::Int32Array>().Data() + positions.ElementLength());
    const int slot = info[2].ToNumber().Int32Value();
    const int iterations = benchmark ? info[3].ToNumber().Int32Value() : 0;
    requireIdle(env);
    cuda::CudaPlan* plan = plan_.get();
    std::function<double()> task = [plan, ids, pos, slot, iterations, benchmark]() -> double {
      const int64_t n = (int64_t)ids->size();
      if (benchmark) return plan->benchmark(ids->data(), pos->data(), n, slot, iterations);
      return (double)plan->forwardArgmax(ids->data(), pos->data(), n, slot);
    };
    auto* worker = new TaskWorker(env, this, info.This().As<Napi::Object>(), std::move(task));
    Napi::Promise p = worker->promise();
    worker->Queue();
    return p;
  }

  Napi::Value CopySlot(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    requireIdle(env);
    try {
      plan_->copySlot(info[0].ToNumber().Int32Value(), info[1].ToNumber().Int32Value(), info[2].ToNumber().Int64Value());
      busy = false;
    } catch (const PlanError& e) {
      busy = false;
      throw Napi::RangeError::New(env, e.what());
    } catch (const std::exception& e) {
      busy = false;
      throw codedError(env, e.what(), "cuda_error");
    }
    return env.Undefined();
  }

  Napi::Value Memory(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    if (!plan_) throw Napi::Error::New(env, "the plan was disposed");
    const cuda::DeviceMemory m = plan_->memory();
    Napi::Object o = Napi::Object::New(env);
    o.Set("weights", (double)m.weights);
    o.Set("activations", (double)m.activations);
    o.Set("kvCache", (double)m.kvCache);
    return o;
  }

  Napi::Value Dispose(const Napi::CallbackInfo& info) {
    if (busy) throw Napi::Error::New(info.Env(), "dispose during a step");
    plan_.reset();
    buffers_.clear();
    return info.Env().Undefined();
  }

  std::unique_ptr<cuda::CudaPlan> plan_;
  std::vector<Napi::ObjectReference> buffers_;
};

TaskWorker::TaskWorker(Napi::Env env, CudaPlanWrap* owner, Napi::Object self, std::function<double()> task)
    : Napi::AsyncWorker(env, "kiln.cuda"), deferred_(Napi::Promise::Deferred::New(env)), owner_(owner),
      task_(std::move(task)) {
  self_ = Napi::Persistent(self);
}

void TaskWorker::OnOK() {
  owner_->busy = false;
  deferred_.Resolve(Napi::Number::New(Env(), result_));
}

void TaskWorker::OnError(const Napi::Error& e) {
  owner_->busy = false;
  deferred_.Reject(e.Value());
}

UploadWorker::UploadWorker(Napi::Env env, CudaPlanWrap* owner, Napi::Object self, Napi::Function onProgress)
    : Napi::AsyncProgressWorker<double>(env, "kiln.cuda.upload"), deferred_(Napi::Promise::Deferred::New(env)),
      owner_(owner) {
  self_ = Napi::Persistent(self);
  if (!onProgress.IsEmpty()) onProgress_ = Napi::Persistent(onProgress);
}

void UploadWorker::Execute(const ExecutionProgress& progress) {
  try {
    owner_->plan()->upload([&progress](double fraction) { progress.Send(&fraction, 1); });
  } catch (const std::exception& e) {
    SetError(e.what());
  }
}

void UploadWorker::OnOK() {
  owner_->busy = false;
  deferred_.Resolve(Env().Undefined());
}

void UploadWorker::OnError(const Napi::Error& e) {
  owner_->busy = false;
  deferred_.Reject(e.Value());
}

#else  // built without CUDA

Napi::Value CudaDevicesJs(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Napi::Object result = Napi::Object::New(env);
  result.Set("devices", Napi::Array::New(env));
  result.Set("reason", "this build of kiln has no CUDA support (nvcc was not found when the addon was built, or "
                       "KILN_CUDA=0); install the CUDA toolkit and rebuild with `KILN_CUDA=1 npm run build:native`");
  result.Set("architectures", "");
  return result;
}

Napi::Value CudaPlanUnavailable(const Napi::CallbackInfo& info) {
  throw codedError(info.Env(), "this build of kiln has no CUDA support", "cuda_unavailable");
}

#endif

}  // namespace

void registerCudaExports(Napi::Env env, Napi::Object exports) {
  exports.Set("cudaDevices", Napi::Function::New(env, CudaDevicesJs, "cudaDevices"));
#if defined(KILN_CUDA)
  exports.Set("CudaPlan", CudaPlanWrap::Define(env));
#else
  exports.Set("CudaPlan", Napi::Function::New(env, CudaPlanUnavailable, "CudaPlan"));
#endif
}

}  // namespace kiln

// The addon's exports, exactly the names declared in src/native/binding.ts.
#include <napi.h>

#include "cpu/cpu-features.h"
#include "cpu/type-traits.h"

namespace kiln {
void registerKernelExports(Napi::Env env, Napi::Object exports);
void registerMappedFileExports(Napi::Env env, Napi::Object exports);
void registerPlanExports(Napi::Env env, Napi::Object exports);
void registerCudaExports(Napi::Env env, Napi::Object exports);
void registerProbeExports(Napi::Env env, Napi::Object exports);
}

namespace {

Napi::Value CpuFeaturesJs(const Napi::CallbackInfo& info) {
  const auto& f = kiln::cpuFeatures();
  auto o = Napi::Object::New(info.Env());
  o.Set("avx2", f.avx2);
  o.Set("fma", f.fma);
  o.Set("f16c", f.f16c);
  o.Set("avx512f", f.avx512f);
  o.Set("avx512Vnni", f.avx512Vnni);
  o.Set("avxVnni", f.avxVnni);
  o.Set("neon", f.neon);
  o.Set("logicalCores", f.logicalCores);
  o.Set("physicalCores", f.physicalCores);
  return o;
}

Napi::Object Init(Napi::Env env, Napi::Object exports) {
  exports.Set("cpuFeatures", Napi::Function::New(env, CpuFeaturesJs, "cpuFeatures"));
  kiln::registerKernelExports(env, exports);
  kiln::registerMappedFileExports(env, exports);
  kiln::registerPlanExports(env, exports);
  kiln::registerCudaExports(env, exports);
  kiln::registerProbeExports(env, exports);
  return exports;
}

}  // namespace

NODE_API_MODULE(kiln, Init)

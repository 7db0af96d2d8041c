// Machine probes for the benches: memory read bandwidth and peak FMA rate, measured with the same
// persistent thread pool the kernels use, so each kernel can be shown as a fraction of the
// machine's limits. Each probe runs on a libuv worker and returns a Promise.
#include <napi.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <functional>
#include <memory>
#include <vector>

#include "cpu-features.h"
#include "thread-pool.h"

namespace kiln {

#if defined(__x86_64__) || defined(__i386__)
uint64_t readBytes_avx2(const uint8_t* p, size_t n);
float fmaChains_avx2(int64_t iterations);
float fmaChains_avx512(int64_t iterations);
#endif

namespace {

using Clock = std::chrono::steady_clock;

constexpr int64_t kMaxThreads = 512;
constexpr double kMaxSeconds = 60;
constexpr size_t kMaxProbeBytes = size_t{16} << 30;  // a probe buffer larger than any cache

double since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

bool haveAvx2() {
  const CpuFeatures& f = cpuFeatures();
  return f.avx2 && f.fma;
}

uint64_t readBytesGeneric(const uint8_t* p, size_t n) {
  uint64_t acc[4] = {0, 0, 0, 0};
  const uint64_t* w = reinterpret_cast<const uint64_t*>(p);
  for (size_t i = 0; i < n / 8; i += 4)
    for (int k = 0; k < 4; k++) acc[k] += w[i + k];
  return acc[0] + acc[1] + acc[2] + acc[3];
}

float fmaChainsGeneric(int64_t iterations) {
  float acc[8];
  for (int k = 0; k < 8; k++) acc[k] = 1.0f + 0.01f * k;
  for (int64_t i = 0; i < iterations; i++)
    for (int k = 0; k < 8; k++) acc[k] = std::fma(acc[k], 0.999999f, 0.000001f);
  return acc[0] + acc[7];
}

// Read bandwidth in GB/s: every thread reads its share of one large buffer; the best of repeated
// passes within `seconds`, so a pass slowed by another process does not count.
double memoryBandwidth(int threads, size_t bytes, double seconds) {
  bytes = bytes / (128 * (size_t)threads) * 128 * (size_t)threads;
  struct Free { void operator()(uint8_t* p) const { std::free(p); } };
  std::unique_ptr<uint8_t, Free> buffer(static_cast<uint8_t*>(std::aligned_alloc(4096, bytes)));
  if (!buffer) throw std::bad_alloc();
  ThreadPool pool(threads);
  const size_t share = bytes / threads;
  // Each thread writes its own share first, so its pages are mapped (and on NUMA, local).
  pool.run([&](int ith, int) {
    uint8_t* p = buffer.get() + share * ith;
    for (size_t i = 0; i < share; i += 64) p[i] = (uint8_t)i;
  });
  const bool avx2 = haveAvx2();
  std::vector<uint64_t> sinks(threads * 8);
  double best = 0;
  const auto start = Clock::now();
  for (int pass = 0; pass < 3 || since(start) < seconds; pass++) {
    const auto t0 = Clock::now();
    pool.run([&](int ith, int) {
      const uint8_t* p = buffer.get() + share * ith;
#if defined(__x86_64__) || defined(__i386__)
      sinks[ith * 8] += avx2 ? readBytes_avx2(p, share) : readBytesGeneric(p, share);
#else
      sinks[ith * 8] += readBytesGeneric(p, share);
#endif
    });
    best = std::max(best, (double)bytes / since(t0) / 1e9);
    if (pass > 1000) break;
  }
  return best;
}

// Peak single-precision FMA rate in GFLOP/s over `threads` threads (the best of several rounds), on
// the widest vectors the kernels use on this CPU: 512-bit where the AVX-512 kernels run.
double fmaPeak(int threads, double seconds) {
  ThreadPool pool(threads);
  const bool avx2 = haveAvx2();
  const bool avx512 = avx2 && cpuFeatures().avx512Vnni;
  const int64_t iterations = 2'000'000;
  const double flopsPerThread = (double)iterations * (avx512 ? 12 * 16 : avx2 ? 12 * 8 : 8) * 2;
  std::vector<float> sinks(threads * 16);
  double best = 0;
  const auto start = Clock::now();
  for (int round = 0; round < 3 || since(start) < seconds; round++) {
    const auto t0 = Clock::now();
    pool.run([&](int ith, int) {
#if defined(__x86_64__) || defined(__i386__)
      sinks[ith * 16] += avx512 ? fmaChains_avx512(iterations) : avx2 ? fmaChains_avx2(iterations) : fmaChainsGeneric(iterations);
#else
      sinks[ith * 16] += fmaChainsGeneric(iterations);
#endif
    });
    best = std::max(best, flopsPerThread * threads / since(t0) / 1e9);
    if (round > 1000) break;
  }
  return best;
}

// Runs `work` on a libuv worker and resolves with its number; a C++ exception rejects.
class ProbeWorker : public Napi::AsyncWorker {
 public:
  ProbeWorker(Napi::Env env, std::function<double()> work)
      : Napi::AsyncWorker(env, "kiln.probe"), deferred_(Napi::Promise::Deferred::New(env)), work_(std::move(work)) {}

  Napi::Promise promise() { return deferred_.Promise(); }

  void Execute() override {
    try {
      result_ = work_();
    } catch (const std::bad_alloc&) {
      SetError("not enough memory for the probe's buffer");
    } catch (const std::exception& e) {
      SetError(e.what());
    }
  }
  void OnOK() override { deferred_.Resolve(Napi::Number::New(Env(), result_)); }
  void OnError(const Napi::Error& e) override { deferred_.Reject(e.Value()); }

 private:
  Napi::Promise::Deferred deferred_;
  std::function<double()> work_;
  double result_ = 0;
};

double numberArg(const Napi::CallbackInfo& info, size_t i, const char* name, double min, double max) {
  if (info.Length() <= i || !info[i].IsNumber()) throw Napi::TypeError::New(info.Env(), std::string(name) + " must be a number");
  const double v = info[i].As<Napi::Number>().DoubleValue();
  if (!(v >= min && v <= max))
    throw Napi::RangeError::New(info.Env(), std::string(name) + " must be from " + std::to_string(min) + " to " + std::to_string(max));
  return v;
}

int64_t intArg(const Napi::CallbackInfo& info, size_t i, const char* name, int64_t min, int64_t max) {
  const double v = numberArg(info, i, name, (double)min, (double)max);
  if (v != std::floor(v)) throw Napi::RangeError::New(info.Env(), std::string(name) + " must be an integer");
  return (int64_t)v;
}

Napi::Value ProbeMemoryBandwidth(const Napi::CallbackInfo& info) {
  const int threads = (int)intArg(info, 0, "threads", 1, kMaxThreads);
  const size_t bytes = (size_t)intArg(info, 1, "bytes", 1 << 20, (int64_t)kMaxProbeBytes);
  const double seconds = numberArg(info, 2, "seconds", 0, kMaxSeconds);
  auto* w = new ProbeWorker(info.Env(), [=] { return memoryBandwidth(threads, bytes, seconds); });
  Napi::Promise p = w->promise();
  w->Queue();
  return p;
}

Napi::Value ProbeFmaPeak(const Napi::CallbackInfo& info) {
  const int threads = (int)intArg(info, 0, "threads", 1, kMaxThreads);
  const double seconds = numberArg(info, 1, "seconds", 0, kMaxSeconds);
  auto* w = new ProbeWorker(info.Env(), [=] { return fmaPeak(threads, seconds); });
  Napi::Promise p = w->promise();
  w->Queue();
  return p;
}

}  // namespace

void registerProbeExports(Napi::Env env, Napi::Object exports) {
  exports.Set("probeMemoryBandwidth", Napi::Function::New(env, ProbeMemoryBandwidth, "probeMemoryBandwidth"));
  exports.Set("probeFmaPeak", Napi::Function::New(env, ProbeFmaPeak, "probeFmaPeak"));
}

}  // namespace kiln

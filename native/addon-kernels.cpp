// Exports for the kernel layer: the type table, reference (de)quantizers, a direct matrix
// product for kernel tests, a timer of it for the kernel bench, and the kernel level switch. Every
// size is checked before any native code touches a buffer.
#include <napi.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <sstream>
#include <string>
#include <vector>

#include "cpu/mat-mul.h"
#include "cpu/ops.h"
#include "cpu/thread-pool.h"
#include "cpu/type-traits.h"

namespace kiln {

namespace {

// Large enough for any real model row and token batch; small enough that every product of two
// limits, and a weight row's bytes times the row limit, fit in 64 bits.
constexpr int64_t kMaxDim = int64_t{1} << 30;
constexpr int64_t kMaxTokens = 65536;
constexpr int64_t kMaxThreads = 512;
// Every block struct has 4-byte alignment or less.
constexpr uintptr_t kBufferAlignment = 4;

std::string formatNumber(double v) {
  std::ostringstream out;
  out << v;
  return out.str();
}

std::string knownTypes() {
  size_t count = 0;
  const TypeTraits* const* all = allTypeTraits(&count);
  std::string names;
  for (size_t i = 0; i < count; i++) names += (i ? ", " : "") + std::string(all[i]->name) + " (" + std::to_string((int)all[i]->type) + ")";
  return names;
}

const TypeTraits& typeArg(const Napi::CallbackInfo& info, size_t i) {
  const Napi::Env env = info.Env();
  if (!info[i].IsNumber()) throw Napi::TypeError::New(env, "type must be a GgmlType number");
  const double v = info[i].As<Napi::Number>().DoubleValue();
  const TypeTraits* tr = v == std::floor(v) && std::fabs(v) < 1e9 ? typeTraits((int32_t)v) : nullptr;
  if (!tr) throw Napi::RangeError::New(env, "type " + formatNumber(v) + " is not one kiln computes with; known: " + knownTypes());
  return *tr;
}

int64_t intArg(const Napi::CallbackInfo& info, size_t i, const char* name, int64_t min, int64_t max) {
  const Napi::Env env = info.Env();
  if (!info[i].IsNumber()) throw Napi::TypeError::New(env, std::string(name) + " must be a number");
  const double v = info[i].As<Napi::Number>().DoubleValue();
  if (!(v == std::floor(v) && v >= (double)min && v <= (double)max))
    throw Napi::RangeError::New(env, std::string(name) + " must be an integer from " + std::to_string(min) + " to " +
                                         std::to_string(max) + ", got " + formatNumber(v));
  return (int64_t)v;
}

template <typename T>
Napi::TypedArrayOf<T> arrayArg(const Napi::CallbackInfo& info, size_t i, napi_typedarray_type kind, const char* name,
                               const char* kindName) {
  const Napi::Env env = info.Env();
  if (!info[i].IsTypedArray() || info[i].As<Napi::TypedArray>().TypedArrayType() != kind)
    throw Napi::TypeError::New(env, std::string(name) + " must be a " + kindName);
  Napi::TypedArrayOf<T> array = info[i].As<Napi::TypedArrayOf<T>>();
  if (reinterpret_cast<uintptr_t>(array.Data()) % kBufferAlignment != 0)
    throw Napi::RangeError::New(env, std::string(name) + " must start at a multiple of 4 bytes (check its byteOffset)");
  return array;
}

Napi::Uint8Array bytesArg(const Napi::CallbackInfo& info, size_t i, const char* name) {
  return arrayArg<uint8_t>(info, i, napi_uint8_array, name, "Uint8Array");
}

Napi::Float32Array floatsArg(const Napi::CallbackInfo& info, size_t i, const char* name) {
  return arrayArg<float>(info, i, napi_float32_array, name, "Float32Array");
}

// Where a sampling kernel writes the candidates it keeps: ids and their logits, each at least `need` long.
struct CandidateArgs {
  Napi::Int32Array ids;
  Napi::Float32Array logits;
};
CandidateArgs candidateArgs(const Napi::CallbackInfo& info, size_t i, int64_t need) {
  CandidateArgs c{arrayArg<int32_t>(info, i, napi_int32_array, "ids", "Int32Array"), floatsArg(info, i + 1, "out")};
  if ((int64_t)c.ids.ElementLength() < need || (int64_t)c.logits.ElementLength() < need)
    throw Napi::RangeError::New(info.Env(), "ids and out need " + std::to_string(need) + " entries");
  return c;
}

// The sampling kernels' scratch for a row of n logits: n floats and a double per block of eight.
struct RowScratch {
  float* e;
  double* blocks;
};
RowScratch rowScratch(int64_t n) {
  thread_local std::vector<float> e;
  thread_local std::vector<double> blocks;
  e.resize((size_t)n);
  blocks.resize((size_t)(n + 7) / 8);
  return {e.data(), blocks.data()};
}

// n values of type t: a whole number of blocks, and their byte size.
size_t bytesFor(const Napi::Env& env, const TypeTraits& t, size_t n, const char* what) {
  if (n % (size_t)t.blockSize != 0)
    throw Napi::RangeError::New(env, std::string(what) + " has " + std::to_string(n) + " values; " + t.name +
                                         " needs a multiple of " + std::to_string(t.blockSize));
  return rowBytes(t.type, (int64_t)n);
}

void requireLength(const Napi::Env& env, const char* name, size_t actual, size_t expected, const char* unit) {
  if (actual != expected)
    throw Napi::RangeError::New(env, std::string(name) + " has " + std::to_string(actual) + " " + unit + "; expected " +
                                         std::to_string(expected));
}

void checkArgCount(const Napi::CallbackInfo& info, size_t n, const char* signature) {
  if (info.Length() < n) throw Napi::TypeError::New(info.Env(), std::string("expected ") + signature);
}

Napi::Value TypeTable(const Napi::CallbackInfo& info) {
  const Napi::Env env = info.Env();
  size_t count = 0;
  const TypeTraits* const* all = allTypeTraits(&count);
  Napi::Array rows = Napi::Array::New(env, count);
  for (size_t i = 0; i < count; i++) {
    const TypeTraits& t = *all[i];
    Napi::Object row = Napi::Object::New(env);
    row.Set("type", (int)t.type);
    row.Set("name", t.name);
    row.Set("blockSize", (double)t.blockSize);
    row.Set("typeSize", (double)t.typeSize);
    row.Set("vecDotType", (int)t.vecDotType);
    row.Set("isWeightType", t.isWeightType);
    rows.Set((uint32_t)i, row);
  }
  return rows;
}

void Quantize(const Napi::CallbackInfo& info) {
  const Napi::Env env = info.Env();
  checkArgCount(info, 3, "quantize(type, src: Float32Array, dst: Uint8Array)");
  const TypeTraits& t = typeArg(info, 0);
  Napi::Float32Array src = floatsArg(info, 1, "src");
  Napi::Uint8Array dst = bytesArg(info, 2, "dst");
  const size_t n = src.ElementLength();
  requireLength(env, "dst", dst.ByteLength(), bytesFor(env, t, n, "src"), "bytes");
  // NaN payloads and infinities would flow into the scale search, where the TS reference cannot
  // promise the same bits; a block format cannot represent them anyway.
  if (t.blockSize > 1) {
    for (size_t i = 0; i < n; i++)
      if (!std::isfinite(src[i]))
        throw Napi::RangeError::New(env, std::string("src[") + std::to_string(i) + "] is not finite; " + t.name +
                                             " blocks hold finite values only");
  }
  t.fromFloatRef(src.Data(), dst.Data(), (int64_t)n);
}

// The activation quantizer a matrix product uses at the current kernel level (SIMD or generic).
void QuantizeActivations(const Napi::CallbackInfo& info) {
  const Napi::Env env = info.Env();
  checkArgCount(info, 3, "quantizeActivations(type, src: Float32Array, dst: Uint8Array)");
  const TypeTraits& t = typeArg(info, 0);
  Napi::Float32Array src = floatsArg(info, 1, "src");
  Napi::Uint8Array dst = bytesArg(info, 2, "dst");
  const size_t n = src.ElementLength();
  requireLength(env, "dst", dst.ByteLength(), bytesFor(env, t, n, "src"), "bytes");
  t.fromFloat(src.Data(), dst.Data(), (int64_t)n);
}

void Dequantize(const Napi::CallbackInfo& info) {
  const Napi::Env env = info.Env();
  checkArgCount(info, 3, "dequantize(type, src: Uint8Array, dst: Float32Array)");
  const TypeTraits& t = typeArg(info, 0);
  Napi::Uint8Array src = bytesArg(info, 1, "src");
  Napi::Float32Array dst = floatsArg(info, 2, "dst");
  const size_t n = dst.ElementLength();
  requireLength(env, "src", src.ByteLength(), bytesFor(env, t, n, "dst"), "bytes");
  t.toFloat(src.Data(), dst.Data(), (int64_t)n);
}

// The checked arguments mulMat and timeMulMat share: (type, weights, rows, cols, x, nTokens, ...).
struct MulMatArgs {
  const TypeTraits* t;
  const uint8_t* weights;
  int64_t rows, cols;
  const float* x;
  int64_t nTokens;
};

MulMatArgs mulMatArgs(const Napi::CallbackInfo& info) {
  const Napi::Env env = info.Env();
  const TypeTraits& t = typeArg(info, 0);
  if (!t.isWeightType) throw Napi::RangeError::New(env, std::string(t.name) + " is not a weight type");
  Napi::Uint8Array weights = bytesArg(info, 1, "weights");
  const int64_t rows = intArg(info, 2, "rows", 1, kMaxDim);
  const int64_t cols = intArg(info, 3, "cols", 1, kMaxDim);
  Napi::Float32Array x = floatsArg(info, 4, "x");
  const int64_t nTokens = intArg(info, 5, "nTokens", 1, kMaxTokens);
  const size_t rowSize = bytesFor(env, t, (size_t)cols, "a weight row");
  requireLength(env, "weights", weights.ByteLength(), rowSize * (size_t)rows, "bytes");
  requireLength(env, "x", x.ElementLength(), (size_t)(nTokens * cols), "values");
  return {&t, weights.Data(), rows, cols, x.Data(), nTokens};
}

void MulMat(const Napi::CallbackInfo& info) {
  const Napi::Env env = info.Env();
  checkArgCount(info, 8, "mulMat(type, weights, rows, cols, x, nTokens, y, threads)");
  const MulMatArgs a = mulMatArgs(info);
  Napi::Float32Array y = floatsArg(info, 6, "y");
  const int64_t threads = intArg(info, 7, "threads", 1, kMaxThreads);
  requireLength(env, "y", y.ElementLength(), (size_t)(a.nTokens * a.rows), "values");
  ThreadPool pool((int)threads);
  std::vector<uint8_t> scratch(mulMatScratchBytes(a.t->type, a.cols, a.nTokens));
  mulMat(*a.t, a.weights, a.rows, a.cols, a.x, a.nTokens, y.Data(), pool, scratch.data());
}

// The time for the product as a plan runs it at the current kernel level (packed first where the
// level packs the type, as plans do), over `calls` calls after one: the minimum and the median in
// microseconds. With weights small enough for L2 and one thread this times the kernels themselves,
// steadily enough on a noisy machine to compare two builds (bench kernel-timer); with `copies`
// copies of them, larger together than the caches, each call reads its weights from memory, and
// with `threads` threads, as decode does.
Napi::Value TimeMulMat(const Napi::CallbackInfo& info) {
  const Napi::Env env = info.Env();
  checkArgCount(info, 7, "timeMulMat(type, weights, rows, cols, x, nTokens, calls[, copies[, threads]])");
  const MulMatArgs a = mulMatArgs(info);
  const int64_t calls = intArg(info, 6, "calls", 1, 1000000);
  const int64_t copies = info.Length() > 7 ? intArg(info, 7, "copies", 1, 65536) : 1;
  const int64_t threads = info.Length() > 8 ? intArg(info, 8, "threads", 1, kMaxThreads) : 1;
  ThreadPool pool((int)threads);
  std::vector<float> y((size_t)(a.nTokens * a.rows));
  const size_t packed = packedBytes(*a.t, a.rows, a.cols), plain = rowBytes(a.t->type, a.cols) * (size_t)a.rows;
  // Each copy 64-byte aligned, packed where the level packs the type.
  const size_t stride = ((packed ? packed : plain) + 63) / 64 * 64;
  std::vector<uint8_t> data(stride * (size_t)copies + 64);
  uint8_t* base = data.data() + (64 - reinterpret_cast<uintptr_t>(data.data()) % 64) % 64;
  std::vector<PackedWeights> pw((size_t)copies);
  for (int64_t c = 0; c < copies; c++) {
    if (packed) pw[(size_t)c] = packWeights(*a.t, a.weights, a.rows, a.cols, base + stride * (size_t)c);
    else std::memcpy(base + stride * (size_t)c, a.weights, plain);
  }
  std::vector<uint8_t> scratch(packed ? mulMatPackedScratchBytes(pw[0], a.nTokens, (int)threads) : mulMatScratchBytes(a.t->type, a.cols, a.nTokens));
  std::vector<double> us;
  us.reserve((size_t)calls);
  for (int64_t c = 0; c <= calls; c++) {
    const size_t copy = (size_t)(c % copies);
    const auto start = std::chrono::steady_clock::now();
    if (packed) mulMatPacked(pw[copy], a.x, a.nTokens, y.data(), pool, scratch.data());
    else mulMat(*a.t, base + stride * copy, a.rows, a.cols, a.x, a.nTokens, y.data(), pool, scratch.data());
    if (c > 0) us.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count());
  }
  std::sort(us.begin(), us.end());
  Napi::Object result = Napi::Object::New(env);
  result.Set("minUs", us.front());
  result.Set("medianUs", us[us.size() / 2]);
  result.Set("packed", packed > 0);
  return result;
}

Napi::Value Argmax(const Napi::CallbackInfo& info) {
  checkArgCount(info, 1, "argmax(values: Float32Array)");
  Napi::Float32Array values = floatsArg(info, 0, "values");
  return Napi::Number::New(info.Env(), (double)argmaxF32(values.Data(), (int64_t)values.ElementLength()));
}

void Softmax(const Napi::CallbackInfo& info) {
  const Napi::Env env = info.Env();
  checkArgCount(info, 3, "softmax(logits: Float32Array, n, probs: Float64Array)");
  Napi::Float32Array logits = floatsArg(info, 0, "logits");
  const int64_t n = intArg(info, 1, "n", 0, (int64_t)1 << 40);
  Napi::Float64Array probs = arrayArg<double>(info, 2, napi_float64_array, "probs", "Float64Array");
  if ((size_t)n > logits.ElementLength() || (size_t)n > probs.ElementLength())
    throw Napi::RangeError::New(env, "n is past the end of logits or probs");
  const RowScratch scratch = rowScratch(n);
  softmaxRow(logits.Data(), n, scratch.e, scratch.blocks, probs.Data());
}

Napi::Value SoftmaxDraw(const Napi::CallbackInfo& info) {
  const Napi::Env env = info.Env();
  checkArgCount(info, 3, "softmaxDraw(logits: Float32Array, temperature, u)");
  Napi::Float32Array logits = floatsArg(info, 0, "logits");
  const double t = info[1].ToNumber().DoubleValue();
  const double u = info[2].ToNumber().DoubleValue();
  if (!(t > 0) || !std::isfinite(t)) throw Napi::RangeError::New(env, "temperature must be a finite number > 0");
  if (!(u >= 0 && u < 1)) throw Napi::RangeError::New(env, "u must be in [0, 1)");
  const int64_t n = (int64_t)logits.ElementLength();
  if (n == 0) throw Napi::RangeError::New(env, "no logits to draw from");
  return Napi::Number::New(env, (double)softmaxDrawRow(logits.Data(), n, t, u, rowScratch(n).blocks));
}

void TopK(const Napi::CallbackInfo& info) {
  const Napi::Env env = info.Env();
  checkArgCount(info, 4, "topK(logits: Float32Array, k, ids: Int32Array, out: Float32Array)");
  Napi::Float32Array logits = floatsArg(info, 0, "logits");
  const int64_t n = (int64_t)logits.ElementLength();
  if (n == 0) throw Napi::RangeError::New(env, "no logits to select from");
  const int64_t k = intArg(info, 1, "k", 1, n);
  CandidateArgs c = candidateArgs(info, 2, k);
  selectTopRow(logits.Data(), n, k, c.ids.Data(), c.logits.Data());
}

Napi::Value Nucleus(const Napi::CallbackInfo& info) {
  const Napi::Env env = info.Env();
  checkArgCount(info, 5, "nucleus(logits: Float32Array, p, maxK, ids: Int32Array, out: Float32Array)");
  Napi::Float32Array logits = floatsArg(info, 0, "logits");
  const double p = info[1].ToNumber().DoubleValue();
  if (!(p > 0 && p < 1)) throw Napi::RangeError::New(env, "p must be in (0, 1)");
  const int64_t n = (int64_t)logits.ElementLength();
  if (n == 0) throw Napi::RangeError::New(env, "no logits to select from");
  const int64_t maxK = intArg(info, 2, "maxK", 1, n);
  CandidateArgs c = candidateArgs(info, 3, maxK);
  const RowScratch scratch = rowScratch(n);
  return Napi::Number::New(env, (double)nucleusRow(logits.Data(), n, p, maxK, scratch.e, scratch.blocks, c.ids.Data(), c.logits.Data()));
}

Napi::Value KeepAtLeast(const Napi::CallbackInfo& info) {
  checkArgCount(info, 4, "keepAtLeast(logits: Float32Array, threshold, ids: Int32Array, out: Float32Array)");
  Napi::Float32Array logits = floatsArg(info, 0, "logits");
  const double threshold = info[1].ToNumber().DoubleValue();
  const int64_t n = (int64_t)logits.ElementLength();
  CandidateArgs c = candidateArgs(info, 2, n);
  return Napi::Number::New(info.Env(), (double)keepAtLeastRow(logits.Data(), n, threshold, c.ids.Data(), c.logits.Data()));
}

void SetKernelLevel(const Napi::CallbackInfo& info) {
  const Napi::Env env = info.Env();
  const std::string level = info.Length() > 0 && info[0].IsString() ? info[0].As<Napi::String>().Utf8Value() : "";
  if (level == "generic") {
    setKernelLevel(KernelLevel::Generic);
  } else if (level == "avx2") {
    setKernelLevel(KernelLevel::Avx2);
  } else if (level == "best") {
    setKernelLevel(KernelLevel::Best);
  } else {
    throw Napi::TypeError::New(env, "setKernelLevel takes 'generic', 'avx2' or 'best'");
  }
}

}  // namespace

void registerKernelExports(Napi::Env env, Napi::Object exports) {
  initTypeTraits();
  exports.Set("typeTable", Napi::Function::New(env, TypeTable, "typeTable"));
  exports.Set("quantize", Napi::Function::New(env, Quantize, "quantize"));
  exports.Set("quantizeActivations", Napi::Function::New(env, QuantizeActivations, "quantizeActivations"));
  exports.Set("dequantize", Napi::Function::New(env, Dequantize, "dequantize"));
  exports.Set("mulMat", Napi::Function::New(env, MulMat, "mulMat"));
  exports.Set("timeMulMat", Napi::Function::New(env, TimeMulMat, "timeMulMat"));
  exports.Set("argmax", Napi::Function::New(env, Argmax, "argmax"));
  exports.Set("softmax", Napi::Function::New(env, Softmax, "softmax"));
  exports.Set("softmaxDraw", Napi::Function::New(env, SoftmaxDraw, "softmaxDraw"));
  exports.Set("topK", Napi::Function::New(env, TopK, "topK"));
  exports.Set("nucleus", Napi::Function::New(env, Nucleus, "nucleus"));
  exports.Set("keepAtLeast", Napi::Function::New(env, KeepAtLeast, "keepAtLeast"));
  exports.Set("setKernelLevel", Napi::Function::New(env, SetKernelLevel, "setKernelLevel"));
}

}  // namespace kiln

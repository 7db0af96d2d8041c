// Graph and option parsing for the plan wrappers; every field is type-checked and every constant's
// byte range is checked against its ArrayBuffer.
#include "addon-graph.h"

namespace kiln {

double numberField(const Napi::Object& o, const char* key, double fallback) {
  const Napi::Value v = o.Get(key);
  if (v.IsUndefined()) return fallback;
  if (!v.IsNumber()) throw Napi::TypeError::New(o.Env(), std::string(key) + " must be a number");
  return v.As<Napi::Number>().DoubleValue();
}

ParsedGraph parseGraph(const Napi::Object& graph, std::vector<Napi::ObjectReference>& keepAlive) {
  Napi::Env env = graph.Env();
  if (!graph.Get("tensors").IsArray() || !graph.Get("nodes").IsArray())
    throw Napi::TypeError::New(env, "graph.tensors and graph.nodes must be arrays");
  const Napi::Array tensors = graph.Get("tensors").As<Napi::Array>();
  const Napi::Array nodes = graph.Get("nodes").As<Napi::Array>();
  ParsedGraph parsed;
  parsed.tensors.resize(tensors.Length());
  for (uint32_t i = 0; i < tensors.Length(); i++) {
    if (!tensors.Get(i).IsObject()) throw Napi::TypeError::New(env, "graph.tensors[" + std::to_string(i) + "] must be an object");
    const Napi::Object t = tensors.Get(i).As<Napi::Object>();
    PlanTensor& pt = parsed.tensors[i];
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
      keepAlive.push_back(Napi::Persistent(ab.As<Napi::Object>()));
    }
  }
  parsed.nodes.resize(nodes.Length());
  for (uint32_t i = 0; i < nodes.Length(); i++) {
    if (!nodes.Get(i).IsObject()) throw Napi::TypeError::New(env, "graph.nodes[" + std::to_string(i) + "] must be an object");
    const Napi::Object n = nodes.Get(i).As<Napi::Object>();
    PlanNode& pn = parsed.nodes[i];
    pn.op = (OpCode)(int)numberField(n, "op", -1);
    pn.output = (int)numberField(n, "output", -1);
    const Napi::Value ins = n.Get("inputs"), ps = n.Get("params");
    if (!ins.IsArray()) throw Napi::TypeError::New(env, "node inputs must be an array");
    for (uint32_t j = 0; j < ins.As<Napi::Array>().Length(); j++) pn.inputs.push_back(ins.As<Napi::Array>().Get(j).ToNumber().Int32Value());
    if (ps.IsArray())
      for (uint32_t j = 0; j < ps.As<Napi::Array>().Length(); j++) pn.params.push_back(ps.As<Napi::Array>().Get(j).ToNumber().DoubleValue());
  }
  parsed.output = (int)numberField(graph, "output", -1);
  return parsed;
}

PlanOptions parsePlanOptions(const Napi::Object& opts) {
  PlanOptions options;
  options.threads = (int)numberField(opts, "threads", 1);
  options.slots = (int)numberField(opts, "slots", 1);
  options.contextSize = (int64_t)numberField(opts, "contextSize", 512);
  options.maxBatch = (int64_t)numberField(opts, "maxBatch", 512);
  options.kvType = (GgmlType)(int)numberField(opts, "kvType", 0);
  return options;
}

}  // namespace kiln

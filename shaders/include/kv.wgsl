// The KV cache of one layer and slot as the attention kernels read it, at bindings 1 and 2:
// f32, or f16 (read as f16 with shader-f16, else decoded from packed words by bits).
#include "half"

#if F16
@group(0) @binding(1) var<storage, read> kc: array<f16>;
@group(0) @binding(2) var<storage, read> vc: array<f16>;
#else
@group(0) @binding(1) var<storage, read> kc: array<u32>;
@group(0) @binding(2) var<storage, read> vc: array<u32>;
#endif

#if F16
fn k_at(i: u32) -> f32 { return f32(kc[i]); }
fn v_at(i: u32) -> f32 { return f32(vc[i]); }
#else
fn k_at(i: u32) -> f32 {
  if (KV_F16) { return f16_to_f32((kc[i >> 1u] >> ((i & 1u) * 16u)) & 0xffffu); }
  return bitcast<f32>(kc[i]);
}
fn v_at(i: u32) -> f32 {
  if (KV_F16) { return f16_to_f32((vc[i >> 1u] >> ((i & 1u) * 16u)) & 0xffffu); }
  return bitcast<f32>(vc[i]);
}
#endif

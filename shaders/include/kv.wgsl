// Reads of the KV cache (`kc`, `vc`: the including shader's bindings), f32 or f16. Without
// shader-f16, f16 entries are decoded from packed words by bits.
#include "half"

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

// Activations rounded to fp16 (for F16 weights) or bf16 (for BF16 weights), kept as f32: what ggml
// multiplies those weights with. One invocation per value.
#include "half"

struct Params {
  n: u32,
}

@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read_write> a: array<f32>;
@group(0) @binding(2) var<uniform> p: Params;

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  let i = gid.x + gid.y * nwg.x * WG;
  if (i >= p.n) { return; }
  if (BF16) {
    a[i] = bf16_to_f32(f32_to_bf16(x[i]));
  } else {
    a[i] = f16_to_f32(f32_to_f16(x[i]));
  }
}

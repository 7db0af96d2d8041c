// Decode attention, last pass: out_h = sum_j p_hj v_j over the cache rows j <= position, with the
// probabilities from softmax. One invocation per (head, dimension): neighbours read neighbouring
// values of each cache row.
#if F16
enable f16;
#endif
#include "kv"

struct Params {
  n_heads: u32,
  n_kv_heads: u32,
  head_dim: u32,
  ctx: u32,
}

@group(0) @binding(0) var<storage, read> probs: array<f32>;
// kc, vc: bindings 1 and 2 (include/kv.wgsl)
@group(0) @binding(3) var<storage, read> positions: array<i32>;
@group(0) @binding(4) var<storage, read_write> y: array<f32>;
@group(0) @binding(5) var<uniform> p: Params;

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  let i = gid.x + gid.y * nwg.x * WG;
  if (i >= p.n_heads * p.head_dim) { return; }
  let h = i / p.head_dim;
  let d = i % p.head_dim;
  let n = u32(positions[0]) + 1u;
  let kv_width = p.n_kv_heads * p.head_dim;
  let col = (h / (p.n_heads / p.n_kv_heads)) * p.head_dim + d;
  var acc = 0.0;
  for (var j = 0u; j < n; j++) { acc += probs[h * p.ctx + j] * v_at(j * kv_width + col); }
  y[i] = acc;
}

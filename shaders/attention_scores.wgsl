// Decode attention, first pass: scale * q_h . k_j for every head h and cache row j <= position
// (one query token: a slot's one row of a step, its segment), summed in the CPU backend's order (include/attend.wgsl). One invocation per
// (head, row); softmax and attention_values follow.
#if F16
enable f16;
#endif
#include "attend"
#include "segment"

struct Params {
  n_heads: u32,
  n_kv_heads: u32,
  head_dim: u32,
  ctx: u32, // row stride of the scores
  scale: f32,
  zero: u32,
}

@group(0) @binding(0) var<storage, read> q: array<f32>;
// kc, vc: bindings 1 and 2 (include/kv.wgsl)
@group(0) @binding(3) var<storage, read> positions: array<i32>;
@group(0) @binding(4) var<storage, read_write> scores: array<f32>;
@group(0) @binding(5) var<storage, read> seg: Segment;
@group(0) @binding(6) var<uniform> p: Params;

var<private> q_base: u32;

fn q_at(i: u32) -> f32 { return q[q_base + i]; }

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  let i = gid.x + gid.y * nwg.x * WG;
  let n = u32(positions[seg.row0]) + 1u;
  if (i >= p.n_heads * n) { return; }
  let h = i / n;
  let j = i % n;
  q_base = (seg.row0 * p.n_heads + h) * p.head_dim;
  scores[h * p.ctx + j] = qk_dot(j * p.n_kv_heads * p.head_dim + (h / (p.n_heads / p.n_kv_heads)) * p.head_dim, p.head_dim) * p.scale;
}

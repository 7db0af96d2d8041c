// Decode attention, last pass: out_h = sum_j p_hj v_j over the cache rows j <= position, with the
// probabilities from softmax, in eight FMA lanes (position j in lane j % 8) added in hsum order, as
// the CPU backend sums them. One invocation per (head, dimension): neighbours read neighbouring
// values of each cache row.
#if F16
enable f16;
#endif
#include "kv"
#include "lanes"
#include "fma"
#include "segment"

struct Params {
  n_heads: u32,
  n_kv_heads: u32,
  head_dim: u32,
  ctx: u32,
  zero: u32,
}

@group(0) @binding(0) var<storage, read> probs: array<f32>;
// kc, vc: bindings 1 and 2 (include/kv.wgsl)
@group(0) @binding(3) var<storage, read> positions: array<i32>;
@group(0) @binding(4) var<storage, read_write> y: array<f32>;
@group(0) @binding(5) var<storage, read> seg: Segment;
@group(0) @binding(6) var<uniform> p: Params;

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  let i = gid.x + gid.y * nwg.x * WG;
  if (i >= p.n_heads * p.head_dim) { return; }
  let h = i / p.head_dim;
  let d = i % p.head_dim;
  let n = u32(positions[seg.row0]) + 1u;
  let kv_width = p.n_kv_heads * p.head_dim;
  let col = (h / (p.n_heads / p.n_kv_heads)) * p.head_dim + d;
  var lo = vec4<f32>(0.0);
  var hi = vec4<f32>(0.0);
  // Eight positions a step; past the last one, probabilities and values are zero.
  for (var j = 0u; j < n; j += 8u) {
    var v: array<f32, 8>;
    var pr: array<f32, 8>;
    for (var l = 0u; l < 8u; l++) {
      let valid = j + l < n;
      let jj = min(j + l, n - 1u);
      v[l] = select(0.0, v_at(jj * kv_width + col), valid);
      pr[l] = select(0.0, probs[h * p.ctx + jj], valid);
    }
    lo = fma_rn4(vec4<f32>(v[0], v[1], v[2], v[3]), vec4<f32>(pr[0], pr[1], pr[2], pr[3]), lo);
    hi = fma_rn4(vec4<f32>(v[4], v[5], v[6], v[7]), vec4<f32>(pr[4], pr[5], pr[6], pr[7]), hi);
  }
  y[seg.row0 * p.n_heads * p.head_dim + i] = hsum8(lo, hi);
}

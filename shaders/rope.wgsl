// Rotary position embedding, normal (adjacent pairs) or NeoX (pairs half a rotation apart).
// The angles' cos and sin come from the host, per token and pair, as the CPU backend computes them
// (GPU sin/cos lose precision at the large angles of late positions). One invocation per value;
// dimensions past n_rot pass through.
#include "fma"

struct Params {
  n_heads: u32,
  head_dim: u32,
  n_rot: u32,
  neox: u32,
  n: u32, // tokens * heads * head_dim
  zero: u32,
}

@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read> cs: array<vec2<f32>>; // (tokens, n_rot / 2) of (cos, sin)
@group(0) @binding(2) var<storage, read_write> y: array<f32>;
@group(0) @binding(3) var<uniform> p: Params;

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  let i = gid.x + gid.y * nwg.x * WG;
  if (i >= p.n) { return; }
  let d = i % p.head_dim;
  if (d >= p.n_rot) {
    y[i] = x[i];
    return;
  }
  let half = p.n_rot / 2u;
  let t = i / (p.head_dim * p.n_heads);
  var pair: u32;
  var first: bool;
  var other: u32;
  if (p.neox != 0u) {
    pair = d % half;
    first = d < half;
    other = select(i - half, i + half, first);
  } else {
    pair = d / 2u;
    first = (d & 1u) == 0u;
    other = select(i - 1u, i + 1u, first);
  }
  let r = cs[t * half + pair];
  let x0 = select(x[other], x[i], first);
  let x1 = select(x[i], x[other], first);
  // As ggml compiles x0 c - x1 s and x0 s + x1 c (and the CPU backend computes them): the product
  // of x1 rounded, the one of x0 fused.
  y[i] = select(fma_rn(x0, r.y, x1 * r.x), fma_rn(x0, r.x, -(x1 * r.y)), first);
}

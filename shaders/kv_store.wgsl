// Writes the keys and values of one slot's rows of a step (its segment) into that slot's KV cache
// of one layer, at their positions. An f16 cache holds two values per word, rounded to nearest
// even as ggml does.
#include "half"
#include "segment"

struct Params {
  kv_width: u32,
  zero: u32,
}

@group(0) @binding(0) var<storage, read> k: array<f32>;
@group(0) @binding(1) var<storage, read> v: array<f32>;
@group(0) @binding(2) var<storage, read> positions: array<i32>;
@group(0) @binding(3) var<storage, read_write> kc: array<u32>;
@group(0) @binding(4) var<storage, read_write> vc: array<u32>;
@group(0) @binding(5) var<storage, read> seg: Segment;
@group(0) @binding(6) var<uniform> p: Params;

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  let i = gid.x + gid.y * nwg.x * WG;
  if (KV_F16) {
    let words = p.kv_width / 2u;
    if (i >= seg.n_rows * words) { return; }
    let t = seg.row0 + i / words;
    let e = 2u * (i % words);
    let dst = u32(positions[t]) * words + e / 2u;
    let src = t * p.kv_width + e;
    kc[dst] = f32_to_f16(k[src]) | (f32_to_f16(k[src + 1u]) << 16u);
    vc[dst] = f32_to_f16(v[src]) | (f32_to_f16(v[src + 1u]) << 16u);
  } else {
    if (i >= seg.n_rows * p.kv_width) { return; }
    let t = seg.row0 + i / p.kv_width;
    let dst = u32(positions[t]) * p.kv_width + i % p.kv_width;
    let src = seg.row0 * p.kv_width + i;
    kc[dst] = bitcast<u32>(k[src]);
    vc[dst] = bitcast<u32>(v[src]);
  }
}

// Greedy sampling on the GPU: the index of the largest value of one row, lowest index on ties, NaN
// never winning (src/sampling/greedy.ts). One workgroup; only the index is read back.
#if SUBGROUPS
enable subgroups;
#endif
#include "ids"

struct Params {
  n: u32,
  offset: u32,
  neg_inf: f32, // -Infinity, which WGSL cannot write as a constant
}

@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read_write> result: array<u32>;
@group(0) @binding(2) var<uniform> p: Params;

const NONE: u32 = 0xffffffffu;

var<workgroup> best_v: array<f32, WG>;
var<workgroup> best_i: array<u32, WG>;

fn better(v: f32, i: u32, bv: f32, bi: u32) -> bool { return v > bv || (v == bv && i < bi); }

@compute @workgroup_size(WG)
fn main(ids: Ids) {
  init_ids(ids);
  var bv = p.neg_inf;
  var bi = NONE;
  for (var i = lid; i < p.n; i += WG) {
    let v = x[p.offset + i];
    if (v > bv) {
      bv = v;
      bi = i;
    }
  }
#if SUBGROUPS
  let m = subgroupMax(bv);
  let mi = subgroupMin(select(NONE, bi, bv == m));
  if (sg_inv == 0u) {
    best_v[sg_id] = m;
    best_i[sg_id] = mi;
  }
  workgroupBarrier();
  if (lid == 0u) {
    for (var k = 1u; k < n_sg; k++) {
      if (better(best_v[k], best_i[k], best_v[0], best_i[0])) {
        best_v[0] = best_v[k];
        best_i[0] = best_i[k];
      }
    }
  }
#else
  best_v[lid] = bv;
  best_i[lid] = bi;
  workgroupBarrier();
  for (var s = WG / 2u; s > 0u; s >>= 1u) {
    if (lid < s && better(best_v[lid + s], best_i[lid + s], best_v[lid], best_i[lid])) {
      best_v[lid] = best_v[lid + s];
      best_i[lid] = best_i[lid + s];
    }
    workgroupBarrier();
  }
#endif
  if (lid == 0u) { result[0] = select(best_i[0], 0u, best_i[0] == NONE); }
}

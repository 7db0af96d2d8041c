// Softmax in place over the first n values of each row, n = positions[0] + 1: the cache rows a
// decode step's query sees. One workgroup per row.
#if SUBGROUPS
enable subgroups;
#endif
#include "ids"
#include "reduce"

struct Params {
  n_rows: u32,
  stride: u32,
}

@group(0) @binding(0) var<storage, read> positions: array<i32>;
@group(0) @binding(1) var<storage, read_write> x: array<f32>;
@group(0) @binding(2) var<uniform> p: Params;

const LOWEST: f32 = -0x1.fffffep+127f; // -FLT_MAX

@compute @workgroup_size(WG)
fn main(ids: Ids, @builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  init_ids(ids);
  let r = group_index(wg, nwg);
  if (r >= p.n_rows) { return; }
  let n = u32(positions[0]) + 1u;
  let base = r * p.stride;
  var m = LOWEST;
  for (var j = lid; j < n; j += WG) { m = max(m, x[base + j]); }
  m = wg_max(m);
  var s = 0.0;
  for (var j = lid; j < n; j += WG) {
    let e = exp(x[base + j] - m);
    x[base + j] = e;
    s += e;
  }
  let inv = 1.0 / wg_sum(s);
  for (var j = lid; j < n; j += WG) { x[base + j] *= inv; }
}

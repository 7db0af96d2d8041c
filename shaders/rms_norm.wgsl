// RMSNorm per group of `width` values (a row, or a head for Q/K norm): y = x / sqrt(mean(x^2) +
// eps) * weight. One workgroup per group.
#if SUBGROUPS
enable subgroups;
#endif
#include "ids"
#include "reduce"

struct Params {
  width: u32,
  n_groups: u32,
  eps: f32,
}

@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read> weight: array<f32>;
@group(0) @binding(2) var<storage, read_write> y: array<f32>;
@group(0) @binding(3) var<uniform> p: Params;

@compute @workgroup_size(WG)
fn main(ids: Ids, @builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  init_ids(ids);
  let g = group_index(wg, nwg);
  if (g >= p.n_groups) { return; }
  let base = g * p.width;
  var sum = 0.0;
  for (var i = lid; i < p.width; i += WG) { sum += x[base + i] * x[base + i]; }
  let scale = 1.0 / sqrt(wg_sum(sum) / f32(p.width) + p.eps);
  for (var i = lid; i < p.width; i += WG) { y[base + i] = x[base + i] * scale * weight[i]; }
}

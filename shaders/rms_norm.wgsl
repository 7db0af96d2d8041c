// RMSNorm per group of `width` values (a row, or a head for Q/K norm): y = x * scale * weight with
// scale = 1 / sqrt(mean(x^2) + eps) rounded exactly as on the CPU (include/exact-rms.wgsl).
// One workgroup per group.
#if SUBGROUPS
enable subgroups;
#endif
#include "ids"
#include "reduce"
#include "exact-rms"

struct Params {
  width: u32,
  n_groups: u32,
  eps: f32,
}

@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read> weight: array<f32>;
@group(0) @binding(2) var<storage, read_write> y: array<f32>;
@group(0) @binding(3) var<uniform> p: Params;

var<workgroup> scale_sh: f32;

@compute @workgroup_size(WG)
fn main(ids: Ids, @builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  init_ids(ids);
  let g = group_index(wg, nwg);
  if (g >= p.n_groups) { return; }
  let base = g * p.width;
  var largest = 0.0;
  for (var i = lid; i < p.width; i += WG) { largest = max(largest, x[base + i] * x[base + i]); }
  let e_max = max(1u, bitcast<u32>(wg_max(largest)) >> 23u);
  var acc = vec4<u32>(0u);
  for (var i = lid; i < p.width; i += WG) { add_square(&acc, x[base + i] * x[base + i], e_max); }
  let lanes = wg_sum_u4(acc);
  // The scale's exact rounding is serial work: one invocation does it for the group.
  if (lid == 0u) { scale_sh = rms_scale(lanes, e_max, p.width, p.eps); }
  let scale = workgroupUniformLoad(&scale_sh);
  for (var i = lid; i < p.width; i += WG) { y[base + i] = x[base + i] * scale * weight[i]; }
}

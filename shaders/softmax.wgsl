// Decode attention, second pass: softmax in place over the first n values of each row, n =
// positions[seg.row0] + 1 (the cache rows the segment's one query sees), in the CPU backend's order
// (include/attend.wgsl). One workgroup per row; invocation i takes positions 8i .. 8i + 7, then
// 8 (i + WG) .., and the same ones in every pass.
#if SUBGROUPS
enable subgroups;
#endif
#include "ids"
#include "reduce"
#include "softmax-total"
#include "segment"

struct Params {
  n_rows: u32,
  stride: u32,
  zero: u32,
}

@group(0) @binding(0) var<storage, read> positions: array<i32>;
@group(0) @binding(1) var<storage, read_write> x: array<f32>;
@group(0) @binding(2) var<storage, read> seg: Segment;
@group(0) @binding(3) var<uniform> p: Params;

const LOWEST: f32 = -0x1.fffffep+127f; // -FLT_MAX


@compute @workgroup_size(WG)
fn main(ids: Ids, @builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  init_ids(ids);
  let r = group_index(wg, nwg);
  if (r >= p.n_rows) { return; }
  let n = u32(positions[seg.row0]) + 1u;
  let base = r * p.stride;
  var m = LOWEST;
  for (var j = lid; j < n; j += WG) { m = max(m, x[base + j]); }
  m = wg_max(m);
  var sum = vec2<f32>(0.0);
  for (var j = 8u * lid; j < n; j += 8u * WG) {
    var e: array<f32, 8>;
    for (var i = 0u; i < 8u; i++) {
      if (j + i < n) {
        e[i] = exp_ggml(x[base + j + i] - m);
        x[base + j + i] = e[i];
      } else {
        e[i] = 0.0;
      }
    }
    sum = add_eight(sum, vec4<f32>(e[0], e[1], e[2], e[3]), vec4<f32>(e[4], e[5], e[6], e[7]));
  }
  let inv = wg_recip_sum(sum);
  for (var j = 8u * lid; j < n; j += 8u * WG) {
    for (var i = 0u; i < 8u && j + i < n; i++) { x[base + j + i] *= inv; }
  }
}

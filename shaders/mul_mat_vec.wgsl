// y[t, r] = W[r] . x[t] for a few tokens (decode): one workgroup per (row, token), its invocations
// splitting the row's units, then one workgroup sum. Weights stay in their GGML blocks; quantized
// types read activations quantized by quantize_q8_0 / quantize_q8_k and use integer dot products.
#if F16
enable f16;
#endif
#if SUBGROUPS
enable subgroups;
#endif
#include "ids"
#include "reduce"
#include "weights"
#include "act"
#include "mat-io"

@compute @workgroup_size(WG)
fn main(ids: Ids, @builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  init_ids(ids);
  let g = group_index(wg, nwg);
  if (g >= p.rows * p.n_tokens) { return; }
  let r = g % p.rows;
  let t = g / p.rows;
  let row = r * p.row_bytes;
  var acc = 0.0;
  if (IS_FLOAT) {
    for (var c = 4u * lid; c < p.cols; c += 4u * WG) { acc += dot(weight_vec4(row, c, p.cols), act_vec4(t, c, p.cols)); }
  } else {
    for (var u = lid; u < p.units; u += WG) { acc += unit_dot(weight_unit(row, u), act_unit(t, u, p.units, p.a_d, p.a_s)); }
  }
  let s = wg_sum(acc);
  if (lid == 0u) { y[t * p.out_cols + p.out_offset + r] = s; }
}

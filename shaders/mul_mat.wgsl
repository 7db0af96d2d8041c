// y[t, r] = W[r] . x[t] for many tokens (prefill): each invocation keeps a 4 x 4 tile of (rows,
// tokens) in registers and walks the whole row, so every weight unit it decodes serves 4 tokens and
// every activation unit 4 rows. No workgroup memory and no barriers (barriers are what software
// rasterizers pay most for); neighbouring invocations share cache lines instead.
#if F16
enable f16;
#endif
#include "ids"
#include "weights"
#include "act"
#include "mat-io"

const SIDE: u32 = 8u; // invocations per side: WG = SIDE * SIDE; each one computes 4 rows x 4 tokens

fn store(r: u32, t: u32, v: f32) {
  if (r < p.rows && t < p.n_tokens) { y[t * p.out_cols + p.out_offset + r] = v; }
}

// Written out for the 4 x 4 tile rather than with indexed private arrays, which compilers may put
// in memory.
@compute @workgroup_size(WG)
fn main(ids: Ids, @builtin(workgroup_id) wg: vec3<u32>) {
  init_ids(ids);
  let r = wg.x * SIDE * 4u + lid % SIDE;
  let t = wg.y * SIDE * 4u + lid / SIDE;
  let last_row = p.rows - 1u;
  let last_tok = p.n_tokens - 1u;
  let w0 = min(r, last_row) * p.row_bytes;
  let w1 = min(r + SIDE, last_row) * p.row_bytes;
  let w2 = min(r + 2u * SIDE, last_row) * p.row_bytes;
  let w3 = min(r + 3u * SIDE, last_row) * p.row_bytes;
  let t0 = min(t, last_tok);
  let t1 = min(t + SIDE, last_tok);
  let t2 = min(t + 2u * SIDE, last_tok);
  let t3 = min(t + 3u * SIDE, last_tok);
  // acc_i: weight row i of the tile, one component per token.
  var acc0 = vec4<f32>(0.0);
  var acc1 = vec4<f32>(0.0);
  var acc2 = vec4<f32>(0.0);
  var acc3 = vec4<f32>(0.0);
  if (IS_FLOAT) {
    for (var c = 0u; c < p.cols; c += 4u) {
      let x = mat4x4<f32>(act_vec4(t0, c, p.cols), act_vec4(t1, c, p.cols), act_vec4(t2, c, p.cols), act_vec4(t3, c, p.cols));
      acc0 += weight_vec4(w0, c, p.cols) * x;
      acc1 += weight_vec4(w1, c, p.cols) * x;
      acc2 += weight_vec4(w2, c, p.cols) * x;
      acc3 += weight_vec4(w3, c, p.cols) * x;
    }
  } else {
    for (var u = 0u; u < p.units; u++) {
      let x0 = act_unit(t0, u, p.units, p.a_d, p.a_s);
      let x1 = act_unit(t1, u, p.units, p.a_d, p.a_s);
      let x2 = act_unit(t2, u, p.units, p.a_d, p.a_s);
      let x3 = act_unit(t3, u, p.units, p.a_d, p.a_s);
      let q0 = weight_unit(w0, u);
      acc0 += vec4<f32>(unit_dot(q0, x0), unit_dot(q0, x1), unit_dot(q0, x2), unit_dot(q0, x3));
      let q1 = weight_unit(w1, u);
      acc1 += vec4<f32>(unit_dot(q1, x0), unit_dot(q1, x1), unit_dot(q1, x2), unit_dot(q1, x3));
      let q2 = weight_unit(w2, u);
      acc2 += vec4<f32>(unit_dot(q2, x0), unit_dot(q2, x1), unit_dot(q2, x2), unit_dot(q2, x3));
      let q3 = weight_unit(w3, u);
      acc3 += vec4<f32>(unit_dot(q3, x0), unit_dot(q3, x1), unit_dot(q3, x2), unit_dot(q3, x3));
    }
  }
  for (var j = 0u; j < 4u; j++) {
    let tj = t + j * SIDE;
    store(r, tj, acc0[j]);
    store(r + SIDE, tj, acc1[j]);
    store(r + 2u * SIDE, tj, acc2[j]);
    store(r + 3u * SIDE, tj, acc3[j]);
  }
}

// y[t, r] = W[r] . x[t] for many tokens (prefill), each product summed as the CPU backend sums it
// (native/cpu, llama.cpp's AVX2 order), so that both backends round alike: float and Q8_0 weights
// in eight FMA lanes (include/lanes.wgsl); Q4_0 in one FMA chain over its blocks' integer sums;
// K-quants in eight lanes of each super-block's integer sums, plus their mins' term. Each invocation
// keeps a tile of TR rows x TT tokens in registers and walks the whole row, so every weight unit it
// decodes serves TT tokens and every activation unit TR rows. No workgroup memory and no barriers
// (barriers are what software rasterizers pay most for); neighbouring invocations share cache lines.
#if F16
enable f16;
#endif
#include "ids"
#include "weights"
#include "act"
#include "mat-io"
#include "lanes"
#include "fma"

const SIDE: u32 = 8u; // invocations per side: WG = SIDE * SIDE
const N: u32 = TR * TT;

@compute @workgroup_size(WG)
fn main(ids: Ids, @builtin(workgroup_id) wg: vec3<u32>) {
  init_ids(ids);
  let r0 = wg.x * SIDE * TR + lid % SIDE;
  let t0 = wg.y * SIDE * TT + lid / SIDE;
  // Rows and tokens past the edge compute the last one again and store nothing.
  var w: array<u32, TR>;
  var tk: array<u32, TT>;
  for (var i = 0u; i < TR; i++) { w[i] = min(r0 + i * SIDE, p.rows - 1u) * p.row_bytes; }
  for (var j = 0u; j < TT; j++) { tk[j] = min(t0 + j * SIDE, p.n_tokens - 1u); }
  // Output (i, j) is k = i * TT + j: its lanes 0-3 in lo[k], 4-7 in hi[k]; Q4_0's chain and Q5_K's
  // mins in one[k], Q4_K's mins (four lanes) in mins[k].
  var lo: array<vec4<f32>, N>;
  var hi: array<vec4<f32>, N>;
  var one: array<f32, N>;
  var mins: array<vec4<f32>, N>;
  if (IS_FLOAT) {
    // FLOAT_LANES 16 (F16 where the CPU has AVX-512): lanes 8-15 in lo2[k], hi2[k], added to lanes
    // 0-7 before the hsum, as the CPU's hsum16 does.
    var lo2: array<vec4<f32>, N>;
    var hi2: array<vec4<f32>, N>;
    let full = p.cols - p.cols % FLOAT_LANES;
    for (var c = 0u; c < full; c += FLOAT_LANES) {
      var x: array<vec4<f32>, 4u * TT>;
      for (var j = 0u; j < TT; j++) {
        for (var q = 0u; q < FLOAT_LANES / 4u; q++) { x[4u * j + q] = act_vec4(tk[j], c + 4u * q, p.cols); }
      }
      for (var i = 0u; i < TR; i++) {
        let w0 = weight_vec4(w[i], c, p.cols);
        let w1 = weight_vec4(w[i], c + 4u, p.cols);
        for (var j = 0u; j < TT; j++) {
          lo[i * TT + j] = float_fma4(w0, x[4u * j], lo[i * TT + j]);
          hi[i * TT + j] = float_fma4(w1, x[4u * j + 1u], hi[i * TT + j]);
        }
        if (FLOAT_LANES == 16u) {
          let w2 = weight_vec4(w[i], c + 8u, p.cols);
          let w3 = weight_vec4(w[i], c + 12u, p.cols);
          for (var j = 0u; j < TT; j++) {
            lo2[i * TT + j] = float_fma4(w2, x[4u * j + 2u], lo2[i * TT + j]);
            hi2[i * TT + j] = float_fma4(w3, x[4u * j + 3u], hi2[i * TT + j]);
          }
        }
      }
    }
    for (var i = 0u; i < TR; i++) {
      for (var j = 0u; j < TT; j++) {
        let k = i * TT + j;
        var s = hsum8(lo[k] + lo2[k], hi[k] + hi2[k]);
        for (var c = full; c < p.cols; c++) { s += tail_product(weight_value(w[i], c), act_value(tk[j], c, p.cols)); }
        one[k] = s;
      }
    }
  } else {
    for (var b = 0u; b < p.units; b += UNITS_PER_BLOCK) {
      // The block's integer sums: per lane (il, ih), whole (Q4_0), and the mins' (im: Q4_K by
      // pairs of units, as four lanes; Q5_K whole in im.x). Zeroed explicitly: on lavapipe a `var`
      // declared in a loop without an initializer kept its value from the previous iteration.
      var il = array<vec4<i32>, N>();
      var ih = array<vec4<i32>, N>();
      var whole = array<i32, N>();
      var im = array<vec4<i32>, N>();
      var wd: array<vec2<f32>, TR>;
      var ad: array<f32, TT>;
      for (var u = b; u < b + UNITS_PER_BLOCK; u++) {
        var au: array<AUnit, TT>;
        for (var j = 0u; j < TT; j++) { au[j] = act_unit(tk[j], u, p.units, p.a_d, p.a_s); }
        for (var i = 0u; i < TR; i++) {
          let wu = weight_unit(w[i], u);
          wd[i] = vec2<f32>(wu.d, wu.dmin);
          for (var j = 0u; j < TT; j++) {
            let k = i * TT + j;
            if (DTYPE == T_Q4_0) {
              whole[k] = unit_isum(wu, au[j]);
            } else {
              il[k] += unit_lanes_lo(wu, au[j]);
              ih[k] += unit_lanes_hi(wu, au[j]);
            }
            if (DTYPE == T_Q4_K) { im[k] += select(vec4<i32>(0), vec4<i32>(wu.mi * au[j].s), vec4<u32>(0u, 1u, 2u, 3u) == vec4<u32>((u % 8u) / 2u)); }
            if (DTYPE == T_Q5_K) { im[k].x += wu.mi * au[j].s; }
            if (DTYPE == T_Q6_K) {
              // Unit u's offset goes to lane u % 8 (q6k_offset).
              let off = vec4<i32>(q6k_offset(vec2<i32>(wu.s0, wu.s1), au[j].lo, au[j].hi));
              il[k] += select(vec4<i32>(0), off, vec4<u32>(0u, 1u, 2u, 3u) == vec4<u32>(u % 8u));
              ih[k] += select(vec4<i32>(0), off, vec4<u32>(4u, 5u, 6u, 7u) == vec4<u32>(u % 8u));
            }
          }
        }
        for (var j = 0u; j < TT; j++) { ad[j] = au[j].d; }
      }
      for (var i = 0u; i < TR; i++) {
        for (var j = 0u; j < TT; j++) {
          let k = i * TT + j;
          let d = wd[i].x * ad[j];
          if (DTYPE == T_Q4_0) {
            one[k] = fma_rn(f32(whole[k]), d, one[k]);
          } else {
            lo[k] = fma_rn4(vec4<f32>(il[k]), vec4<f32>(d), lo[k]);
            hi[k] = fma_rn4(vec4<f32>(ih[k]), vec4<f32>(d), hi[k]);
          }
          let dm = -ad[j] * wd[i].y;
          if (DTYPE == T_Q4_K) { mins[k] = fma_rn4(vec4<f32>(im[k]), vec4<f32>(dm), mins[k]); }
          if (DTYPE == T_Q5_K) { one[k] = fma_rn(dm, f32(im[k].x), one[k]); }
        }
      }
    }
    if (DTYPE != T_Q4_0) {
      for (var k = 0u; k < N; k++) {
        var s = hsum8(lo[k], hi[k]);
        if (DTYPE == T_Q4_K) { s += hsum4(mins[k]); }
        if (DTYPE == T_Q5_K) { s += one[k]; }
        one[k] = s;
      }
    }
  }
  for (var i = 0u; i < TR; i++) {
    for (var j = 0u; j < TT; j++) {
      let r = r0 + i * SIDE;
      let t = t0 + j * SIDE;
      if (r < p.rows && t < p.n_tokens) { y[t * p.out_cols + p.out_offset + r] = one[i * TT + j]; }
    }
  }
}

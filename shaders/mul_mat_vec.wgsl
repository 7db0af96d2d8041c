// y[t, r] = W[r] . x[t] for a few tokens (decode), summed as mul_mat sums it (the CPU backend's
// order), with the CPU's eight lanes spread over eight invocations of one subgroup: lane l takes
// values 8i + l of a float row, or word l (values 4l .. 4l + 3) of every quantized unit; subgroup
// shuffles then add the lanes in hsum order. Q4_0 has one chain over its blocks: each lane sums
// every eighth block as an integer and the chain runs over the shuffled sums. Needs subgroups of at
// least 8 invocations; without them, decode steps use mul_mat.
enable subgroups;
#if F16
enable f16;
#endif
#include "ids"
#include "weights"
#include "act"
#include "mat-io"
#include "lanes"

// hsum8 (include/lanes.wgsl) of lane l's value in lane 0 of each 8 lanes.
fn lanes_hsum8(v: f32) -> f32 {
  let a = v + subgroupShuffleXor(v, 4u);
  let b = a + subgroupShuffleXor(a, 2u);
  return b + subgroupShuffleXor(b, 1u);
}

// hsum4 of lanes 0-3 in lane 0.
fn lanes_hsum4(v: f32) -> f32 {
  let a = v + subgroupShuffleXor(v, 2u);
  return a + subgroupShuffleXor(a, 1u);
}

@compute @workgroup_size(WG)
fn main(ids: Ids, @builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  init_ids(ids);
  let l = sg_inv % 8u;
  // Every invocation takes part in the shuffles: past the last output, lanes redo the last one.
  let n = p.rows * p.n_tokens;
  let g = group_index(wg, nwg) * (WG / 8u) + sg_id * (sg_size / 8u) + sg_inv / 8u;
  let o = min(g, n - 1u);
  let r = o % p.rows;
  let t = o / p.rows;
  let row = r * p.row_bytes;
  var s: f32;
  if (IS_FLOAT) {
    // With FLOAT_LANES 16, this invocation also holds lane l + 8, added to lane l before the hsum
    // (the CPU's hsum16).
    let full = p.cols - p.cols % FLOAT_LANES;
    var acc = 0.0;
    var acc2 = 0.0;
    for (var c = l; c < full; c += FLOAT_LANES) {
      acc = float_fma(weight_value(row, c), act_value(t, c, p.cols), acc);
      if (FLOAT_LANES == 16u) { acc2 = float_fma(weight_value(row, c + 8u), act_value(t, c + 8u, p.cols), acc2); }
    }
    s = lanes_hsum8(acc + acc2);
    for (var c = full; c < p.cols; c++) { s += tail_product(weight_value(row, c), act_value(t, c, p.cols)); }
  } else if (DTYPE == T_Q4_0) {
    let first = sg_inv - l;
    var acc = 0.0;
    for (var b0 = 0u; b0 < p.units; b0 += 8u) {
      let b = b0 + l;
      var sum = 0.0;
      var d = 0.0;
      if (b < p.units) {
        let wu = weight_unit(row, b);
        let au = act_unit(t, b, p.units, p.a_d, p.a_s);
        sum = f32(unit_isum(wu, au));
        d = wu.d * au.d;
      }
      for (var k = 0u; k < 8u; k++) { acc = fma_rn(subgroupShuffle(sum, first + k), subgroupShuffle(d, first + k), acc); }
    }
    s = acc;
  } else {
    // Eight units a step: a K-quant super-block, whose integer sums meet its scale once, or eight
    // Q8_0 blocks, each with its own FMA (and any last blocks one at a time).
    var acc = 0.0;
    var mins = 0.0;
    let whole = p.units & ~7u;
    for (var b = 0u; b < whole; b += 8u) {
      var sum = 0;
      for (var k = 0u; k < 8u; k++) {
        let u = b + k;
        let q = weight_word(row, u, l);
        let dot = q.s * dot4i8(q.q, a[8u * (t * p.units + u) + l]);
        if (UNITS_PER_BLOCK == 1u) {
          acc = fma_rn(f32(dot), block_scales(row, u).x * bitcast<f32>(a[p.a_d + t * p.units + u]), acc);
        } else {
          sum += dot;
        }
      }
      if (DTYPE == T_Q6_K) {
        let au = act_unit(t, b + l, p.units, p.a_d, p.a_s);
        sum += q6k_offset(q6k_unit_scales(row, b + l), au.lo, au.hi);
      }
      if (UNITS_PER_BLOCK == 8u) {
        let wd = block_scales(row, b);
        let ad = bitcast<f32>(a[p.a_d + t * p.units + b]);
        acc = fma_rn(f32(sum), wd.x * ad, acc);
        let dm = -ad * wd.y;
        if (DTYPE == T_Q4_K) {
          // Lanes 0-3: the mins of units 2l and 2l + 1.
          if (l < 4u) {
            let u = b + 2u * l;
            let m = unit_min(row, u) * bitcast<i32>(a[p.a_s + t * p.units + u]) + unit_min(row, u + 1u) * bitcast<i32>(a[p.a_s + t * p.units + u + 1u]);
            mins = fma_rn(f32(m), dm, mins);
          }
        }
        if (DTYPE == T_Q5_K) {
          var m = 0;
          for (var u = b; u < b + 8u; u++) { m += unit_min(row, u) * bitcast<i32>(a[p.a_s + t * p.units + u]); }
          mins = fma_rn(dm, f32(m), mins);
        }
      }
    }
    for (var u = whole; u < p.units; u++) {
      let q = weight_word(row, u, l);
      acc = fma_rn(f32(dot4i8(q.q, a[8u * (t * p.units + u) + l])), block_scales(row, u).x * bitcast<f32>(a[p.a_d + t * p.units + u]), acc);
    }
    s = lanes_hsum8(acc);
    if (DTYPE == T_Q4_K) { s += lanes_hsum4(mins); }
    if (DTYPE == T_Q5_K) { s += mins; }
  }
  if (g < n && l == 0u) { y[t * p.out_cols + p.out_offset + r] = s; }
}

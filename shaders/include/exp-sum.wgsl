// The softmax's sum and its reciprocal in the CPU backend's order (native/cpu/ops*.cpp, after
// llama.cpp's ggml_vec_soft_max_f32): exps eight positions at a time (zeros past the last one)
// added in hsum order, the eights accumulated in double, here as hi + lo, which holds what the
// double holds to ~2^-48; then 1 / sum rounded once to float.
#include "exp"
#include "lanes"
#include "div"

// The softmax's sum: eight exps at a time (zeros past the last position) added in hsum order, the
// eights accumulated as hi + lo, which holds what the CPU's double holds.
fn add_eight(sum: vec2<f32>, lo: vec4<f32>, hi: vec4<f32>) -> vec2<f32> {
  let s = two_sum(sum.x, hsum8(lo, hi));
  return vec2<f32>(s.x, sum.y + s.y);
}

fn add_sums(a: vec2<f32>, b: vec2<f32>) -> vec2<f32> {
  let s = two_sum(a.x, b.x);
  return vec2<f32>(s.x, s.y + (a.y + b.y));
}

// 1 / (hi + lo) rounded once to float: the reciprocal of hi, corrected by its residual
// 1 - q (hi + lo) (the part 1 - q hi is exact in one FMA).
fn recip_sum(s: vec2<f32>) -> f32 {
  let n = fast_two_sum(s.x, s.y);
  let q = div_rn(1.0, n.x);
  let r = fma_rn(-q, n.x, 1.0) - q * n.y;
  return fma_rn(r, q, q);
}

// The softmax's sum over a workgroup and its reciprocal: each invocation brings the hi + lo sum of
// its eights (include/exp-sum.wgsl), the first adds them in invocation order (hi + lo holds the
// CPU's double sum whatever the order) and rounds 1 / total once. Every invocation must call it.
#include "exp-sum"

var<workgroup> sums: array<vec2<f32>, WG>;
var<workgroup> inv_sh: f32;

fn wg_recip_sum(sum: vec2<f32>) -> f32 {
  sums[lid] = sum;
  workgroupBarrier();
  if (lid == 0u) {
    var total = sums[0];
    for (var i = 1u; i < WG; i++) { total = add_sums(total, sums[i]); }
    inv_sh = recip_sum(total);
  }
  return workgroupUniformLoad(&inv_sh);
}

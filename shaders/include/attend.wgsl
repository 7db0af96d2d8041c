// Attention in the CPU backend's order (native/cpu/ops*.cpp, llama.cpp's): q . k as
// ggml_vec_dot_f32; the softmax's exps from ggml's expf, summed eight positions at a time in float
// and the eights in double (float-float here, include/exp.wgsl), its reciprocal rounded once; the
// weighted values in eight FMA lanes, position j feeding lane j % 8. The including shader defines
// q_at(i), element i of the head's query.
#include "kv"
#include "exp-sum"

fn k4(i: u32) -> vec4<f32> { return vec4<f32>(k_at(i), k_at(i + 1u), k_at(i + 2u), k_at(i + 3u)); }
fn q4(i: u32) -> vec4<f32> { return vec4<f32>(q_at(i), q_at(i + 1u), q_at(i + 2u), q_at(i + 3u)); }

// q . k for the key at cache index `base`: four 8-lane FMA accumulators over steps of 32 values,
// folded as GGML_F32x8_REDUCE, then the rest one FMA at a time.
fn qk_dot(base: u32, head_dim: u32) -> f32 {
  let np = head_dim & ~31u;
  var a0l = vec4<f32>(0.0);
  var a0h = vec4<f32>(0.0);
  var a1l = vec4<f32>(0.0);
  var a1h = vec4<f32>(0.0);
  var a2l = vec4<f32>(0.0);
  var a2h = vec4<f32>(0.0);
  var a3l = vec4<f32>(0.0);
  var a3h = vec4<f32>(0.0);
  for (var i = 0u; i < np; i += 32u) {
    a0l = fma_rn4(k4(base + i), q4(i), a0l);
    a0h = fma_rn4(k4(base + i + 4u), q4(i + 4u), a0h);
    a1l = fma_rn4(k4(base + i + 8u), q4(i + 8u), a1l);
    a1h = fma_rn4(k4(base + i + 12u), q4(i + 12u), a1h);
    a2l = fma_rn4(k4(base + i + 16u), q4(i + 16u), a2l);
    a2h = fma_rn4(k4(base + i + 20u), q4(i + 20u), a2h);
    a3l = fma_rn4(k4(base + i + 24u), q4(i + 24u), a3l);
    a3h = fma_rn4(k4(base + i + 28u), q4(i + 28u), a3h);
  }
  let t = ((a0l + a2l) + (a1l + a3l)) + ((a0h + a2h) + (a1h + a3h));
  var sum = (t.x + t.y) + (t.z + t.w);
  for (var i = np; i < head_dim; i++) { sum = fma_rn(k_at(base + i), q_at(i), sum); }
  return sum;
}

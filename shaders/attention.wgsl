// Causal GQA attention of a prefill step over the KV cache, fused: one workgroup per (token, head)
// walks the cache rows 0..position in chunks of WG with an online softmax (running max and sum),
// so no score matrix is stored. Query head h reads KV head h / (n_heads / n_kv_heads).
#if F16
enable f16;
#endif
#if SUBGROUPS
enable subgroups;
#endif
#include "ids"
#include "reduce"
#include "kv"

struct Params {
  n_heads: u32,
  n_kv_heads: u32,
  head_dim: u32,
  n_tokens: u32,
  scale: f32,
}

@group(0) @binding(0) var<storage, read> q: array<f32>;
// kc, vc: bindings 1 and 2 (include/kv.wgsl)
@group(0) @binding(3) var<storage, read> positions: array<i32>;
@group(0) @binding(4) var<storage, read_write> y: array<f32>;
@group(0) @binding(5) var<uniform> p: Params;

const DIMS_PER_INVOCATION: u32 = MAX_HEAD_DIM / WG;
const LOWEST: f32 = -0x1.fffffep+127f; // -FLT_MAX

var<workgroup> q_sh: array<f32, MAX_HEAD_DIM>;
var<workgroup> p_sh: array<f32, WG>;
var<workgroup> n_sh: u32;

@compute @workgroup_size(WG)
fn main(ids: Ids, @builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  init_ids(ids);
  let g = group_index(wg, nwg);
  if (g >= p.n_tokens * p.n_heads) { return; }
  let t = g / p.n_heads;
  let h = g % p.n_heads;
  let kv_width = p.n_kv_heads * p.head_dim;
  let kv_off = (h / (p.n_heads / p.n_kv_heads)) * p.head_dim;
  let q_off = g * p.head_dim;
  for (var d = lid; d < p.head_dim; d += WG) { q_sh[d] = q[q_off + d]; }
  if (lid == 0u) { n_sh = u32(positions[t]) + 1u; }
  let n = workgroupUniformLoad(&n_sh);

  var m = LOWEST;
  var l = 0.0;
  var acc: array<f32, DIMS_PER_INVOCATION>;
  for (var j0 = 0u; j0 < n; j0 += WG) {
    let j = j0 + lid;
    var s = LOWEST;
    if (j < n) {
      var dot = 0.0;
      for (var d = 0u; d < p.head_dim; d++) { dot += q_sh[d] * k_at(j * kv_width + kv_off + d); }
      s = dot * p.scale;
    }
    let m_new = max(m, wg_max(s));
    let pj = select(0.0, exp(s - m_new), j < n);
    p_sh[lid] = pj;
    let alpha = exp(m - m_new);
    l = l * alpha + wg_sum(pj);
    workgroupBarrier();
    let count = min(WG, n - j0);
    for (var k = 0u; k < DIMS_PER_INVOCATION; k++) {
      let d = lid + k * WG;
      if (d < p.head_dim) {
        var a = acc[k] * alpha;
        for (var jj = 0u; jj < count; jj++) { a += p_sh[jj] * v_at((j0 + jj) * kv_width + kv_off + d); }
        acc[k] = a;
      }
    }
    m = m_new;
    workgroupBarrier();
  }
  for (var k = 0u; k < DIMS_PER_INVOCATION; k++) {
    let d = lid + k * WG;
    if (d < p.head_dim) { y[q_off + d] = acc[k] / l; }
  }
}

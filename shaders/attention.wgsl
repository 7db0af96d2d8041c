// Causal GQA attention of one slot's rows of a step (its segment) over that slot's KV cache, in the CPU backend's order
// (include/attend.wgsl): one workgroup per (token, head) walks the cache rows 0..position three
// times: for the scores and the largest, for the exps and their sum (each invocation summing every
// WG-th eight positions, the sums then added in invocation order), and, WG positions at a time, for
// the probabilities that weight the values. Up to MAX_KEPT positions the scores, then the exps, are
// kept in workgroup memory; past that each pass computes them again. Query head h reads KV head
// h / (n_heads / n_kv_heads).
#if F16
enable f16;
#endif
#if SUBGROUPS
enable subgroups;
#endif
#include "ids"
#include "reduce"
#include "attend"
#include "softmax-total"
#include "segment"

struct Params {
  n_heads: u32,
  n_kv_heads: u32,
  head_dim: u32,
  scale: f32,
  zero: u32,
}

@group(0) @binding(0) var<storage, read> q: array<f32>;
// kc, vc: bindings 1 and 2 (include/kv.wgsl)
@group(0) @binding(3) var<storage, read> positions: array<i32>;
@group(0) @binding(4) var<storage, read_write> y: array<f32>;
@group(0) @binding(5) var<storage, read> seg: Segment;
@group(0) @binding(6) var<uniform> p: Params;

const DIMS_PER_INVOCATION: u32 = MAX_HEAD_DIM / WG;
// Positions whose score (then exp) workgroup memory keeps: 12 KiB of the 16 KiB WebGPU guarantees.
const MAX_KEPT: u32 = 3072u;
const LOWEST: f32 = -0x1.fffffep+127f; // -FLT_MAX

var<workgroup> q_sh: array<f32, MAX_HEAD_DIM>;
var<workgroup> kept: array<f32, MAX_KEPT>;
var<workgroup> p_sh: array<f32, WG>;
var<workgroup> n_sh: u32;

fn q_at(i: u32) -> f32 { return q_sh[i]; }

var<private> kv_width: u32;
var<private> kv_off: u32;

fn score(j: u32) -> f32 { return qk_dot(j * kv_width + kv_off, p.head_dim) * p.scale; }

@compute @workgroup_size(WG)
fn main(ids: Ids, @builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  init_ids(ids);
  let g = group_index(wg, nwg);
  if (g >= seg.n_rows * p.n_heads) { return; }
  let t = seg.row0 + g / p.n_heads;
  let h = g % p.n_heads;
  kv_width = p.n_kv_heads * p.head_dim;
  kv_off = (h / (p.n_heads / p.n_kv_heads)) * p.head_dim;
  let q_off = (seg.row0 * p.n_heads + g) * p.head_dim;
  for (var d = lid; d < p.head_dim; d += WG) { q_sh[d] = q[q_off + d]; }
  if (lid == 0u) { n_sh = u32(positions[t]) + 1u; }
  let n = workgroupUniformLoad(&n_sh);

  let keep = n <= MAX_KEPT;
  var m = LOWEST;
  for (var j = lid; j < n; j += WG) {
    let sj = score(j);
    if (keep) { kept[j] = sj; }
    m = max(m, sj);
  }
  m = wg_max(m);
  workgroupBarrier();

  var sum = vec2<f32>(0.0);
  for (var j = 8u * lid; j < n; j += 8u * WG) {
    var e: array<f32, 8>;
    for (var i = 0u; i < 8u; i++) {
      e[i] = 0.0;
      if (j + i < n) {
        if (keep) {
          e[i] = exp_ggml(kept[j + i] - m);
          kept[j + i] = e[i];
        } else {
          e[i] = exp_ggml(score(j + i) - m);
        }
      }
    }
    sum = add_eight(sum, vec4<f32>(e[0], e[1], e[2], e[3]), vec4<f32>(e[4], e[5], e[6], e[7]));
  }
  let inv = wg_recip_sum(sum);

  // Dimension lid + k WG: lanes 0-3 in lo[k], 4-7 in hi[k].
  var lo = array<vec4<f32>, DIMS_PER_INVOCATION>();
  var hi = array<vec4<f32>, DIMS_PER_INVOCATION>();
  for (var j0 = 0u; j0 < n; j0 += WG) {
    let j = j0 + lid;
    var e = 0.0;
    if (j < n) {
      if (keep) {
        e = kept[j];
      } else {
        e = exp_ggml(score(j) - m);
      }
    }
    p_sh[lid] = e * inv;
    workgroupBarrier();
    let count = min(WG, n - j0);
    for (var k = 0u; k < DIMS_PER_INVOCATION; k++) {
      let d = lid + k * WG;
      if (d < p.head_dim) {
        for (var jj = 0u; jj < count; jj += 8u) {
          var v: array<f32, 8>;
          for (var l = 0u; l < 8u; l++) {
            v[l] = select(0.0, v_at(min(j0 + jj + l, n - 1u) * kv_width + kv_off + d), jj + l < count);
          }
          lo[k] = fma_rn4(vec4<f32>(v[0], v[1], v[2], v[3]), vec4<f32>(p_sh[jj], p_sh[jj + 1u], p_sh[jj + 2u], p_sh[jj + 3u]), lo[k]);
          hi[k] = fma_rn4(vec4<f32>(v[4], v[5], v[6], v[7]), vec4<f32>(p_sh[jj + 4u], p_sh[jj + 5u], p_sh[jj + 6u], p_sh[jj + 7u]), hi[k]);
        }
      }
    }
    workgroupBarrier();
  }
  for (var k = 0u; k < DIMS_PER_INVOCATION; k++) {
    let d = lid + k * WG;
    if (d < p.head_dim) { y[q_off + d] = hsum8(lo[k], hi[k]); }
  }
}

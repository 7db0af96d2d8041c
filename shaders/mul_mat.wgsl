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

struct Params {
  cols: u32,
  rows: u32,
  row_bytes: u32,
  n_tokens: u32,
  units: u32,
  a_d: u32,
  a_s: u32,
  out_cols: u32,
  out_offset: u32,
}

@group(0) @binding(0) var<storage, read> w: array<u32>;
@group(0) @binding(1) var<storage, read> a: array<u32>;
@group(0) @binding(2) var<storage, read_write> y: array<f32>;
#if F16
@group(0) @binding(3) var<storage, read> wh: array<vec4<f16>>;
#endif
@group(0) @binding(4) var<uniform> p: Params;

const TILE: u32 = 4u;
const SIDE: u32 = 8u; // invocations per side: WG = SIDE * SIDE

@compute @workgroup_size(WG)
fn main(ids: Ids, @builtin(workgroup_id) wg: vec3<u32>) {
  init_ids(ids);
  var rows: array<u32, TILE>;
  var toks: array<u32, TILE>;
  for (var i = 0u; i < TILE; i++) {
    rows[i] = min(wg.x * SIDE * TILE + i * SIDE + lid % SIDE, p.rows - 1u) * p.row_bytes;
    toks[i] = min(wg.y * SIDE * TILE + i * SIDE + lid / SIDE, p.n_tokens - 1u);
  }
  var acc: array<array<f32, TILE>, TILE>;
  if (IS_FLOAT) {
    for (var c = 0u; c < p.cols; c += 4u) {
      var x: array<vec4<f32>, TILE>;
      for (var j = 0u; j < TILE; j++) { x[j] = act_vec4(toks[j], c, p.cols); }
      for (var i = 0u; i < TILE; i++) {
        let wv = weight_vec4(rows[i], c, p.cols);
        for (var j = 0u; j < TILE; j++) { acc[i][j] += dot(wv, x[j]); }
      }
    }
  } else {
    for (var u = 0u; u < p.units; u++) {
      var x: array<AUnit, TILE>;
      for (var j = 0u; j < TILE; j++) { x[j] = act_unit(toks[j], u, p.units, p.a_d, p.a_s); }
      for (var i = 0u; i < TILE; i++) {
        let wu = weight_unit(rows[i], u);
        for (var j = 0u; j < TILE; j++) { acc[i][j] += unit_dot(wu, x[j]); }
      }
    }
  }
  for (var i = 0u; i < TILE; i++) {
    let r = wg.x * SIDE * TILE + i * SIDE + lid % SIDE;
    for (var j = 0u; j < TILE; j++) {
      let t = wg.y * SIDE * TILE + j * SIDE + lid / SIDE;
      if (r < p.rows && t < p.n_tokens) { y[t * p.out_cols + p.out_offset + r] = acc[i][j]; }
    }
  }
}

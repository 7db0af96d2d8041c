// Activations -> Q8_K for the K-quant weights, exactly as ggml's quantize_row_q8_K_ref: the value of
// largest magnitude maps to -127, values round half to even, d = 1 / iscale (divisions exact, as in
// quantize_q8_0). Stored per 32-value unit: the packed values, d repeated, and the unit's sum
// (which K-quant mins multiply). One invocation per 256-value block.
#include "div"

struct Params {
  cols: u32,
  n_blocks: u32, // rows * cols / 256
  a_d: u32,
  a_s: u32,
}

@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read_write> a: array<u32>;
@group(0) @binding(2) var<uniform> p: Params;

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  let b = gid.x + gid.y * nwg.x * WG;
  if (b >= p.n_blocks) { return; }
  let base = 256u * b;
  var amax = 0.0;
  var vmax = 0.0;
  for (var j = 0u; j < 256u; j++) {
    let v = x[base + j];
    if (abs(v) > amax) {
      amax = abs(v);
      vmax = v;
    }
  }
  var iscale = 0.0;
  var d = 0.0;
  if (amax != 0.0) {
    iscale = div_rn(-127.0, vmax);
    d = div_rn(1.0, iscale);
  }
  for (var u = 0u; u < 8u; u++) {
    var sum = 0;
    for (var k = 0u; k < 8u; k++) {
      var word = 0u;
      for (var i = 0u; i < 4u; i++) {
        let q = i32(clamp(round(iscale * x[base + 32u * u + 4u * k + i]), -127.0, 127.0));
        sum += q;
        word |= (bitcast<u32>(q) & 0xffu) << (8u * i);
      }
      a[8u * (8u * b + u) + k] = word;
    }
    a[p.a_d + 8u * b + u] = bitcast<u32>(d);
    a[p.a_s + 8u * b + u] = bitcast<u32>(sum);
  }
}

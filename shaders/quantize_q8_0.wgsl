// Activations -> Q8_0 units for Q8_0 and Q4_0 weights, as the CPU backend quantizes them
// (llama.cpp's x86 activation quantizer): d = amax / 127 kept as fp16, values x * (127 / amax)
// rounded half to even. The divisions are exact (div_rn) so every rounding decision matches.
// One invocation per block.
#include "half"
#include "div"

struct Params {
  cols: u32,
  n_blocks: u32, // rows * cols / 32
  a_d: u32,      // word offsets of the scales and (unused here) sums
  a_s: u32,
}

@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read_write> a: array<u32>;
@group(0) @binding(2) var<uniform> p: Params;

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  let b = gid.x + gid.y * nwg.x * WG;
  if (b >= p.n_blocks) { return; }
  let base = 32u * b;
  var amax = 0.0;
  for (var j = 0u; j < 32u; j++) { amax = max(amax, abs(x[base + j])); }
  var id = 0.0;
  var d = 0.0;
  if (amax != 0.0) {
    id = div_rn(127.0, amax);
    d = div_rn(amax, 127.0);
  }
  for (var k = 0u; k < 8u; k++) {
    var word = 0u;
    for (var i = 0u; i < 4u; i++) {
      let q = i32(round(clamp(x[base + 4u * k + i] * id, -127.0, 127.0)));
      word |= (bitcast<u32>(q) & 0xffu) << (8u * i);
    }
    a[8u * b + k] = word;
  }
  a[p.a_d + b] = bitcast<u32>(f16_to_f32(f32_to_f16(d)));
  a[p.a_s + b] = 0u;
}

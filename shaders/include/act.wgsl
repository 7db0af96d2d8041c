// Activations as the matrix kernels read them from `a` (the including shader's array<u32>
// binding): float rows, or rows quantized by quantize_q8_0 / quantize_q8_k into 32-value units of
// 8 packed int8 words, with per-unit scales at word offset `d_off` and per-unit sums at `s_off`.

struct AUnit {
  q: array<u32, 8>,
  d: f32,
  s: i32,
}

fn act_unit(t: u32, u: u32, units: u32, d_off: u32, s_off: u32) -> AUnit {
  var r: AUnit;
  let i = t * units + u;
  for (var k = 0u; k < 8u; k++) { r.q[k] = a[8u * i + k]; }
  r.d = bitcast<f32>(a[d_off + i]);
  r.s = bitcast<i32>(a[s_off + i]);
  return r;
}

// Values c .. c + 3 of float row t (zero past `cols`).
fn act_vec4(t: u32, c: u32, cols: u32) -> vec4<f32> {
  var v: vec4<f32>;
  for (var i = 0u; i < 4u; i++) {
    if (c + i < cols) { v[i] = bitcast<f32>(a[t * cols + c + i]); }
  }
  return v;
}

fn dot4i8(x: u32, y: u32) -> i32 {
#if DOT4
  return dot4I8Packed(x, y);
#else
  var s = 0;
  for (var k = 0u; k < 32u; k += 8u) { s += extractBits(bitcast<i32>(x), k, 8u) * extractBits(bitcast<i32>(y), k, 8u); }
  return s;
#endif
}

fn unit_dot(wu: QUnit, au: AUnit) -> f32 {
  var lo = 0;
  var hi = 0;
  for (var k = 0u; k < 4u; k++) {
    lo += dot4i8(wu.q[k], au.q[k]);
    hi += dot4i8(wu.q[k + 4u], au.q[k + 4u]);
  }
  return au.d * (wu.d * f32(wu.s0 * lo + wu.s1 * hi) - wu.m * f32(au.s));
}

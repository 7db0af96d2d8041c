// Activations as the matrix kernels read them from `a` (the including shader's array<u32>
// binding): float rows, or rows quantized by quantize_q8_0 / quantize_q8_k into 32-value units of
// 8 packed int8 words, with per-unit scales at word offset `d_off` and per-unit sums at `s_off`.

struct AUnit {
  lo: vec4<u32>,
  hi: vec4<u32>,
  d: f32,
  s: i32,
}

fn act_unit(t: u32, u: u32, units: u32, d_off: u32, s_off: u32) -> AUnit {
  let i = t * units + u;
  let q = 8u * i;
  return AUnit(vec4<u32>(a[q], a[q + 1u], a[q + 2u], a[q + 3u]), vec4<u32>(a[q + 4u], a[q + 5u], a[q + 6u], a[q + 7u]),
               bitcast<f32>(a[d_off + i]), bitcast<i32>(a[s_off + i]));
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

fn dot16(x: vec4<u32>, y: vec4<u32>) -> i32 { return dot4i8(x.x, y.x) + dot4i8(x.y, y.y) + dot4i8(x.z, y.z) + dot4i8(x.w, y.w); }

fn unit_dot(wu: QUnit, au: AUnit) -> f32 {
  return au.d * (wu.d * f32(wu.s0 * dot16(wu.lo, au.lo) + wu.s1 * dot16(wu.hi, au.hi)) - wu.m * f32(au.s));
}

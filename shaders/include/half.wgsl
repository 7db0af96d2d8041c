// Exact conversions between f32 and the 16-bit float formats, by bits: the rounding of WGSL's own
// f32 -> f16 conversion is implementation-defined, and f16 subnormals may be flushed by hardware.
// These match ggml (native/common/quant-blocks.h) bit for bit.

fn f16_to_f32(h: u32) -> f32 {
  let sign = (h & 0x8000u) << 16u;
  let e = (h >> 10u) & 0x1fu;
  let m = h & 0x3ffu;
  if (e == 0u) {
    let v = f32(m) * 5.9604644775390625e-8; // m * 2^-24
    return select(v, -v, sign != 0u);
  }
  if (e == 31u) { return bitcast<f32>(sign | 0x7f800000u | (m << 13u)); }
  return bitcast<f32>(sign | ((e + 112u) << 23u) | (m << 13u));
}

// Round to nearest even (ggml's GGML_FP32_TO_FP16).
fn f32_to_f16(x: f32) -> u32 {
  let u = bitcast<u32>(x);
  let sign = (u >> 16u) & 0x8000u;
  let a = u & 0x7fffffffu;
  if (a >= 0x7f800000u) { return sign | 0x7c00u | select(0u, 0x200u, a > 0x7f800000u); }
  if (a >= 0x477ff000u) { return sign | 0x7c00u; }
  if (a < 0x38800000u) {
    if (a < 0x33000000u) { return sign; }
    let e = a >> 23u;
    let m = (a & 0x7fffffu) | 0x800000u;
    let shift = 126u - e;
    var r = m >> shift;
    let rem = m & ((1u << shift) - 1u);
    let half = 1u << (shift - 1u);
    if (rem > half || (rem == half && (r & 1u) != 0u)) { r += 1u; }
    return sign | r;
  }
  var r = (a - 0x38000000u) >> 13u;
  let rem = a & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (r & 1u) != 0u)) { r += 1u; }
  return sign | r;
}

fn bf16_to_f32(h: u32) -> f32 { return bitcast<f32>(h << 16u); }

// Round to nearest even; NaN stays a quiet NaN (ggml_compute_fp32_to_bf16).
fn f32_to_bf16(x: f32) -> u32 {
  let u = bitcast<u32>(x);
  if ((u & 0x7fffffffu) > 0x7f800000u) { return ((u >> 16u) | 64u) & 0xffffu; }
  return ((u + (0x7fffu + ((u >> 16u) & 1u))) >> 16u) & 0xffffu;
}

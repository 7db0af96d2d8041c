// Activations as the matrix kernels read them from `a` (the including shader's array<u32>
// binding): float rows, or rows quantized by quantize_q8_0 / quantize_q8_k into 32-value units of
// 8 packed int8 words, with per-unit scales at word offset `d_off` and per-unit sums at `s_off`.
#include "fma"

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

// The eight lanes' integer sums of a unit (lane l: values 4l .. 4l + 3), each times its half's scale.
fn unit_lanes_lo(wu: QUnit, au: AUnit) -> vec4<i32> {
  return wu.s0 * vec4<i32>(dot4i8(wu.lo.x, au.lo.x), dot4i8(wu.lo.y, au.lo.y), dot4i8(wu.lo.z, au.lo.z), dot4i8(wu.lo.w, au.lo.w));
}

fn unit_lanes_hi(wu: QUnit, au: AUnit) -> vec4<i32> {
  return wu.s1 * vec4<i32>(dot4i8(wu.hi.x, au.hi.x), dot4i8(wu.hi.y, au.hi.y), dot4i8(wu.hi.z, au.hi.z), dot4i8(wu.hi.w, au.hi.w));
}

fn dot16(x: vec4<u32>, y: vec4<u32>) -> i32 { return dot4i8(x.x, y.x) + dot4i8(x.y, y.y) + dot4i8(x.z, y.z) + dot4i8(x.w, y.w); }

// Q6_K's offset of 32 for lane u % 8 of a block (the CPU's q6KOffsetLanes): -32 times unit u's two
// half scales times its activation halves' sums (a Q8_K block's sums of 16). Its values are
// summed as 0..63; this is added once per block to the lane that unit's position names.
fn q6k_offset(scales: vec2<i32>, lo: vec4<u32>, hi: vec4<u32>) -> i32 {
  let ones = vec4<u32>(0x01010101u);
  return -32 * (scales.x * dot16(ones, lo) + scales.y * dot16(ones, hi));
}

// A Q4_0 unit's whole integer sum.
fn unit_isum(wu: QUnit, au: AUnit) -> i32 { return dot16(wu.lo, au.lo) + dot16(wu.hi, au.hi); }

// Value c of float row t.
fn act_value(t: u32, c: u32, cols: u32) -> f32 { return bitcast<f32>(a[t * cols + c]); }

// One lane step of a float product, w * x + acc rounded once: F16 and BF16 values (and activations
// rounded to them) have products exact in f32, so only F32 weights need fma_rn (include/fma.wgsl).
fn float_fma4(w: vec4<f32>, x: vec4<f32>, acc: vec4<f32>) -> vec4<f32> {
  if (DTYPE == T_F32) { return fma_rn4(w, x, acc); }
  return acc + w * x;
}

fn float_fma(w: f32, x: f32, acc: f32) -> f32 {
  if (DTYPE == T_F32) { return fma_rn(w, x, acc); }
  return acc + w * x;
}

// The CPU adds the last cols % 8 products of a float row one at a time, each rounded (not fused):
// opaque() keeps a compiler from fusing it into the sum.
fn tail_product(w: f32, x: f32) -> f32 { return opaque(w * x); }

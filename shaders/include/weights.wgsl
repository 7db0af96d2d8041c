// Reads GGML weight blocks in place from `w` (the including shader's array<u32> binding). WGSL has
// no 8- or 16-bit loads and Q8_0/Q4_0/Q6_K blocks (34/18/210 bytes) start at any even byte, so
// everything goes through 32-bit word reads and shifts. Block offsets (Q8_0_QS, ...) come from
// src/backend/webgpu/block-layouts.ts.
#include "half"

// The 4 bytes at an even byte offset.
fn load_u32_at(byte: u32) -> u32 {
  let i = byte >> 2u;
  if ((byte & 2u) == 0u) { return w[i]; }
  return (w[i] >> 16u) | (w[i + 1u] << 16u);
}

fn load_u16_at(byte: u32) -> u32 { return (w[byte >> 2u] >> ((byte & 2u) * 8u)) & 0xffffu; }

fn load_u8_at(byte: u32) -> u32 { return (w[byte >> 2u] >> ((byte & 3u) * 8u)) & 0xffu; }

fn load_i8_at(byte: u32) -> i32 { return (i32(load_u8_at(byte)) << 24u) >> 24u; }

fn load_f16_at(byte: u32) -> f32 { return f16_to_f32(load_u16_at(byte)); }

// Sub-block j's 6-bit scale and min of a Q4_K/Q5_K block (ggml's get_scale_min_k4).
fn scale_min_k4(block: u32, j: u32) -> vec2<u32> {
  let s = block + Q4_K_SCALES;
  if (j < 4u) { return vec2<u32>(load_u8_at(s + j) & 63u, load_u8_at(s + j + 4u) & 63u); }
  let hi = load_u8_at(s + j + 4u);
  return vec2<u32>((hi & 0x0fu) | ((load_u8_at(s + j - 4u) >> 6u) << 4u), (hi >> 4u) | ((load_u8_at(s + j) >> 6u) << 4u));
}

// ---- One value: value c of the row starting at byte `row` (get_rows).

fn weight_value(row: u32, c: u32) -> f32 {
  if (DTYPE == T_F32) { return bitcast<f32>(w[(row >> 2u) + c]); }
  if (DTYPE == T_F16) { return f16_to_f32(load_u16_at(row + 2u * c)); }
  if (DTYPE == T_BF16) { return bf16_to_f32(load_u16_at(row + 2u * c)); }
  let j = c % 32u;
  if (DTYPE == T_Q8_0) {
    let b = row + (c / 32u) * Q8_0_BYTES;
    return f32(load_i8_at(b + Q8_0_QS + j)) * load_f16_at(b + Q8_0_D);
  }
  if (DTYPE == T_Q4_0) {
    let b = row + (c / 32u) * Q4_0_BYTES;
    let byte = load_u8_at(b + Q4_0_QS + j % 16u);
    let nib = select(byte & 15u, byte >> 4u, j >= 16u);
    return f32(i32(nib) - 8) * load_f16_at(b + Q4_0_D);
  }
  let i = c % 256u;
  if (DTYPE == T_Q4_K || DTYPE == T_Q5_K) {
    let b = row + (c / 256u) * select(Q5_K_BYTES, Q4_K_BYTES, DTYPE == T_Q4_K);
    let sub = i / 32u;
    let sm = scale_min_k4(b, sub);
    let g = i / 64u;
    let l = i % 32u;
    let byte = load_u8_at(b + select(Q5_K_QS, Q4_K_QS, DTYPE == T_Q4_K) + 32u * g + l);
    var q = select(byte & 15u, byte >> 4u, (sub & 1u) != 0u);
    if (DTYPE == T_Q5_K) { q |= ((load_u8_at(b + Q5_K_QH + l) >> sub) & 1u) << 4u; }
    let dj = load_f16_at(b + Q4_K_D) * f32(sm.x);
    let mj = load_f16_at(b + Q4_K_DMIN) * f32(sm.y);
    return dj * f32(q) - mj;
  }
  // Q6_K
  let b = row + (c / 256u) * Q6_K_BYTES;
  let h = i / 128u;
  let l = i % 128u;
  let quarter = l / 32u;
  let byte = load_u8_at(b + Q6_K_QL + 64u * h + l % 32u + select(0u, 32u, (quarter & 1u) != 0u));
  let low = select(byte & 15u, byte >> 4u, quarter >= 2u);
  let high = (load_u8_at(b + Q6_K_QH + 32u * h + l % 32u) >> (2u * quarter)) & 3u;
  return load_f16_at(b + Q6_K_D) * f32(load_i8_at(b + Q6_K_SCALES + i / 16u)) * f32(i32(low | (high << 4u)) - 32);
}

// ---- Units for dot products. Quantized types: 32 values as packed int8 in two vec4 words (the
// CPU's eight lanes take one word each: values 4l .. 4l + 3), integer scales s0 for the first 16 and
// s1 for the last 16 values, the block's (or super-block's) scale d, and for Q4_K/Q5_K the
// unit's integer min mi with the super-block's dmin (Q6_K's values are 0..63, its offset of 32
// taken off apart: q6k_offset). Float types: 4 values. Everything is written
// with vectors and no indexed private arrays, which compilers (llvmpipe's most of all) keep in
// registers.

struct QUnit {
  lo: vec4<u32>,
  hi: vec4<u32>,
  d: f32,
  s0: i32,
  s1: i32,
  dmin: f32,
  mi: i32,
}

// 32-value units per block: the K-quants sum a super-block's units as integers before its scale.
const UNITS_PER_BLOCK: u32 = select(1u, 8u, DTYPE == T_Q4_K || DTYPE == T_Q5_K || DTYPE == T_Q6_K);

// 16 bytes at an even offset, without branching on the alignment.
fn load_vec4_at(byte: u32) -> vec4<u32> {
  let i = byte >> 2u;
  let a = vec4<u32>(w[i], w[i + 1u], w[i + 2u], w[i + 3u]);
  let shifted = (a >> vec4<u32>(16u)) | (vec4<u32>(a.yzw, w[i + 4u]) << vec4<u32>(16u));
  return select(shifted, a, (byte & 2u) == 0u);
}

// 16 bytes at a word offset.
fn words4(i: u32) -> vec4<u32> { return vec4<u32>(w[i], w[i + 1u], w[i + 2u], w[i + 3u]); }

// Bytewise v - k for bytes v, k < 128, as two's-complement int8 (no borrow between bytes).
fn bytes_minus4(v: vec4<u32>, k: u32) -> vec4<u32> { return ((v | vec4<u32>(0x80808080u)) - vec4<u32>(k)) ^ vec4<u32>(0x80808080u); }

const NIBBLES: u32 = 0x0f0f0f0fu;

// Unit u (values 32u .. 32u + 31) of the row at byte `row`.
fn weight_unit(row: u32, u: u32) -> QUnit {
  var r: QUnit;
  r.s0 = 1;
  r.s1 = 1;
  r.dmin = 0.0;
  r.mi = 0;
  if (DTYPE == T_Q8_0) {
    let b = row + u * Q8_0_BYTES;
    r.d = load_f16_at(b + Q8_0_D);
    r.lo = load_vec4_at(b + Q8_0_QS);
    r.hi = load_vec4_at(b + Q8_0_QS + 16u);
  } else if (DTYPE == T_Q4_0) {
    let b = row + u * Q4_0_BYTES;
    r.d = load_f16_at(b + Q4_0_D);
    let v = load_vec4_at(b + Q4_0_QS);
    r.lo = bytes_minus4(v & vec4<u32>(NIBBLES), 0x08080808u);
    r.hi = bytes_minus4((v >> vec4<u32>(4u)) & vec4<u32>(NIBBLES), 0x08080808u);
  } else if (DTYPE == T_Q4_K || DTYPE == T_Q5_K) {
    let is5 = DTYPE == T_Q5_K;
    let b = row + (u / 8u) * select(Q4_K_BYTES, Q5_K_BYTES, is5);
    let sub = u % 8u;
    let sm = scale_min_k4(b, sub);
    r.d = load_f16_at(b + Q4_K_D);
    r.s0 = i32(sm.x);
    r.s1 = r.s0;
    r.dmin = load_f16_at(b + Q4_K_DMIN);
    r.mi = i32(sm.y);
    // K-quant blocks are 144 and 176 bytes: their nibble and high-bit arrays are word aligned.
    let qs = (b + select(Q4_K_QS, Q5_K_QS, is5)) / 4u + 8u * (sub / 2u);
    let shift = vec4<u32>(4u * (sub & 1u));
    r.lo = (words4(qs) >> shift) & vec4<u32>(NIBBLES);
    r.hi = (words4(qs + 4u) >> shift) & vec4<u32>(NIBBLES);
    if (is5) {
      let qh = (b + Q5_K_QH) / 4u;
      r.lo |= ((words4(qh) >> vec4<u32>(sub)) & vec4<u32>(0x01010101u)) << vec4<u32>(4u);
      r.hi |= ((words4(qh + 4u) >> vec4<u32>(sub)) & vec4<u32>(0x01010101u)) << vec4<u32>(4u);
    }
  } else {
    // Q6_K: chunk u % 8 of 32 values has two 16-value scales. The values stay 0..63: the offset
    // of 32 is taken off once per block and lane (q6k_offset), as the CPU kernels take it.
    let b = row + (u / 8u) * Q6_K_BYTES;
    let j = u % 8u;
    let h = j / 4u;
    let quarter = j % 4u;
    r.d = load_f16_at(b + Q6_K_D);
    let sc = q6k_unit_scales(row, u);
    r.s0 = sc.x;
    r.s1 = sc.y;
    let ql = b + Q6_K_QL + 64u * h + select(0u, 32u, (quarter & 1u) != 0u);
    let qh = b + Q6_K_QH + 32u * h;
    let low_shift = vec4<u32>(select(0u, 4u, quarter >= 2u));
    let high_shift = vec4<u32>(2u * quarter);
    let lo = ((load_vec4_at(ql) >> low_shift) & vec4<u32>(NIBBLES)) | (((load_vec4_at(qh) >> high_shift) & vec4<u32>(0x03030303u)) << vec4<u32>(4u));
    let hi = ((load_vec4_at(ql + 16u) >> low_shift) & vec4<u32>(NIBBLES)) | (((load_vec4_at(qh + 16u) >> high_shift) & vec4<u32>(0x03030303u)) << vec4<u32>(4u));
    r.lo = lo;
    r.hi = hi;
  }
  return r;
}

// Values c .. c + 3 of a float row (zero past `cols`). With shader-f16, F16 rows (whose width is then
// a multiple of 4) are read 8 bytes at a time through `wh`, the same buffer seen as vec4<f16>.
fn weight_vec4(row: u32, c: u32, cols: u32) -> vec4<f32> {
#if F16
  if (DTYPE == T_F16) { return vec4<f32>(wh[(row + 2u * c) / 8u]); }
#endif
  var v: vec4<f32>;
  for (var i = 0u; i < 4u; i++) {
    if (c + i < cols) {
      if (DTYPE == T_F32) {
        v[i] = bitcast<f32>(w[(row >> 2u) + c + i]);
      } else if (DTYPE == T_F16) {
        v[i] = f16_to_f32(load_u16_at(row + 2u * (c + i)));
      } else {
        v[i] = bf16_to_f32(load_u16_at(row + 2u * (c + i)));
      }
    }
  }
  return v;
}

// ---- One lane's part of a unit, for kernels that give each of the CPU's lanes an invocation:
// word l of unit u (values 32u + 4l .. 32u + 4l + 3) as packed int8 and its integer scale (Q8_0
// and the K-quants), and the scales of the block holding unit u.

struct QWord {
  q: u32,
  s: i32,
}

fn weight_word(row: u32, u: u32, l: u32) -> QWord {
  if (DTYPE == T_Q8_0) { return QWord(load_u32_at(row + u * Q8_0_BYTES + Q8_0_QS + 4u * l), 1); }
  if (DTYPE == T_Q4_K || DTYPE == T_Q5_K) {
    let is5 = DTYPE == T_Q5_K;
    let b = row + (u / 8u) * select(Q4_K_BYTES, Q5_K_BYTES, is5);
    let sub = u % 8u;
    var q = (w[(b + select(Q4_K_QS, Q5_K_QS, is5)) / 4u + 8u * (sub / 2u) + l] >> (4u * (sub & 1u))) & NIBBLES;
    if (is5) { q |= ((w[(b + Q5_K_QH) / 4u + l] >> sub) & 0x01010101u) << 4u; }
    return QWord(q, i32(scale_min_k4(b, sub).x));
  }
  // Q6_K
  let b = row + (u / 8u) * Q6_K_BYTES;
  let j = u % 8u;
  let quarter = j % 4u;
  let ql = b + Q6_K_QL + 64u * (j / 4u) + select(0u, 32u, (quarter & 1u) != 0u) + 4u * l;
  let qh = b + Q6_K_QH + 32u * (j / 4u) + 4u * l;
  let low = (load_u32_at(ql) >> select(0u, 4u, quarter >= 2u)) & NIBBLES;
  let high = ((load_u32_at(qh) >> (2u * quarter)) & 0x03030303u) << 4u;
  return QWord(low | high, load_i8_at(b + Q6_K_SCALES + 2u * j + select(0u, 1u, l >= 4u)));
}

// The scales of unit u's two 16-value halves in a Q6_K row.
fn q6k_unit_scales(row: u32, u: u32) -> vec2<i32> {
  let s = row + (u / 8u) * Q6_K_BYTES + Q6_K_SCALES + 2u * (u % 8u);
  return vec2<i32>(load_i8_at(s), load_i8_at(s + 1u));
}

// (d, dmin) of the block holding unit u (Q8_0 and the K-quants).
fn block_scales(row: u32, u: u32) -> vec2<f32> {
  if (DTYPE == T_Q8_0) { return vec2<f32>(load_f16_at(row + u * Q8_0_BYTES + Q8_0_D), 0.0); }
  if (DTYPE == T_Q6_K) { return vec2<f32>(load_f16_at(row + (u / 8u) * Q6_K_BYTES + Q6_K_D), 0.0); }
  let b = row + (u / 8u) * select(Q4_K_BYTES, Q5_K_BYTES, DTYPE == T_Q5_K);
  return vec2<f32>(load_f16_at(b + Q4_K_D), load_f16_at(b + Q4_K_DMIN));
}

// The integer min of unit u of a Q4_K/Q5_K row.
fn unit_min(row: u32, u: u32) -> i32 {
  return i32(scale_min_k4(row + (u / 8u) * select(Q4_K_BYTES, Q5_K_BYTES, DTYPE == T_Q5_K), u % 8u).y);
}

// The RMSNorm scale 1 / sqrt(mean(x^2) + eps), rounded exactly as the CPU (and ggml) computes it:
// float32 squares summed in float64, then float32 mean, sqrt and reciprocal, each correctly
// rounded. Why exact: an RMS-normed row of a quantized embedding is a scaled copy of small
// integers, so its values sit on the half-steps of the Q8_0 activation quantizer, and the last bit
// of the scale decides which way each one rounds (0.1 of log-probability on tiny-llama-q4_0). A
// float32 sum cannot hold the float64 one; a fixed-point integer of 80 bits can.
//
// Squares go in as 16-bit limbs kept in u32 lanes (carries deferred, so lanes add with plain
// integer sums across the workgroup): a square m * 2^(e - 150) is T * 2^(E - 190) with E the
// largest biased exponent of the group's squares and T = m * 2^40 >> (E - e), truncated (below
// 2^-40 of the largest square).
#include "div"

// This invocation's share: add the float square sq into `acc` (e_max: the group's largest exponent).
fn add_square(acc: ptr<function, vec4<u32>>, sq: f32, e_max: u32) {
  let bits = bitcast<u32>(sq);
  if (bits == 0u) { return; }
  var e = bits >> 23u;
  var m = bits & 0x7fffffu;
  if (e == 0u) { e = 1u; } else { m |= 0x800000u; }
  let shift = e_max - e;
  // m * 2^40 as (hi, lo) = (m << 8, 0), shifted right.
  var hi = m << 8u;
  var lo = 0u;
  if (shift >= 64u) { return; }
  if (shift >= 32u) {
    lo = hi >> (shift - 32u);
    hi = 0u;
  } else if (shift > 0u) {
    lo = hi << (32u - shift);
    hi = hi >> shift;
  }
  *acc += vec4<u32>(lo & 0xffffu, lo >> 16u, hi & 0xffffu, hi >> 16u);
}

// Correctly rounded sqrt of a positive finite float.
fn sqrt_rn(v: f32) -> f32 {
  let bits = bitcast<u32>(v);
  var e = i32(bits >> 23u);
  var m = bits & 0x7fffffu;
  if (e == 0) {
    e = 1;
    while ((m & 0x800000u) == 0u) { m <<= 1u; e -= 1; }
  } else {
    m |= 0x800000u;
  }
  // v = m * 2^k with k even and m < 2^25; then sqrt(m * 2^s) has exactly 25 bits.
  var k = e - 150;
  if ((k & 1) != 0) {
    m <<= 1u;
    k -= 1;
  }
  let s = select(24u, 26u, m < 0x1000000u);
  // The radicand m << s (up to 50 bits) as (hi, lo); digit-by-digit square root, two bits a step.
  let r_lo = m << s;
  let r_hi = m >> (32u - s);
  var root = 0u;
  var rem = 0u;
  for (var i = 24; i >= 0; i--) {
    let at = u32(2 * i);
    var pair: u32;
    if (at >= 32u) { pair = (r_hi >> (at - 32u)) & 3u; } else { pair = (r_lo >> at) & 3u; }
    rem = (rem << 2u) | pair;
    let trial = (root << 2u) | 1u;
    if (rem >= trial) {
      rem -= trial;
      root = (root << 1u) | 1u;
    } else {
      root <<= 1u;
    }
  }
  var mant = root >> 1u;
  if ((root & 1u) != 0u && (rem != 0u || (mant & 1u) != 0u)) { mant += 1u; }
  var exp = 151 + (k - i32(s)) / 2;
  if (mant == 0x1000000u) {
    mant >>= 1u;
    exp += 1;
  }
  return bitcast<f32>((u32(exp) << 23u) | (mant & 0x7fffffu));
}

// 1 / sqrt(sum / width + eps) for the squares summed in `lanes` (each lane summed over the group).
fn rms_scale(lanes: vec4<u32>, e_max: u32, width: u32, eps: f32) -> f32 {
  // Propagate the deferred carries: six 16-bit limbs.
  var s: array<u32, 6>;
  var carry = 0u;
  for (var i = 0u; i < 6u; i++) {
    let v = select(0u, lanes[min(i, 3u)], i < 4u) + carry;
    s[i] = v & 0xffffu;
    carry = v >> 16u;
  }
  // Divide by the width, limb by limb from the top (remainder < width < 2^16).
  var q: array<u32, 6>;
  var rem = 0u;
  for (var i = 5; i >= 0; i--) {
    let cur = (rem << 16u) | s[i];
    q[i] = cur / width;
    rem = cur % width;
  }
  // The quotient as three words; a 64-bit window (hi, lo) holding its top set bit, and what lies below.
  let w0 = q[0] | (q[1] << 16u);
  let w1 = q[2] | (q[3] << 16u);
  let w2 = q[4] | (q[5] << 16u);
  var hi = w2;
  var lo = w1;
  var rest = w0;
  var base = 64;
  if (w2 == 0u) {
    hi = w1;
    lo = w0;
    rest = 0u;
    base = 32;
    if (w1 == 0u) {
      hi = w0;
      lo = 0u;
      base = 0;
    }
  }
  if (hi == 0u) { return div_rn(1.0, sqrt_rn(eps)); }
  let b = i32(firstLeadingBit(hi));
  let top = base + b;
  // 25 bits from the top down (24 of mantissa, then the rounding bit): the window shifted right by b + 8.
  let k = u32(b + 8);
  var bits: u32;
  var dropped: u32;
  if (k < 32u) {
    bits = (lo >> k) | (hi << (32u - k));
    dropped = lo & ((1u << k) - 1u);
  } else {
    bits = hi >> (k - 32u);
    dropped = lo | (hi & ((1u << (k - 32u)) - 1u));
  }
  var mant = (bits >> 1u) & 0xffffffu;
  let sticky = dropped != 0u || rest != 0u || rem != 0u;
  var exp = top + i32(e_max) - 63;
  if ((bits & 1u) != 0u && (sticky || (mant & 1u) != 0u)) { mant += 1u; }
  if (mant == 0x1000000u) {
    mant >>= 1u;
    exp += 1;
  }
  var mean: f32;
  if (exp >= 255) {
    mean = bitcast<f32>(0x7f800000u | (mant & 0u)); // +inf, built at run time (WGSL has no inf constant)
  } else if (exp > 0) {
    mean = bitcast<f32>((u32(exp) << 23u) | (mant & 0x7fffffu));
  } else {
    mean = ldexp(f32(mant), exp - 150); // subnormal: far below any eps
  }
  return div_rn(1.0, sqrt_rn(mean + eps));
}

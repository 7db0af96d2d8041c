// Correctly rounded float32 division. WGSL's `/` may be off by 2.5 ulp, and the activation
// quantizers' rounding decisions (which integer x * 127 / amax rounds to) hang on the last bit:
// they must divide exactly as the CPU does.

// a / b for finite, nonzero a and b, rounded to nearest even (results below the normal range
// fall back to `/`; the quantizers never produce them).
fn div_rn(a: f32, b: f32) -> f32 {
  let ua = bitcast<u32>(a);
  let ub = bitcast<u32>(b);
  let sign = (ua ^ ub) & 0x80000000u;
  var ea = i32((ua >> 23u) & 0xffu);
  var eb = i32((ub >> 23u) & 0xffu);
  var ma = ua & 0x7fffffu;
  var mb = ub & 0x7fffffu;
  if (ea == 0) {
    ea = 1;
    while ((ma & 0x800000u) == 0u) { ma <<= 1u; ea -= 1; }
  } else {
    ma |= 0x800000u;
  }
  if (eb == 0) {
    eb = 1;
    while ((mb & 0x800000u) == 0u) { mb <<= 1u; eb -= 1; }
  } else {
    mb |= 0x800000u;
  }
  var e = ea - eb + 127;
  if (ma < mb) {
    ma <<= 1u;
    e -= 1;
  }
  // Restoring division: 24 quotient bits; r ends as twice the remainder.
  var q = 0u;
  var r = ma;
  for (var i = 0; i < 24; i++) {
    q <<= 1u;
    if (r >= mb) {
      r -= mb;
      q |= 1u;
    }
    r <<= 1u;
  }
  if (r > mb || (r == mb && (q & 1u) != 0u)) { q += 1u; }
  if (q == 0x1000000u) {
    q = 0x800000u;
    e += 1;
  }
  if (e >= 255) { return bitcast<f32>(sign | 0x7f800000u); }
  if (e <= 0) { return a / b; }
  return bitcast<f32>(sign | (u32(e) << 23u) | (q & 0x7fffffu));
}

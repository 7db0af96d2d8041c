// exp as the CPU backend computes it (native/cpu/ops*.cpp), bit for bit: exp_ggml is ggml's
// single-precision expf (ggml_v_expf, in attention's softmax); exp_glibc is glibc's expf (its
// FMA variant, in the SiLU), which works in double precision, here in float-float (hi + lo)
// arithmetic of about 48 bits: the same steps, constants and table, so the result rounds to the
// same float unless glibc's double lands within ~2^-46 of a rounding boundary.
#include "fma"

fn exp_ggml(x: f32) -> f32 {
  let r = 0x1.8p23f;
  let z = fma_rn(x, 0x1.715476p+0f, r);
  let n = opaque(z) - r;
  let b = fma_rn(-n, 0x1.7f7d1cp-20f, fma_rn(-n, 0x1.62e4p-1f, x));
  let e = bitcast<u32>(z) << 23u;
  let k = bitcast<f32>(e + 0x3f800000u);
  let u = b * b;
  let j = fma_rn(fma_rn(fma_rn(0x1.0e4020p-7f, b, 0x1.573e2ep-5f), u, fma_rn(0x1.555e66p-3f, b, 0x1.fffdb6p-2f)), u, 0x1.ffffecp-1f * b);
  if (!(abs(n) > 126.0)) { return fma_rn(j, k, k); } // NaN too
  // 2^n alone would leave float's range: scale in two steps, or give 0 / inf past |n| = 192.
  let g = select(0u, 0x82000000u, n <= 0.0);
  let s1 = bitcast<f32>(g + 0x7f000000u);
  if (abs(n) > 192.0) { return s1 * s1; }
  let s2 = bitcast<f32>(e - g);
  return fma_rn(s2, j, s2) * s1;
}

// ---- Float-float arithmetic: hi + lo with |lo| <= ulp(hi) / 2.

fn ff_add(a: vec2<f32>, b: vec2<f32>) -> vec2<f32> {
  let s = two_sum(a.x, b.x);
  return fast_two_sum(s.x, s.y + (a.y + b.y));
}

fn ff_mul(a: vec2<f32>, b: vec2<f32>) -> vec2<f32> {
  let p = two_prod(a.x, b.x);
  return fast_two_sum(p.x, p.y + (a.x * b.y + a.y * b.x));
}

// 2^(i / 32) for i in 0..31: glibc's table of doubles (__exp2f_data.tab), each as hi + lo.
const EXP2_TABLE = array<vec2<f32>, 32>(
  vec2<f32>(0x1p0f, 0.0f), vec2<f32>(0x1.059b0ep0f, -0x1.9d4f52p-25f), vec2<f32>(0x1.0b5586p0f, 0x1.9f3122p-25f),
  vec2<f32>(0x1.11301ep0f, -0x1.fdb496p-25f), vec2<f32>(0x1.172b84p0f, -0x1.c15742p-27f), vec2<f32>(0x1.1d4874p0f, -0x1.d2e8cap-25f),
  vec2<f32>(0x1.2387a6p0f, 0x1.ceac48p-25f), vec2<f32>(0x1.29e9ep0f, -0x1.5c0424p-25f), vec2<f32>(0x1.306fep0f, 0x1.4636e2p-25f),
  vec2<f32>(0x1.371a74p0f, -0x1.18aac6p-25f), vec2<f32>(0x1.3dea64p0f, 0x1.824684p-25f), vec2<f32>(0x1.44e086p0f, 0x1.8624b4p-30f),
  vec2<f32>(0x1.4bfdaep0f, -0x1.593abcp-25f), vec2<f32>(0x1.5342b6p0f, -0x1.2c561p-25f), vec2<f32>(0x1.5ab07ep0f, -0x1.5bd5ecp-27f),
  vec2<f32>(0x1.6247ecp0f, -0x1.f8b55p-25f), vec2<f32>(0x1.6a09e6p0f, 0x1.9fcef4p-26f), vec2<f32>(0x1.71f75ep0f, 0x1.1d8beep-25f),
  vec2<f32>(0x1.7a1148p0f, -0x1.829fdp-25f), vec2<f32>(0x1.82589ap0f, -0x1.accc7cp-26f), vec2<f32>(0x1.8ace54p0f, 0x1.15506ep-27f),
  vec2<f32>(0x1.93737cp0f, -0x1.e64744p-25f), vec2<f32>(0x1.9c4918p0f, 0x1.51f848p-27f), vec2<f32>(0x1.a5503cp0f, -0x1.b83b54p-25f),
  vec2<f32>(0x1.ae89fap0f, -0x1.a94b14p-26f), vec2<f32>(0x1.b7f77p0f, -0x1.a09438p-25f), vec2<f32>(0x1.c199bep0f, -0x1.3d56b2p-27f),
  vec2<f32>(0x1.cb720ep0f, -0x1.8837ccp-27f), vec2<f32>(0x1.d5818ep0f, -0x1.822dbcp-27f), vec2<f32>(0x1.dfc974p0f, -0x1.908c94p-25f),
  vec2<f32>(0x1.ea4afap0f, 0x1.52486cp-27f), vec2<f32>(0x1.f50766p0f, -0x1.246ebp-26f),
);

// glibc's expf: z = x * 32 / ln2, k = z rounded to an integer (half to even), r = z - k, then
// 2^(k / 32) from the table times 1 + C2 r + (C0 r + C1) r^2, rounded once to float.
fn exp_glibc(x: f32) -> f32 {
  if (x != x) { return x; }
  if (x > 0x1.62e42ep6f) { return bitcast<f32>(0x7f800000u ^ p.zero); } // inf (WGSL has no inf constant)
  if (x < -0x1.9fe368p6f) { return 0.0; }
  // x * InvLn2N exactly, as three products of x with the constant's three parts.
  let p0 = two_prod(x, 0x1.715476p5f);
  let p1 = two_prod(x, 0x1.4ae0cp-21f);
  let k = round(p0.x);
  let r = ff_add(ff_add(vec2<f32>(p0.x - k, 0.0), vec2<f32>(p0.y, 0.0)), vec2<f32>(p1.x, p1.y - x * 0x1p-46f));
  // r lies in [-1/2, 1/2] unless rounding p0.x alone picked the wrong integer (x * InvLn2N is
  // never exactly half an integer, short of x = 0).
  var kk = k;
  var rr = r;
  if (r.x > 0.5 || (r.x == 0.5 && r.y > 0.0)) {
    kk += 1.0;
    rr = ff_add(r, vec2<f32>(-1.0, 0.0));
  } else if (r.x < -0.5 || (r.x == -0.5 && r.y < 0.0)) {
    kk -= 1.0;
    rr = ff_add(r, vec2<f32>(1.0, 0.0));
  }
  let zz = ff_add(ff_mul(vec2<f32>(0x1.c6af84p-20f, 0x1.722472p-45f), rr), vec2<f32>(0x1.ebfce6p-13f, -0x1.e0a762p-38f));
  var y = ff_add(ff_mul(vec2<f32>(0x1.62e43p-6f, -0x1.e75a54p-35f), rr), vec2<f32>(1.0, 0.0));
  y = ff_add(ff_mul(zz, ff_mul(rr, rr)), y);
  let ki = i32(kk);
  let t = ff_mul(y, EXP2_TABLE[ki & 31]);
  return ldexp(t.x + t.y, ki >> 5);
}

// a * b + c rounded once, as the CPU backend's FMA instructions compute it. WGSL's fma() may round
// the product first, and on lavapipe it does (Mesa's llvmpipe lowers it to a multiply and an add).
// Where the device's fma() was seen to fuse (FUSED_FMA, probed when the device opens) it is used;
// elsewhere fma_rn computes the same bits with ordinary float operations: Dekker's exact product
// (a * b = p + e, from 12-bit halves whose products are exact, so fusing any of them changes
// nothing), then Boldo and Melquiond's correctly rounded sum of three, c + p + e ("Emulation of FMA
// and correctly rounded sums: proved algorithms using rounding to odd"), which rounds the low part
// to odd. Products outside [2^-100, 2^100] in magnitude fall back to fma().
//
// The including shader's Params has a field `zero` that the host sets to 0. Compilers that treat
// float math as real-number algebra (Mesa's NIR does, for operations not marked exact, and WGSL
// cannot mark them) would simplify TwoSum's error term (a + b) - a - b to 0; passing the sum
// through an exclusive-or with a zero they cannot see keeps it.

fn opaque(x: f32) -> f32 { return bitcast<f32>(bitcast<u32>(x) ^ p.zero); }

// s + err = a + b exactly, s = a + b rounded.
fn two_sum(a: f32, b: f32) -> vec2<f32> {
  let s = opaque(a + b);
  let z = opaque(s - a);
  return vec2<f32>(s, (a - (s - z)) + (b - z));
}

// s + err = a + b exactly when |a| >= |b|.
fn fast_two_sum(a: f32, b: f32) -> vec2<f32> {
  let s = opaque(a + b);
  return vec2<f32>(s, b - (s - a));
}

// p + e = a * b exactly, p = a * b rounded (Dekker).
fn two_prod(a: f32, b: f32) -> vec2<f32> {
  let p = a * b;
  let ah = bitcast<f32>(bitcast<u32>(a) & 0xfffff000u);
  let bh = bitcast<f32>(bitcast<u32>(b) & 0xfffff000u);
  let al = a - ah;
  let bl = b - bh;
  return vec2<f32>(p, (((ah * bh - p) + ah * bl) + al * bh) + al * bl);
}

fn fma_rn(a: f32, b: f32, c: f32) -> f32 {
  if (FUSED_FMA) { return fma(a, b, c); }
  // a * b = p + e exactly, and p + e rounds to p: the sum of three c + p + e, correctly rounded,
  // is RN(t + RO(u + e)) with t + u = c + p exactly (the paper's Algorithm 5.5).
  let pe = two_prod(a, b);
  let t = two_sum(c, pe.x);
  let s = two_sum(t.y, pe.y);
  // Round s.x to odd: an inexact, even sum moves one step toward the exact one.
  let bits = bitcast<u32>(s.x);
  let step = select(0xffffffffu, 1u, (s.y > 0.0) == (s.x > 0.0));
  let odd = select(s.x, bitcast<f32>(bits + step), s.y != 0.0 && (bits & 1u) == 0u);
  let m = abs(pe.x);
  return select(fma(a, b, c), t.x + odd, m >= 0x1p-100f && m <= 0x1p100f);
}

fn fma_rn4(a: vec4<f32>, b: vec4<f32>, c: vec4<f32>) -> vec4<f32> {
  return vec4<f32>(fma_rn(a.x, b.x, c.x), fma_rn(a.y, b.y, c.y), fma_rn(a.z, b.z, c.z), fma_rn(a.w, b.w, c.w));
}

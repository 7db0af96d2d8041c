// The CPU backend's (llama.cpp's AVX2) summation orders, so that the two backends round alike: a dot
// product runs as eight FMA chains ("lanes", held as two vec4: lanes 0-3 and 4-7), which ggml's
// hsum_float_8 then adds in a fixed tree.

// ((l0 + l4) + (l2 + l6)) + ((l1 + l5) + (l3 + l7))
fn hsum8(lo: vec4<f32>, hi: vec4<f32>) -> f32 {
  let s = lo + hi;
  return (s.x + s.z) + (s.y + s.w);
}

// (l0 + l2) + (l1 + l3): hsum of a 128-bit vector.
fn hsum4(v: vec4<f32>) -> f32 { return (v.x + v.z) + (v.y + v.w); }


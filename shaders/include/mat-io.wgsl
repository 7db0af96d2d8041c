// The interface shared by mul_mat and mul_mat_vec: y[t, out_offset + r] = W[r] . x[t] for the rows
// of W in one binding; the host fills the same Params for either.

struct Params {
  cols: u32,        // row width
  rows: u32,        // weight rows in this binding
  row_bytes: u32,
  n_tokens: u32,
  units: u32,       // 32-value units per row (quantized types)
  a_d: u32,         // word offsets of the activation scales and sums
  a_s: u32,
  out_cols: u32,    // output row width (all rows of the weight)
  out_offset: u32,  // first weight row in this binding
  zero: u32,        // 0 (include/fma.wgsl)
}

@group(0) @binding(0) var<storage, read> w: array<u32>;
@group(0) @binding(1) var<storage, read> a: array<u32>;
@group(0) @binding(2) var<storage, read_write> y: array<f32>;
#if F16
@group(0) @binding(3) var<storage, read> wh: array<vec4<f16>>;
#endif
@group(0) @binding(4) var<uniform> p: Params;

// Bias add after a matrix product, in place: y[t, c] += bias[c].

struct Params {
  cols: u32,
  n: u32, // rows * cols
}

@group(0) @binding(0) var<storage, read> bias: array<f32>;
@group(0) @binding(1) var<storage, read_write> y: array<f32>;
@group(0) @binding(2) var<uniform> p: Params;

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  let i = gid.x + gid.y * nwg.x * WG;
  if (i < p.n) { y[i] += bias[i % p.cols]; }
}

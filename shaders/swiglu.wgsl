// SiLU-gated linear unit of the feed-forward block: y = gate / (1 + exp(-gate)) * up.

struct Params {
  n: u32,
}

@group(0) @binding(0) var<storage, read> gate: array<f32>;
@group(0) @binding(1) var<storage, read> up: array<f32>;
@group(0) @binding(2) var<storage, read_write> y: array<f32>;
@group(0) @binding(3) var<uniform> p: Params;

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  let i = gid.x + gid.y * nwg.x * WG;
  if (i < p.n) {
    let g = gate[i];
    y[i] = g / (1.0 + exp(-g)) * up[i];
  }
}

// SiLU-gated linear unit of the feed-forward block: y = gate / (1 + exp(-gate)) * up, with glibc's
// expf and a correctly rounded division, as the CPU backend computes it.
#include "exp"
#include "div"

struct Params {
  n: u32,
  zero: u32,
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
    let den = 1.0 + exp_glibc(-g);
    // div_rn takes finite, nonzero operands; `/` gets the rest (zeros, infinities, NaN) exactly.
    var silu: f32;
    if (g != 0.0 && abs(g) <= 0x1.fffffep+127f && den <= 0x1.fffffep+127f) {
      silu = div_rn(g, den);
    } else {
      silu = g / den;
    }
    y[i] = silu * up[i];
  }
}

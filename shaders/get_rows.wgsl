// Embedding lookup: row ids[t] of a weight table, dequantized to f32. One invocation per value.
// A table split over several bindings is looked up once per binding; each skips the ids that
// fall outside its rows.
#include "weights"

struct Params {
  cols: u32,
  row_bytes: u32,
  n_tokens: u32,
  first_row: u32, // table rows held by this binding: [first_row, first_row + rows)
  rows: u32,
}

@group(0) @binding(0) var<storage, read> w: array<u32>;
@group(0) @binding(1) var<storage, read> ids: array<i32>;
@group(0) @binding(2) var<storage, read_write> y: array<f32>;
@group(0) @binding(3) var<uniform> p: Params;

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  let i = gid.x + gid.y * nwg.x * WG;
  if (i >= p.n_tokens * p.cols) { return; }
  let t = i / p.cols;
  let c = i % p.cols;
  let id = u32(ids[t]) - p.first_row;
  if (id >= p.rows) { return; }
  y[i] = weight_value(id * p.row_bytes, c);
}

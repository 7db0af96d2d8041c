// Workgroup-wide sums (f32, and u32 lanes) and max. Every invocation must call them (they hold
// barriers) and every one gets the same result. With subgroups: one subgroup operation, and when the workgroup is known to
// be a single subgroup (SG_ONLY), nothing else; without: a tree over workgroup memory.
#if SUBGROUPS
var<workgroup> red_f: array<f32, WG>;
var<workgroup> red_u4: array<vec4<u32>, WG>;

fn wg_sum_u4(v: vec4<u32>) -> vec4<u32> {
  let s = subgroupAdd(v);
  if (SG_ONLY) { return s; }
  if (sg_inv == 0u) { red_u4[sg_id] = s; }
  workgroupBarrier();
  var t = vec4<u32>(0u);
  for (var i = 0u; i < n_sg; i++) { t += red_u4[i]; }
  workgroupBarrier();
  return t;
}

fn wg_sum(v: f32) -> f32 {
  let s = subgroupAdd(v);
  if (SG_ONLY) { return s; }
  if (sg_inv == 0u) { red_f[sg_id] = s; }
  workgroupBarrier();
  var t = 0.0;
  for (var i = 0u; i < n_sg; i++) { t += red_f[i]; }
  workgroupBarrier();
  return t;
}

fn wg_max(v: f32) -> f32 {
  let s = subgroupMax(v);
  if (SG_ONLY) { return s; }
  if (sg_inv == 0u) { red_f[sg_id] = s; }
  workgroupBarrier();
  var t = red_f[0];
  for (var i = 1u; i < n_sg; i++) { t = max(t, red_f[i]); }
  workgroupBarrier();
  return t;
}
#else
var<workgroup> red_f: array<f32, WG>;
var<workgroup> red_u4: array<vec4<u32>, WG>;

fn wg_sum_u4(v: vec4<u32>) -> vec4<u32> {
  red_u4[lid] = v;
  workgroupBarrier();
  for (var s = WG / 2u; s > 0u; s >>= 1u) {
    if (lid < s) { red_u4[lid] += red_u4[lid + s]; }
    workgroupBarrier();
  }
  let t = red_u4[0];
  workgroupBarrier();
  return t;
}

fn wg_sum(v: f32) -> f32 {
  red_f[lid] = v;
  workgroupBarrier();
  for (var s = WG / 2u; s > 0u; s >>= 1u) {
    if (lid < s) { red_f[lid] += red_f[lid + s]; }
    workgroupBarrier();
  }
  let t = red_f[0];
  workgroupBarrier();
  return t;
}

fn wg_max(v: f32) -> f32 {
  red_f[lid] = v;
  workgroupBarrier();
  for (var s = WG / 2u; s > 0u; s >>= 1u) {
    if (lid < s) { red_f[lid] = max(red_f[lid], red_f[lid + s]); }
    workgroupBarrier();
  }
  let t = red_f[0];
  workgroupBarrier();
  return t;
}
#endif

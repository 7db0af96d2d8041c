// Per-invocation ids, kept in module-scope privates so helpers can use them. The workgroup index
// stays a local of the entry point (see group_index): the uniformity analysis must see that it is
// the same across a workgroup, or no barrier may follow a branch on it.
struct Ids {
  @builtin(local_invocation_index) lid: u32,
#if SUBGROUPS
  @builtin(subgroup_invocation_id) sg_inv: u32,
  @builtin(subgroup_id) sg_id: u32,
  @builtin(num_subgroups) n_sg: u32,
  @builtin(subgroup_size) sg_size: u32,
#endif
}

var<private> lid: u32;
#if SUBGROUPS
var<private> sg_inv: u32;
var<private> sg_id: u32;
var<private> n_sg: u32;
var<private> sg_size: u32;
#endif

fn init_ids(ids: Ids) {
  lid = ids.lid;
#if SUBGROUPS
  sg_inv = ids.sg_inv;
  sg_id = ids.sg_id;
  n_sg = ids.n_sg;
  sg_size = ids.sg_size;
#endif
}

// Grids are 2-D when one dimension would pass maxComputeWorkgroupsPerDimension: the linear index.
fn group_index(wg: vec3<u32>, nwg: vec3<u32>) -> u32 { return wg.x + wg.y * nwg.x; }

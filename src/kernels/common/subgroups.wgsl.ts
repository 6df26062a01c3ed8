// A dense subgroup index for kernels whose subgroups each own part of a workgroup's work. WGSL has no
// portable subgroup id and does not promise which invocations form a subgroup, and a subgroup can be larger
// than the workgroup (subgroup_size 64 or 128 with 64 invocations), so striding by subgroup_size would skip
// work: each subgroup takes an index from a workgroup counter instead.

/** Module-scope declaration of the counter SUBGROUP_INDEX_WGSL uses. */
export const SUBGROUP_COUNTER_WGSL = 'var<workgroup> sgCount: atomic<u32>;';

/**
 * Statements (in `main`, reached by every invocation) defining `sid` (the lane's rank among the invocations
 * of its subgroup that exist), `sgSize` (their count), `sgIndex` (a dense subgroup index) and `sgTotal`
 * (subgroups in the workgroup). Ends after a workgroupBarrier.
 */
export const SUBGROUP_INDEX_WGSL = `let sid = subgroupExclusiveAdd(1u);
  let sgSize = subgroupAdd(1u);
  var mine = 0u;
  if (sid == 0u) { mine = atomicAdd(&sgCount, 1u); }
  let sgIndex = subgroupBroadcastFirst(mine);
  workgroupBarrier();
  let sgTotal = atomicLoad(&sgCount);`;

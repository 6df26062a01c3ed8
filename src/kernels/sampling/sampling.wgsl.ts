// Top-K candidate extraction for sampling (K <= 64). Each workgroup loads a slice of SLICE values into
// workgroup memory and pulls out its K largest by K rounds of a (value desc, id asc) arg-max reduction.
// Passes repeat over the previous pass's candidates until one workgroup remains, so the final K are
// sorted, with ties broken toward the lowest token id (greedy argmax = the first candidate with K = 1).
// Unused slots (a slice with fewer than K values) hold id 0xffffffff and value -3e38.

export const TOPK_WG = 256;
export const TOPK_SLICE = 1024;
export const TOPK_MAX_K = 64;
export const TOPK_NONE = 0xffffffff;

/** `indexed`: input is a previous pass's (values, ids); otherwise a logits row whose ids are positions. */
export function topkWgsl(indexed: boolean): string {
  return /* wgsl */ `
struct Dims { count: u32, k: u32 }
@group(0) @binding(0) var<storage, read> inVals: array<f32>;
@group(0) @binding(1) var<storage, read_write> outVals: array<f32>;
@group(0) @binding(2) var<storage, read_write> outIds: array<u32>;
@group(0) @binding(3) var<uniform> dims: Dims;
${indexed ? '@group(0) @binding(4) var<storage, read> inIds: array<u32>;' : ''}

var<workgroup> vals: array<f32, ${TOPK_SLICE}>;
var<workgroup> ids: array<u32, ${TOPK_SLICE}>;
var<workgroup> redVal: array<f32, ${TOPK_WG}>;
var<workgroup> redPos: array<u32, ${TOPK_WG}>;

// True when (va, ia) ranks before (vb, ib): larger value, then lower id.
fn better(va: f32, ia: u32, vb: f32, ib: u32) -> bool {
  return va > vb || (va == vb && ia < ib);
}

@compute @workgroup_size(${TOPK_WG})
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let slice = wg.x + wg.y * nwg.x;
  let base = slice * ${TOPK_SLICE}u;
  for (var e = lid; e < ${TOPK_SLICE}u; e += ${TOPK_WG}u) {
    let g = base + e;
    var v = -3.0e38;
    var id = ${TOPK_NONE}u;
    if (g < dims.count) {
      v = inVals[g];
      id = ${indexed ? 'inIds[g]' : 'g'};
      // NaN never wins (and would poison comparisons): treat it as the lowest value.
      if (v != v) { v = -3.0e38; }
    }
    vals[e] = v;
    ids[e] = id;
  }
  workgroupBarrier();
  for (var round = 0u; round < dims.k; round++) {
    var bv = -3.4e38;
    var bp = 0u;
    var bi = ${TOPK_NONE}u;
    for (var e = lid; e < ${TOPK_SLICE}u; e += ${TOPK_WG}u) {
      if (better(vals[e], ids[e], bv, bi)) { bv = vals[e]; bi = ids[e]; bp = e; }
    }
    redVal[lid] = bv;
    redPos[lid] = bp;
    workgroupBarrier();
    for (var s = ${TOPK_WG / 2}u; s > 0u; s >>= 1u) {
      if (lid < s) {
        let pa = redPos[lid];
        let pb = redPos[lid + s];
        if (better(redVal[lid + s], ids[pb], redVal[lid], ids[pa])) {
          redVal[lid] = redVal[lid + s];
          redPos[lid] = pb;
        }
      }
      workgroupBarrier();
    }
    if (lid == 0u) {
      let p = redPos[0];
      outVals[slice * dims.k + round] = vals[p];
      outIds[slice * dims.k + round] = ids[p];
      // Taken: rank below every real value and every empty slot.
      vals[p] = -3.4e38;
      ids[p] = ${TOPK_NONE}u;
    }
    workgroupBarrier();
  }
}
`;
}

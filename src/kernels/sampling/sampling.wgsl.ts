// Top-K candidate extraction for sampling (K <= 64), over `rows` rows of values at stride `ld`. Each
// workgroup takes one slice of SLICE values of one row into workgroup memory and writes its K best by
// (value desc, id asc). Passes repeat over the previous pass's candidates until one slice per row
// remains, so each row's final K are sorted with ties toward the lowest token id (greedy argmax = the
// first candidate with K = 1). Unused slots (a slice with fewer than K values) hold id 0xffffffff.
//
// Two ways to find a slice's K best, same output: K rounds of a (value desc, id asc) arg-max reduction
// (9 barriers a round: cheapest for a few candidates, e.g. greedy), or a bitonic sort of the whole slice
// (55 barriers whatever K: far fewer than 64 rounds' 600 for sampling's 64 candidates).

export const TOPK_WG = 256;
export const TOPK_SLICE = 1024;
export const TOPK_MAX_K = 64;
export const TOPK_NONE = 0xffffffff;
/** Largest K found by arg-max rounds; above it the slice is sorted. */
export const TOPK_ROUNDS_MAX_K = 4;

/**
 * `indexed`: input is a previous pass's (values, ids), laid out like its values; otherwise logits rows
 * whose ids are column positions. `sorted`: the bitonic variant (any K), else arg-max rounds.
 */
export function topkWgsl(indexed: boolean, sorted: boolean): string {
  return /* wgsl */ `
// count: values per row; ld: row stride of the input; slices: ceil(count / SLICE) per row.
struct Dims { count: u32, k: u32, ld: u32, slices: u32, rows: u32 }
@group(0) @binding(0) var<storage, read> inVals: array<f32>;
// [rows, slices, k]
@group(0) @binding(1) var<storage, read_write> outVals: array<f32>;
@group(0) @binding(2) var<storage, read_write> outIds: array<u32>;
@group(0) @binding(3) var<uniform> dims: Dims;
${indexed ? '@group(0) @binding(4) var<storage, read> inIds: array<u32>;' : ''}

var<workgroup> vals: array<f32, ${TOPK_SLICE}>;
var<workgroup> ids: array<u32, ${TOPK_SLICE}>;
${sorted ? '' : `var<workgroup> redVal: array<f32, ${TOPK_WG}>;
var<workgroup> redPos: array<u32, ${TOPK_WG}>;`}

// True when (va, ia) ranks before (vb, ib): larger value, then lower id.
fn better(va: f32, ia: u32, vb: f32, ib: u32) -> bool {
  return va > vb || (va == vb && ia < ib);
}

@compute @workgroup_size(${TOPK_WG})
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  // The grid may hold more workgroups than slices (split over two dimensions).
  let g = wg.x + wg.y * nwg.x;
  if (g >= dims.rows * dims.slices) { return; }
  let row = g / dims.slices;
  let s = g % dims.slices;
  let base = s * ${TOPK_SLICE}u;
  let out = g * dims.k;
  for (var e = lid; e < ${TOPK_SLICE}u; e += ${TOPK_WG}u) {
    let c = base + e;
    var v = -3.0e38;
    var id = ${TOPK_NONE}u;
    if (c < dims.count) {
      v = inVals[row * dims.ld + c];
      id = ${indexed ? 'inIds[row * dims.ld + c]' : 'c'};
      // NaN never wins (and would break the sort's comparisons): treat it as the lowest value. Tested on
      // the bits: WGSL compilers may assume floats are never NaN and fold v != v to false.
      if ((bitcast<u32>(v) & 0x7fffffffu) > 0x7f800000u) { v = -3.0e38; }
    }
    vals[e] = v;
    ids[e] = id;
  }
  workgroupBarrier();
${sorted ? bitonicBody : roundsBody}
}
`;
}

// Sorts the slice best first, then writes its first k entries.
const bitonicBody = /* wgsl */ `
  for (var size = 2u; size <= ${TOPK_SLICE}u; size <<= 1u) {
    for (var stride = size >> 1u; stride > 0u; stride >>= 1u) {
      for (var p = lid; p < ${TOPK_SLICE / 2}u; p += ${TOPK_WG}u) {
        let i = ((p & ~(stride - 1u)) << 1u) | (p & (stride - 1u));
        let j = i + stride;
        let va = vals[i];
        let ia = ids[i];
        let vb = vals[j];
        let ib = ids[j];
        // Blocks with bit 'size' clear end best first; the others the reverse, so the next merge sees a
        // bitonic sequence. The last merge (size = SLICE) leaves the whole slice best first.
        let swap = select(better(va, ia, vb, ib), better(vb, ib, va, ia), (i & size) == 0u);
        if (swap) {
          vals[i] = vb;
          ids[i] = ib;
          vals[j] = va;
          ids[j] = ia;
        }
      }
      workgroupBarrier();
    }
  }
  if (lid < dims.k) {
    outVals[out + lid] = vals[lid];
    outIds[out + lid] = ids[lid];
  }`;

// k rounds: each takes the best remaining entry and marks it taken.
const roundsBody = /* wgsl */ `
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
    for (var h = ${TOPK_WG / 2}u; h > 0u; h >>= 1u) {
      if (lid < h) {
        let pa = redPos[lid];
        let pb = redPos[lid + h];
        if (better(redVal[lid + h], ids[pb], redVal[lid], ids[pa])) {
          redVal[lid] = redVal[lid + h];
          redPos[lid] = pb;
        }
      }
      workgroupBarrier();
    }
    if (lid == 0u) {
      let p = redPos[0];
      outVals[out + round] = vals[p];
      outIds[out + round] = ids[p];
      // Taken: rank below every real value and every empty slot.
      vals[p] = -3.4e38;
      ids[p] = ${TOPK_NONE}u;
    }
    workgroupBarrier();
  }`;

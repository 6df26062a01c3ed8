// Causal GQA attention with an online (flash-style) softmax, one workgroup per (query row, head).
// Keys are visited in blocks of WG: each thread scores one key of the block, the block's max and
// exp-sum are reduced in workgroup memory, and the running (max, sum, output) are rescaled, so any number
// of keys works with fixed memory. Thread t owns output dims t, t+WG, ... (hd <= 4*WG).
// Each row attends keys [ranges[row].x, ranges[row].y) of K/V, which may be the batch itself or a KV
// cache with more rows than queries. lse (log-sum-exp of the scaled scores) is saved for the backward.
//
// The workgroup memory, reductions and the key-block loop are shared text with the split-K decode kernel
// (attention.split.wgsl.ts), so a split covering a whole range computes exactly what this kernel does.
// This kernel's generated source must stay byte-identical: sampling seeds in the e2e suite depend on it.

export const ATTN_WG = 64;
export const ATTN_MAX_HD = 4 * ATTN_WG;
// A finite "minus infinity": exp(NEG - m) underflows to 0 without producing NaN from inf - inf.
export const ATTN_NEG = -3.0e38;

/** Workgroup arrays (scaled query, block probabilities, reduction scratch) and the block reductions. */
export function attentionSharedWgsl(): string {
  return `var<workgroup> qs: array<f32, ${ATTN_MAX_HD}>;
var<workgroup> ps: array<f32, ${ATTN_WG}>;
var<workgroup> red: array<f32, ${ATTN_WG}>;

fn reduceMax(lid: u32, val: f32) -> f32 {
  red[lid] = val;
  workgroupBarrier();
  for (var s = ${ATTN_WG / 2}u; s > 0u; s >>= 1u) {
    if (lid < s) { red[lid] = max(red[lid], red[lid + s]); }
    workgroupBarrier();
  }
  let r = red[0];
  workgroupBarrier();
  return r;
}

fn reduceSum(lid: u32, val: f32) -> f32 {
  red[lid] = val;
  workgroupBarrier();
  for (var s = ${ATTN_WG / 2}u; s > 0u; s >>= 1u) {
    if (lid < s) { red[lid] += red[lid + s]; }
    workgroupBarrier();
  }
  let r = red[0];
  workgroupBarrier();
  return r;
}
`;
}

/**
 * Statements that load the scaled query of (row, h) into qs. Needs `row`, `h`, `lid` and a `dims` with
 * nH, nKV, hd, scale; defines hd, kvh, kvStride, kvBase, qBase.
 */
export function attentionLoadQueryWgsl(): string {
  return `  let hd = dims.hd;
  let kvh = h / (dims.nH / dims.nKV);
  let kvStride = dims.nKV * hd;
  let kvBase = kvh * hd;
  let qBase = row * dims.nH * hd + h * hd;
  for (var d = lid; d < hd; d += ${ATTN_WG}u) { qs[d] = q[qBase + d] * dims.scale; }
`;
}

/**
 * The online softmax over keys [start, end) in blocks of WG, from the first key on. Needs `start`, `end`
 * and the names of attentionLoadQueryWgsl (after a barrier); leaves the running max `m`, exp-sum `l` and
 * unnormalised output `acc` (thread lid's dims lid + c*WG).
 */
export function attentionKeyLoopWgsl(): string {
  return `  var m = ${ATTN_NEG};
  var l = 0.0;
  var acc = vec4<f32>(0.0);
  for (var b = start; b < end; b += ${ATTN_WG}u) {
    let j = b + lid;
    var score = ${ATTN_NEG};
    if (j < end) {
      var dot = 0.0;
      let kb = j * kvStride + kvBase;
      for (var d = 0u; d < hd; d++) { dot += qs[d] * k[kb + d]; }
      score = dot;
    }
    let mNew = max(m, reduceMax(lid, score));
    var p = 0.0;
    if (j < end) { p = exp(score - mNew); }
    ps[lid] = p;
    let corr = exp(m - mNew);
    l = l * corr + reduceSum(lid, p);
    acc *= corr;
    // Each output dim adds the block's keys in order. Dims outer, keys inner: a thread past hd (most of
    // them for a small head) skips the block at once instead of walking every key 4 times doing nothing,
    // which dominated prefill and scoring on a software GPU.
    let cnt = min(${ATTN_WG}u, end - b);
    for (var c = 0u; c < 4u; c++) {
      let d = lid + c * ${ATTN_WG}u;
      if (d >= hd) { break; }
      let vb = b * kvStride + kvBase + d;
      for (var jj = 0u; jj < cnt; jj++) { acc[c] += ps[jj] * v[vb + jj * kvStride]; }
    }
    m = mNew;
    // ps is rewritten by the next block only after every thread has read it.
    workgroupBarrier();
  }
`;
}

export function attentionWgsl(): string {
  return /* wgsl */ `
struct Dims { n: u32, nH: u32, nKV: u32, hd: u32, scale: f32 }
@group(0) @binding(0) var<storage, read> q: array<f32>;
@group(0) @binding(1) var<storage, read> k: array<f32>;
@group(0) @binding(2) var<storage, read> v: array<f32>;
@group(0) @binding(3) var<storage, read> ranges: array<vec2<u32>>;
@group(0) @binding(4) var<storage, read_write> out: array<f32>;
@group(0) @binding(5) var<storage, read_write> lse: array<f32>;
@group(0) @binding(6) var<uniform> dims: Dims;

${attentionSharedWgsl()}
@compute @workgroup_size(${ATTN_WG})
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let idx = wg.x + wg.y * nwg.x;
  if (idx >= dims.n * dims.nH) { return; }
  let row = idx / dims.nH;
  let h = idx - row * dims.nH;
${attentionLoadQueryWgsl()}  let range = ranges[row];
  let start = range.x;
  let end = range.y;
  workgroupBarrier();

${attentionKeyLoopWgsl()}  let inv = select(0.0, 1.0 / l, l > 0.0);
  for (var c = 0u; c < 4u; c++) {
    let d = lid + c * ${ATTN_WG}u;
    if (d < hd) { out[qBase + d] = acc[c] * inv; }
  }
  if (lid == 0u) { lse[idx] = select(${ATTN_NEG}, m + log(l), l > 0.0); }
}
`;
}

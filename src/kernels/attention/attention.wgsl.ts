// Causal GQA attention with an online (flash-style) softmax, one workgroup per (query row, head).
// Keys are visited in blocks of WG: each thread scores one key of the block, the block's max and
// exp-sum are taken from workgroup memory, and the running (max, sum, output) are rescaled, so any number
// of keys works with fixed memory. Thread t owns output dims t, t+WG, ... (hd <= 4*WG).
// Each row attends keys [ranges[row].x, ranges[row].y) of K/V, which may be the batch itself or a KV
// cache with more rows than queries. lse (log-sum-exp of the scaled scores) is saved for the backward.
//
// The workgroup memory, reductions and the key-block loop are shared text with the split-K decode kernel
// (attention.split.wgsl.ts), so a split covering a whole range computes exactly what this kernel does.
// This kernel's arithmetic must stay bit-identical (same operations in the same order): sampling seeds in
// the e2e suite depend on it. Its source is pinned (attention.wgsl.test.ts).

import { treeSumWgsl } from '../common/tree-sum.wgsl';

export const ATTN_WG = 64;
export const ATTN_MAX_HD = 4 * ATTN_WG;
// A finite "minus infinity": exp(NEG - m) underflows to 0 without producing NaN from inf - inf.
export const ATTN_NEG = -3.0e38;

/**
 * Workgroup arrays (scaled query, block scores, block probabilities) and the block sum. A block costs two
 * barriers (scores written, probabilities written), not two barrier trees: the max is exact in any order,
 * so every thread takes it over the block's scores itself, and thread 0, which keeps the exp-sum, adds the
 * probabilities in the tree's order itself (treeSumWgsl). On a software GPU each barrier switches
 * every SIMD group of the workgroup, which dominated prefill and scoring.
 */
export function attentionSharedWgsl(): string {
  return `var<workgroup> qs: array<f32, ${ATTN_MAX_HD}>;
var<workgroup> ss: array<f32, ${ATTN_WG}>;
var<workgroup> ps: array<f32, ${ATTN_WG}>;

${treeSumWgsl('blockSum', '', (i) => `ps[${i}]`, ATTN_WG)}
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
 * and the names of attentionLoadQueryWgsl (after a barrier); leaves the running max `m`, exp-sum `l`
 * (thread 0's only) and unnormalised output `acc` (thread lid's dims lid + c*WG).
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
    ss[lid] = score;
    workgroupBarrier();
    var bm = ss[0];
    for (var i = 1u; i < ${ATTN_WG}u; i++) { bm = max(bm, ss[i]); }
    let mNew = max(m, bm);
    var p = 0.0;
    if (j < end) { p = exp(score - mNew); }
    ps[lid] = p;
    workgroupBarrier();
    let corr = exp(m - mNew);
    // Thread 0 alone keeps the exp-sum (the kernels pass it on after the loop).
    if (lid == 0u) { l = l * corr + blockSum(); }
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
    // No barrier here: the next block writes ss after this block's second barrier (every thread has read
    // ss by then) and ps after its own first one (every thread has finished reading this block's ps).
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
var<workgroup> lsum: f32;

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

${attentionKeyLoopWgsl()}  if (lid == 0u) { lsum = l; }
  workgroupBarrier();
  let inv = select(0.0, 1.0 / lsum, lsum > 0.0);
  for (var c = 0u; c < 4u; c++) {
    let d = lid + c * ${ATTN_WG}u;
    if (d < hd) { out[qBase + d] = acc[c] * inv; }
  }
  if (lid == 0u) { lse[idx] = select(${ATTN_NEG}, m + log(l), l > 0.0); }
}
`;
}

// Training-forward attention (same math and buffers as attention.wgsl.ts: per-row key ranges, GQA, lse
// saved for the backward), FlashAttention-2 style: a workgroup owns T (query row, query head) pairs of one
// KV head's group and walks the union of their key ranges T keys at a time. Each key tile (K and V rows)
// is staged in workgroup memory once for all T pairs, so the group's query heads share one read of K/V
// (the single-pass kernel has one workgroup per (row, head), each reading its whole key range itself).
// T*T threads: thread (a, lane) scores pair a against key lane, then accumulates pair a's output columns
// lane, lane + T, ... over the tile with the online-softmax rescale. Tile rows are padded by one word so
// the T lanes read distinct banks.
//
// The single-pass kernel stays for prefill and scoring: its arithmetic is pinned (attention.wgsl.test.ts,
// the e2e sampling seeds). This one sums in another order, so a training forward's log-probabilities
// match scoring's to f32 rounding, not bit for bit.

import { ATTN_NEG } from './attention.wgsl';
import { KV_TILE_LOAD } from './attention.tile.wgsl';

/** Tile sizes tried, largest first. */
export const ATTN_TRAIN_TILES = [16, 8, 4] as const;

/** Workgroup-memory bytes for head dim hd and tile t. */
export function attentionTrainTileBytes(hd: number, t: number): number {
  return 4 * (2 * t * (hd + 1) + 2 * t * (t + 1) + 2);
}

/** Workgroups = ceil(n * G / t) * nKV (G = nH / nKV). */
export function attentionTrainWgsl(hd: number, t: number): string {
  const pad = hd + 1;
  const nc = Math.ceil(hd / t);
  return /* wgsl */ `
struct Dims { n: u32, nH: u32, nKV: u32, hd: u32, scale: f32 }
@group(0) @binding(0) var<storage, read> q: array<f32>;
@group(0) @binding(1) var<storage, read> k: array<f32>;
@group(0) @binding(2) var<storage, read> v: array<f32>;
@group(0) @binding(3) var<storage, read> ranges: array<u32>;
@group(0) @binding(4) var<storage, read_write> out: array<f32>;
@group(0) @binding(5) var<storage, read_write> lse: array<f32>;
@group(0) @binding(6) var<uniform> dims: Dims;
const HD = ${hd}u;
const T = ${t}u;
const PAD = ${pad}u;
const TP = ${t + 1}u;
const NEG = ${ATTN_NEG};
var<workgroup> sk: array<f32, ${t * pad}>;
var<workgroup> sv: array<f32, ${t * pad}>;
var<workgroup> ss: array<f32, ${t * (t + 1)}>;
var<workgroup> ps: array<f32, ${t * (t + 1)}>;
var<workgroup> wLo: u32;
var<workgroup> wHi: u32;

@compute @workgroup_size(${t * t})
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let G = dims.nH / dims.nKV;
  let total = dims.n * G;
  let tiles = (total + T - 1u) / T;
  let idx = wg.x + wg.y * nwg.x;
  if (idx >= tiles * dims.nKV) { return; }
  let g = idx / tiles;
  let e0 = (idx % tiles) * T;
  let a = lid / T;
  let lane = lid % T;
  let e = min(e0 + a, total - 1u);
  let pairOk = e0 + a < total;
  let row = e / G;
  let qi = row * dims.nH + g * G + e % G;
  let qb = qi * HD;
  var rs = 1u;
  var re = 0u;
  if (pairOk) {
    rs = ranges[2u * row];
    re = ranges[2u * row + 1u];
  }
  // Thread 0: the union of the tile's rows' key ranges.
  if (lid == 0u) {
    var lo = 0xffffffffu;
    var hi = 0u;
    for (var r = e0 / G; r <= (min(e0 + T, total) - 1u) / G; r++) {
      let s = ranges[2u * r];
      let f = ranges[2u * r + 1u];
      if (s < f) { lo = min(lo, s); hi = max(hi, f); }
    }
    wLo = lo;
    wHi = hi;
  }
  let lo = workgroupUniformLoad(&wLo);
  let hi = workgroupUniformLoad(&wHi);
  let kvStride = dims.nKV * HD;
  var m = NEG;
  var l = 0.0;
  var acc: array<f32, ${nc}>;
  for (var j0 = lo; j0 < hi; j0 += T) {
    // Every thread has finished the previous tile's sk/sv/ps.
    workgroupBarrier();
${KV_TILE_LOAD}    workgroupBarrier();
    let key = j0 + lane;
    let live = rs <= key && key < re;
    var score = NEG;
    if (live) {
      var dot = 0.0;
      for (var d = 0u; d < HD; d++) { dot += q[qb + d] * sk[lane * PAD + d]; }
      score = dot * dims.scale;
    }
    ss[a * TP + lane] = score;
    workgroupBarrier();
    // The max is exact in any order; every lane of pair a takes it itself.
    var bm = NEG;
    for (var j = 0u; j < T; j++) { bm = max(bm, ss[a * TP + j]); }
    let mNew = max(m, bm);
    var p = 0.0;
    if (live) { p = exp(score - mNew); }
    ps[a * TP + lane] = p;
    workgroupBarrier();
    let corr = exp(m - mNew);
    var bs = 0.0;
    for (var c = 0u; c < ${nc}u; c++) { acc[c] *= corr; }
    for (var j = 0u; j < T; j++) {
      let pj = ps[a * TP + j];
      bs += pj;
      // A key outside this pair's range (another packed sequence) has p = 0: skipping it keeps that
      // sequence's non-finite V out of this row (0 * inf is NaN) and changes nothing for finite values.
      if (pj == 0.0) { continue; }
      for (var c = 0u; c < ${nc}u; c++) {
        let d = lane + c * T;
        if (d < HD) { acc[c] += pj * sv[j * PAD + d]; }
      }
    }
    l = l * corr + bs;
    m = mNew;
  }
  if (pairOk) {
    let inv = select(0.0, 1.0 / l, l > 0.0);
    for (var c = 0u; c < ${nc}u; c++) {
      let d = lane + c * T;
      if (d < HD) { out[qb + d] = acc[c] * inv; }
    }
    if (lane == 0u) { lse[qi] = select(NEG, m + log(l), l > 0.0); }
  }
}
`;
}

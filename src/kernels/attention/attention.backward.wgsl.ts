// Attention backward (causal within a packed batch via per-row key ranges, GQA), FlashAttention-2 style
// tiles, no float atomics. With P = softmax(scale * q k^T) (lse saved by the forward), D = rowsum(dout * out):
//   dS = P * (dout v^T - D);  dq = scale * dS k;  dk = scale * dS^T q;  dv = P^T dout
// pass 0 (stats): one thread per (row, head): stats[2i] = lse, stats[2i+1] = D (packing both keeps the
//         later passes within 8 storage bindings).
// pass 1 (dq): a workgroup owns T (query row, query head) pairs of one KV head's group and walks the
//         union of their key ranges T keys at a time. Each key tile (K and V rows) is staged in workgroup
//         memory once and used by all T pairs, so the group's query heads share one read of K/V.
// pass 2 (dkv): a workgroup owns T keys of one KV head and walks T (query row, query head) pairs at a
//         time, staging each tile of q and dout rows in workgroup memory; dk and dv accumulate in
//         registers over the pairs. With `perHead` a workgroup takes one query head and writes that head's
//         share to a partials buffer, and pass 3 (dkv_sum) adds the G = nH/nKV shares of each KV head in
//         head order: G times as many workgroups (the 0.5B model has only 2 KV heads), still one writer per
//         output element. Without it a workgroup walks all G heads itself.
// Both passes: T*T threads; phase 1 gives thread (a, lane) one (pair, key) score (the row it owns, `a`,
// is read from storage and is the same for the T lanes: a broadcast; the tile's rows come from workgroup
// memory, rows padded by one word so the T lanes hit distinct banks); phase 2 lets thread (a, lane)
// accumulate its output row a's columns lane, lane + T, ... over the tile. Tiles whose rows' ranges miss
// the workgroup's keys are skipped; with `packed` (causal packed sequences, K/V rows = query rows) the
// dkv scan starts at the block's first key row and stops at the first tile that starts a later sequence.
// Shaders are generated per head dim (constant loop bounds) and tile size.

import { KV_TILE_LOAD } from './attention.tile.wgsl';

export const ATTN_BWD_WG = 64;
export const ATTN_BWD_MAX_HD = 256;
/** Tile sizes tried, largest first: T keys x T pairs, T*T threads. */
export const ATTN_BWD_TILES = [16, 8, 4] as const;

const PARAMS = 'struct Params { n: u32, m: u32, nH: u32, nKV: u32, hd: u32, scale: f32, packed: u32 }';

const ENTRY = (threads: number) => `@compute @workgroup_size(${threads})
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32)`;

/** Workgroup-memory bytes of the dkv pass (the larger of dq and dkv) for head dim hd and tile t. */
export function attentionBackwardTileBytes(hd: number, t: number): number {
  return 4 * (2 * t * (hd + 1) + 2 * t * (t + 1) + 4 * t + 2);
}

export function attentionBackwardStatsWgsl(): string {
  return /* wgsl */ `${PARAMS}
@group(0) @binding(0) var<storage, read> out: array<f32>;
@group(0) @binding(1) var<storage, read> dout: array<f32>;
@group(0) @binding(2) var<storage, read> lse: array<f32>;
@group(0) @binding(3) var<storage, read_write> stats: array<f32>;
@group(0) @binding(4) var<uniform> P: Params;
${ENTRY(ATTN_BWD_WG)} {
  let idx = (wg.x + wg.y * nwg.x) * ${ATTN_BWD_WG}u + lid;
  if (idx >= P.n * P.nH) { return; }
  let b = idx * P.hd;
  var dsum = 0.0;
  for (var d = 0u; d < P.hd; d++) { dsum += out[b + d] * dout[b + d]; }
  stats[2u * idx] = lse[idx];
  stats[2u * idx + 1u] = dsum;
}
`;
}

// Thread 0 sets wLo/wHi to the union of the key ranges of query rows r0..r1 (inclusive).
const RANGE_UNION = `  if (lid == 0u) {
    var lo = 0xffffffffu;
    var hi = 0u;
    for (var r = r0; r <= r1; r++) {
      let s = ranges[2u * r];
      let e = ranges[2u * r + 1u];
      if (s < e) { lo = min(lo, s); hi = max(hi, e); }
    }
    wLo = lo;
    wHi = hi;
  }
`;

/** dq pass: workgroups = ceil(n*G / t) * nKV. */
export function attentionBackwardDqWgsl(hd: number, t: number): string {
  const pad = hd + 1;
  const nc = Math.ceil(hd / t);
  return /* wgsl */ `${PARAMS}
@group(0) @binding(0) var<storage, read> q: array<f32>;
@group(0) @binding(1) var<storage, read> k: array<f32>;
@group(0) @binding(2) var<storage, read> v: array<f32>;
@group(0) @binding(3) var<storage, read> dout: array<f32>;
@group(0) @binding(4) var<storage, read> stats: array<f32>;
@group(0) @binding(5) var<storage, read> ranges: array<u32>;
@group(0) @binding(6) var<storage, read_write> dq: array<f32>;
@group(0) @binding(7) var<uniform> P: Params;
const HD = ${hd}u;
const T = ${t}u;
const PAD = ${pad}u;
var<workgroup> sk: array<f32, ${t * pad}>;
var<workgroup> sv: array<f32, ${t * pad}>;
var<workgroup> sds: array<f32, ${t * (t + 1)}>;
var<workgroup> wLo: u32;
var<workgroup> wHi: u32;
${ENTRY(t * t)} {
  let G = P.nH / P.nKV;
  let total = P.n * G;
  let tiles = (total + T - 1u) / T;
  let idx = wg.x + wg.y * nwg.x;
  if (idx >= tiles * P.nKV) { return; }
  let g = idx / tiles;
  let e0 = (idx % tiles) * T;
  let a = lid / T;
  let lane = lid % T;
  let e = e0 + a;
  let pairOk = e < total;
  let row = min(e, total - 1u) / G;
  let qb = (row * P.nH + g * G + min(e, total - 1u) % G) * HD;
  var rs = 1u;
  var re = 0u;
  var lse = 0.0;
  var D = 0.0;
  if (pairOk) {
    rs = ranges[2u * row];
    re = ranges[2u * row + 1u];
    lse = stats[2u * (qb / HD)];
    D = stats[2u * (qb / HD) + 1u];
  }
  let r0 = e0 / G;
  let r1 = (min(e0 + T, total) - 1u) / G;
${RANGE_UNION}  let lo = workgroupUniformLoad(&wLo);
  let hi = workgroupUniformLoad(&wHi);
  let kvStride = P.nKV * HD;
  var acc: array<f32, ${nc}>;
  for (var j0 = lo; j0 < hi; j0 += T) {
    // Every thread has finished the previous tile's sk/sv/sds.
    workgroupBarrier();
${KV_TILE_LOAD}    workgroupBarrier();
    let key = j0 + lane;
    var ds = 0.0;
    if (rs <= key && key < re) {
      var s = 0.0;
      var dp = 0.0;
      for (var d = 0u; d < HD; d++) {
        s += q[qb + d] * sk[lane * PAD + d];
        dp += dout[qb + d] * sv[lane * PAD + d];
      }
      let p = exp(s * P.scale - lse);
      ds = p * (dp - D);
    }
    sds[a * (T + 1u) + lane] = ds;
    workgroupBarrier();
    for (var j = 0u; j < T; j++) {
      let w = sds[a * (T + 1u) + j];
      for (var c = 0u; c < ${nc}u; c++) {
        let d = lane + c * T;
        if (d < HD) { acc[c] += w * sk[j * PAD + d]; }
      }
    }
  }
  if (pairOk) {
    for (var c = 0u; c < ${nc}u; c++) {
      let d = lane + c * T;
      if (d < HD) { dq[qb + d] = P.scale * acc[c]; }
    }
  }
}
`;
}

/**
 * dkv pass: workgroups = ceil(m / t) * (perHead ? nH : nKV). perHead writes `part` f32 [2, m, nH, hd]
 * (dk shares, then dv shares) for attentionBackwardDkvSumWgsl; otherwise dk, dv directly.
 */
export function attentionBackwardDkvWgsl(hd: number, t: number, perHead: boolean): string {
  const pad = hd + 1;
  const nc = Math.ceil(hd / t);
  const outputs = perHead
    ? `@group(0) @binding(6) var<storage, read_write> part: array<f32>;
@group(0) @binding(7) var<uniform> P: Params;`
    : `@group(0) @binding(6) var<storage, read_write> dk: array<f32>;
@group(0) @binding(7) var<storage, read_write> dv: array<f32>;
@group(0) @binding(8) var<uniform> P: Params;`;
  const store = perHead
    ? `let pb = (key * P.nH + h0) * HD;
        part[pb + d] = P.scale * accK[c];
        part[P.m * P.nH * HD + pb + d] = accV[c];`
    : `dk[kb + d] = P.scale * accK[c];
        dv[kb + d] = accV[c];`;
  return /* wgsl */ `${PARAMS}
@group(0) @binding(0) var<storage, read> q: array<f32>;
@group(0) @binding(1) var<storage, read> k: array<f32>;
@group(0) @binding(2) var<storage, read> v: array<f32>;
@group(0) @binding(3) var<storage, read> dout: array<f32>;
@group(0) @binding(4) var<storage, read> stats: array<f32>;
@group(0) @binding(5) var<storage, read> ranges: array<u32>;
${outputs}
const HD = ${hd}u;
const T = ${t}u;
const PAD = ${pad}u;
const TP = ${t + 1}u;
var<workgroup> sq: array<f32, ${t * pad}>;
var<workgroup> sdo: array<f32, ${t * pad}>;
var<workgroup> sp: array<f32, ${t * (t + 1)}>;
var<workgroup> sds: array<f32, ${t * (t + 1)}>;
var<workgroup> sl: array<f32, ${t}>;
var<workgroup> sd: array<f32, ${t}>;
var<workgroup> sr: array<vec2<u32>, ${t}>;
var<workgroup> wLo: u32;
var<workgroup> wHi: u32;
${ENTRY(t * t)} {
  let G = P.nH / P.nKV;
  let HS = ${perHead ? '1u' : 'G'};
  let sets = P.nH / HS;
  let blocks = (P.m + T - 1u) / T;
  let idx = wg.x + wg.y * nwg.x;
  if (idx >= blocks * sets) { return; }
  let h0 = (idx % sets) * HS;
  let g = h0 / G;
  let k0 = (idx / sets) * T;
  let k1 = min(k0 + T, P.m);
  let a = lid / T;
  let lane = lid % T;
  let key = k0 + a;
  let kb = (min(key, P.m - 1u) * P.nKV + g) * HD;
  let total = P.n * HS;
  var accK: array<f32, ${nc}>;
  var accV: array<f32, ${nc}>;
  // A packed batch's rows before k0 cannot see its keys.
  let first = select(0u, k0 * HS, P.packed == 1u);
  for (var e0 = first; e0 < total; e0 += T) {
    // Every thread has finished the previous tile (and read wLo/wHi).
    workgroupBarrier();
    let r0 = e0 / HS;
    let r1 = (min(e0 + T, total) - 1u) / HS;
${RANGE_UNION}    let lo = workgroupUniformLoad(&wLo);
    let hi = workgroupUniformLoad(&wHi);
    // Packed: ranges start in row order, so once the tile's first row starts after the block, all later do.
    if (P.packed == 1u && lo < hi && lo >= k1) { break; }
    if (hi <= k0 || lo >= k1) { continue; }
    for (var i = lid; i < T * HD; i += T * T) {
      let j = i / HD;
      let d = i % HD;
      let e = e0 + j;
      var qx = 0.0;
      var ox = 0.0;
      if (e < total) {
        let b = ((e / HS) * P.nH + h0 + e % HS) * HD + d;
        qx = q[b];
        ox = dout[b];
      }
      sq[j * PAD + d] = qx;
      sdo[j * PAD + d] = ox;
    }
    if (lid < T) {
      let e = e0 + lid;
      var r = vec2<u32>(1u, 0u);
      var l = 0.0;
      var dd = 0.0;
      if (e < total) {
        let row = e / HS;
        let qi = row * P.nH + h0 + e % HS;
        r = vec2<u32>(ranges[2u * row], ranges[2u * row + 1u]);
        l = stats[2u * qi];
        dd = stats[2u * qi + 1u];
      }
      sr[lid] = r;
      sl[lid] = l;
      sd[lid] = dd;
    }
    workgroupBarrier();
    // Pair lane (query) against key a.
    let r = sr[lane];
    var p = 0.0;
    var ds = 0.0;
    if (key < P.m && r.x <= key && key < r.y) {
      var s = 0.0;
      var dp = 0.0;
      for (var d = 0u; d < HD; d++) {
        s += sq[lane * PAD + d] * k[kb + d];
        dp += sdo[lane * PAD + d] * v[kb + d];
      }
      p = exp(s * P.scale - sl[lane]);
      ds = p * (dp - sd[lane]);
    }
    sp[lane * TP + a] = p;
    sds[lane * TP + a] = ds;
    workgroupBarrier();
    for (var j = 0u; j < T; j++) {
      let pj = sp[j * TP + a];
      let sj = sds[j * TP + a];
      for (var c = 0u; c < ${nc}u; c++) {
        let d = lane + c * T;
        if (d < HD) {
          accV[c] += pj * sdo[j * PAD + d];
          accK[c] += sj * sq[j * PAD + d];
        }
      }
    }
  }
  if (key < P.m) {
    for (var c = 0u; c < ${nc}u; c++) {
      let d = lane + c * T;
      if (d < HD) {
        ${store}
      }
    }
  }
}
`;
}

/** dkv_sum pass: one thread per element of dk (m * nKV * hd); adds the G query heads' shares in order. */
export function attentionBackwardDkvSumWgsl(): string {
  return /* wgsl */ `${PARAMS}
@group(0) @binding(0) var<storage, read> part: array<f32>;
@group(0) @binding(1) var<storage, read_write> dk: array<f32>;
@group(0) @binding(2) var<storage, read_write> dv: array<f32>;
@group(0) @binding(3) var<uniform> P: Params;
${ENTRY(ATTN_BWD_WG)} {
  let idx = (wg.x + wg.y * nwg.x) * ${ATTN_BWD_WG}u + lid;
  if (idx >= P.m * P.nKV * P.hd) { return; }
  let G = P.nH / P.nKV;
  let row = idx / (P.nKV * P.hd);
  let g = (idx / P.hd) % P.nKV;
  let d = idx % P.hd;
  let b = (row * P.nH + g * G) * P.hd + d;
  let half = P.m * P.nH * P.hd;
  var sk = 0.0;
  var sv = 0.0;
  for (var i = 0u; i < G; i++) {
    sk += part[b + i * P.hd];
    sv += part[half + b + i * P.hd];
  }
  dk[idx] = sk;
  dv[idx] = sv;
}
`;
}

// Decode attention over a KV cache for a few query rows: one workgroup per (row, KV head[, key slice])
// serving all G = nH/nKV query heads that share that KV head, so each K and V row is read from memory
// once per workgroup instead of once per query head.
//
// Per block of WG keys (WG threads):
//   scores:  thread t scores key b+t against the G scaled queries (in workgroup memory), K read as vec4;
//   max:     the block max per head, the only cross-thread step inside the loop: subgroupMax plus one
//            slot per subgroup (with `subgroups`), else a two-level max over 16 chunks of the scores;
//   softmax: each thread keeps its OWN running exp-sum per head (the running max is workgroup-uniform, so
//            every thread rescales by the same factor); the sums are reduced once, after the last block;
//   P·V:     thread (kp, d4) owns output dims 4*d4..4*d4+3 of all G heads for keys kp, kp+KP, ... of the
//            block: V rows are read coalesced, once, and the accumulators are reduced once at the end.
// So a block costs 2 barriers (3 without subgroups) rather than two barrier trees per head, and the
// score, exp and P·V work of all G heads is spread over the whole workgroup.
//
// Key slices ("split" variant): `splits` workgroups per (row, KV head) each take an even share of the
// range (whole 64-key units, at least minKeys; computed on the GPU from the range as in
// attention.split.wgsl.ts, so the split count is fixed per recording but short ranges use one slice) and
// write their partial (acc, m, l) in attention.split's partials layout; attention.split's combine kernel
// then finishes them. The single variant writes out and lse directly (one dispatch).
//
// Shared prefix ("prefixed" variant): row r attends the keys of prefixes[r] and then those of ranges[r],
// as one sequence of keys (a decode batch's sequences share their prompt's first rows, stored once). The
// loops run over that virtual sequence and keyRow maps it to cache rows, so with an empty prefix, or in
// the plain variant, each key is where it was and the arithmetic is the same.

import { ATTN_NEG } from './attention.wgsl';
import { SUBGROUP_COUNTER_WGSL, SUBGROUP_INDEX_WGSL } from '../common/subgroups.wgsl';

/** Threads per workgroup and keys per block. */
export const ATTN_DECODE_WG = 256;
/** Chunks of the two-level max without subgroups. */
const CHUNKS = 16;
/** Slots per head for per-subgroup maxima: WebGPU subgroups have at least 4 invocations. */
const SLOTS = ATTN_DECODE_WG / 4;

export interface AttentionDecodeVariant {
  /** Query heads per KV head (nH / nKV). */
  group: number;
  headDim: number;
  subgroups: boolean;
  /** Write partials for attention.split's combine kernel instead of out/lse. */
  split: boolean;
  /** Read each row's shared-prefix key range (u32 [n, 2]) and attend it before the row's own range. */
  prefixed?: boolean;
}

/** Bytes of workgroup memory the variant declares (checked against the device limit by the caller). */
export function attentionDecodeWorkgroupBytes(v: Pick<AttentionDecodeVariant, 'group' | 'headDim'>): number {
  return 4 * (v.group * v.headDim + v.group * ATTN_DECODE_WG + v.group * SLOTS + 4 * ATTN_DECODE_WG + 1);
}

const heads = (G: number, f: (g: number) => string, sep = '\n    ') => Array.from({ length: G }, (_, g) => f(g)).join(sep);

export function attentionDecodeWgsl(v: AttentionDecodeVariant): string {
  const G = v.group;
  const D4 = v.headDim / 4;
  const T = ATTN_DECODE_WG;
  const KP = Math.floor(T / D4);
  if (!Number.isInteger(D4) || D4 < 1 || D4 > T) throw new Error(`attentionDecodeWgsl: headDim must be a multiple of 4 in 4..${4 * T}, got ${v.headDim}`);
  if (!Number.isInteger(G) || G < 1) throw new Error(`attentionDecodeWgsl: group must be a positive integer, got ${G}`);

  // Block max per head into mx<g> (starting from the running max m<g>).
  const blockMax = v.subgroups
    ? `${heads(G, (g) => `let bm${g} = subgroupMax(s${g});`)}
    if (sid == 0u) { ${heads(G, (g) => `wmax[${g * SLOTS}u + sgIndex] = bm${g};`, ' ')} }
    workgroupBarrier();
    ${heads(G, (g) => `var mx${g} = m${g};`)}
    for (var w = 0u; w < sgTotal; w++) { ${heads(G, (g) => `mx${g} = max(mx${g}, wmax[${g * SLOTS}u + w]);`, ' ')} }`
    : `${heads(G, (g) => `ps[${g * T}u + lid] = s${g};`)}
    workgroupBarrier();
    for (var i = lid; i < ${G * CHUNKS}u; i += ${T}u) {
      let base = (i / ${CHUNKS}u) * ${T}u + (i % ${CHUNKS}u) * ${T / CHUNKS}u;
      var mm = ${ATTN_NEG};
      for (var e = 0u; e < ${T / CHUNKS}u; e++) { mm = max(mm, ps[base + e]); }
      wmax[(i / ${CHUNKS}u) * ${SLOTS}u + i % ${CHUNKS}u] = mm;
    }
    workgroupBarrier();
    ${heads(G, (g) => `var mx${g} = m${g};`)}
    for (var w = 0u; w < ${CHUNKS}u; w++) { ${heads(G, (g) => `mx${g} = max(mx${g}, wmax[${g * SLOTS}u + w]);`, ' ')} }`;

  // Sum of the threads' private exp-sums per head into l<g>, once after the key loop.
  const sumL = v.subgroups
    ? `${heads(G, (g) => `let ls${g} = subgroupAdd(lt${g});`, '\n  ')}
  if (sid == 0u) { ${heads(G, (g) => `wmax[${g * SLOTS}u + sgIndex] = ls${g};`, ' ')} }
  workgroupBarrier();
  ${heads(G, (g) => `var l${g} = 0.0;`, '\n  ')}
  for (var w = 0u; w < sgTotal; w++) { ${heads(G, (g) => `l${g} += wmax[${g * SLOTS}u + w];`, ' ')} }`
    : `${heads(G, (g) => `ps[${g * T}u + lid] = lt${g};`, '\n  ')}
  workgroupBarrier();
  for (var i = lid; i < ${G * CHUNKS}u; i += ${T}u) {
    let base = (i / ${CHUNKS}u) * ${T}u + (i % ${CHUNKS}u) * ${T / CHUNKS}u;
    var ss = 0.0;
    for (var e = 0u; e < ${T / CHUNKS}u; e++) { ss += ps[base + e]; }
    wmax[(i / ${CHUNKS}u) * ${SLOTS}u + i % ${CHUNKS}u] = ss;
  }
  workgroupBarrier();
  ${heads(G, (g) => `var l${g} = 0.0;`, '\n  ')}
  for (var w = 0u; w < ${CHUNKS}u; w++) { ${heads(G, (g) => `l${g} += wmax[${g * SLOTS}u + w];`, ' ')} }`;

  // Output of head g (a runtime index: one loop body keeps the barrier count, and compile time, small).
  const store = v.split
    ? `let pidx = (row * dims.nH + h0 + g) * dims.splits + split;
      partials[pidx * ${v.headDim}u + 4u * lid] = sum.x;
      partials[pidx * ${v.headDim}u + 4u * lid + 1u] = sum.y;
      partials[pidx * ${v.headDim}u + 4u * lid + 2u] = sum.z;
      partials[pidx * ${v.headDim}u + 4u * lid + 3u] = sum.w;
      if (lid == 0u) {
        let sb = dims.n * dims.nH * dims.splits * ${v.headDim}u + 2u * pidx;
        partials[sb] = ms[g];
        partials[sb + 1u] = ls[g];
      }`
    : `let l = ls[g];
      out[(row * dims.nH + h0 + g) * ${D4}u + lid] = sum * select(0.0, 1.0 / l, l > 0.0);
      if (lid == 0u) { lse[row * dims.nH + h0 + g] = select(${ATTN_NEG}, ms[g] + log(l), l > 0.0); }`;

  const outputs = v.split
    ? `@group(0) @binding(4) var<storage, read_write> partials: array<f32>;
@group(0) @binding(5) var<uniform> dims: Dims;
${v.prefixed ? '@group(0) @binding(6) var<storage, read> prefixes: array<vec2<u32>>;' : ''}`
    : `@group(0) @binding(4) var<storage, read_write> out: array<vec4<f32>>;
@group(0) @binding(5) var<storage, read_write> lse: array<f32>;
@group(0) @binding(6) var<uniform> dims: Dims;
${v.prefixed ? '@group(0) @binding(7) var<storage, read> prefixes: array<vec2<u32>>;' : ''}`;

  // The row's keys as one virtual sequence [0, len): its prefix's, then its own range's (keyRow maps).
  const keys = `let range = ranges[pair / dims.nKV];
  let pre = ${v.prefixed ? 'prefixes[pair / dims.nKV]' : 'vec2<u32>(0u, 0u)'};
  let preLen = select(0u, pre.y - pre.x, pre.y > pre.x);
  let len = preLen + select(0u, range.y - range.x, range.y > range.x);`;
  const slice = v.split
    ? `let pair = idx / dims.splits;
  let split = idx - pair * dims.splits;
  ${keys}
  let share = (len + dims.splits - 1u) / dims.splits;
  let keys = max(dims.minKeys, ((share + 63u) / 64u) * 64u);
  // Slices past the end of the range hold nothing; the combine kernel does not read them.
  if (split * keys >= len) { return; }
  let start = split * keys;
  let end = min(len, start + keys);`
    : `let pair = idx;
  ${keys}
  let start = 0u;
  let end = len;`;

  const sgSetup = v.subgroups
    ? `  ${SUBGROUP_INDEX_WGSL}`
    : '  workgroupBarrier();';

  return /* wgsl */ `${v.subgroups ? 'enable subgroups;\ndiagnostic(off, subgroup_uniformity);\n' : ''}
struct Dims { n: u32, nH: u32, nKV: u32, hd: u32, scale: f32, splits: u32, minKeys: u32 }
@group(0) @binding(0) var<storage, read> q: array<vec4<f32>>;
@group(0) @binding(1) var<storage, read> k: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read> v: array<vec4<f32>>;
@group(0) @binding(3) var<storage, read> ranges: array<vec2<u32>>;
${outputs}

var<workgroup> qs: array<vec4<f32>, ${G * D4}>;
var<workgroup> ps: array<f32, ${G * T}>;
var<workgroup> wmax: array<f32, ${G * SLOTS}>;
var<workgroup> red: array<vec4<f32>, ${T}>;
${v.subgroups ? SUBGROUP_COUNTER_WGSL : ''}

// Cache row of key j of the virtual sequence: the prefix's first preLen keys, then the own range's.
fn keyRow(j: u32, preX: u32, preLen: u32, ownX: u32) -> u32 {
  return select(ownX + (j - preLen), preX + j, j < preLen);
}

@compute @workgroup_size(${T})
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let idx = wg.x + wg.y * nwg.x;
  if (idx >= dims.n * dims.nKV * ${v.split ? 'dims.splits' : '1u'}) { return; }
  ${slice}
  let row = pair / dims.nKV;
  let kvh = pair - row * dims.nKV;
  let h0 = kvh * ${G}u;
  for (var i = lid; i < ${G * D4}u; i += ${T}u) {
    qs[i] = q[(row * dims.nH + h0) * ${D4}u + i] * dims.scale;
  }
${sgSetup}

  let kvStride = dims.nKV * ${D4}u;
  let kvBase = kvh * ${D4}u;
  // P·V role: dims 4*d4.. of every head, keys kp, kp + KP, ... of each block (threads past KP*D4 idle).
  let d4 = lid % ${D4}u;
  let kp = lid / ${D4}u;
  ${heads(G, (g) => `var m${g} = ${ATTN_NEG}; var lt${g} = 0.0; var acc${g} = vec4<f32>(0.0);`, '\n  ')}
  for (var b = start; b < end; b += ${T}u) {
    let j = b + lid;
    ${heads(G, (g) => `var s${g} = ${ATTN_NEG};`)}
    if (j < end) {
      ${heads(G, (g) => `var dot${g} = 0.0;`, '\n      ')}
      let kb = keyRow(j, pre.x, preLen, range.x) * kvStride + kvBase;
      for (var c = 0u; c < ${D4}u; c++) {
        let kk = k[kb + c];
        ${heads(G, (g) => `dot${g} += dot(qs[${g * D4}u + c], kk);`, '\n        ')}
      }
      ${heads(G, (g) => `s${g} = dot${g};`, '\n      ')}
    }
    ${blockMax}
    ${heads(G, (g) => `var p${g} = 0.0;`)}
    if (j < end) { ${heads(G, (g) => `p${g} = exp(s${g} - mx${g});`, ' ')} }
    ${heads(G, (g) => `ps[${g * T}u + lid] = p${g};`)}
    ${heads(G, (g) => `let corr${g} = exp(m${g} - mx${g}); lt${g} = lt${g} * corr${g} + p${g}; acc${g} *= corr${g}; m${g} = mx${g};`)}
    workgroupBarrier();
    if (kp < ${KP}u) {
      let cnt = min(${T}u, end - b);
      for (var jj = kp; jj < cnt; jj += ${KP}u) {
        let vv = v[keyRow(b + jj, pre.x, preLen, range.x) * kvStride + kvBase + d4];
        ${heads(G, (g) => `acc${g} += ps[${g * T}u + jj] * vv;`, '\n        ')}
      }
    }
    // ps and wmax are rewritten by the next block only after every thread is done with them.
    workgroupBarrier();
  }

  ${sumL}
  // The KP key-parts' accumulators of each head, summed by the D4 threads that own the output dims.
  var accs = array<vec4<f32>, ${G}>(${heads(G, (g) => `acc${g}`, ', ')});
  let ms = array<f32, ${G}>(${heads(G, (g) => `m${g}`, ', ')});
  let ls = array<f32, ${G}>(${heads(G, (g) => `l${g}`, ', ')});
  for (var g = 0u; g < ${G}u; g++) {
    red[lid] = accs[g];
    workgroupBarrier();
    if (lid < ${D4}u) {
      var sum = vec4<f32>(0.0);
      for (var p = 0u; p < ${KP}u; p++) { sum += red[p * ${D4}u + lid]; }
      ${store}
    }
    workgroupBarrier();
  }
}
`;
}

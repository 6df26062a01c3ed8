// y[n, yOffset + o] (+)= sum_i x[n, i] * deq(W)[o, i] (+ b[o]) with W 4-bit (q4.ref.ts), dequantized in
// registers as it is read: no f16 or f32 copy of the weights exists anywhere.
//
// Two kernels, as for the f16 matmul:
// - rows (N <= Q4_SMALL_N, decode): memory-bound, so each group of 32 weights is one vec4<u32> load plus
//   one scale load, and all N rows of x are multiplied with it while it is in registers. A workgroup of 64
//   threads owns Q4_ROWS output rows, taken in pairs so that the x values a lane loads serve two rows and
//   two weight loads are in flight. With `subgroups` each subgroup owns whole pairs (its lanes stride over
//   the rows' groups, subgroupAdd reduces), so no workgroup memory or barriers are in the reduction; that
//   kernel has Q4_ROWS_SG_WG invocations so that 32-wide subgroups each own one pair at Q4_ROWS.
//   Without, 64 / (rows / 2) lanes per pair reduce through workgroup memory.
// - tiled (prefill / training): common/tile.wgsl.ts with 16, 32, 64 or 128 rows x 64 columns per workgroup,
//   K step 32 = one quantization group, so a W tile row needs 4 words and 1 scale; the tile is dequantized
//   once into workgroup memory and reused by every x row of the tile. 16 KiB of workgroup memory at 64
//   rows (the WebGPU default limit), 24 KiB at 128, taken only where the device grants it.

import { matmulStoreWgsl } from '../matmul/matmul.wgsl';
import { registerTileWgsl, TILE_COLS, type TileRows } from '../common/tile.wgsl';
import { SUBGROUP_COUNTER_WGSL, SUBGROUP_INDEX_WGSL } from '../common/subgroups.wgsl';
import { pairPartialsWgsl, pairTreeSumWgsl, q4Enables, q4ScaleDecl, Q4_UNPACK_WGSL, type Q4Path } from './q4.wgsl';

export interface Q4MatmulVariant {
  bias: boolean;
  accumulate: boolean;
}

export const Q4_TILE = TILE_COLS;
export const Q4_TILE_K = 32;
/**
 * Most rows of x the rows kernel (and the fused decode linears) take: a decode step of up to 8 sequences,
 * a default Flow-GRPO group, reads each weight once. Each row adds two accumulators per thread.
 */
export const Q4_SMALL_N = 8;
/** Output rows per workgroup of the rows kernel (both reductions work on row pairs). */
export const Q4_ROWS = 16;
export const Q4_ROWS_WG = 64;
/**
 * Invocations per workgroup of the rows kernel with subgroups: 8 subgroups of 32, so at Q4_ROWS each
 * owns one row pair. A decode matvec is bound by the latency of each subgroup's chain of loads, not by
 * bandwidth (the lm-head's 77 MB at Qwen2.5-0.5B shapes), so pairs run side by side rather than in turn.
 */
export const Q4_ROWS_SG_WG = 256;
/** Rows per workgroup the rows kernel can be built for: lanes per pair (64 / (rows / 2)) stay a power of two >= 2. */
export const Q4_ROWS_CHOICES = [2, 4, 8, 16, 32, 64];

/** Bindings, unpacking and the `store(row, col, acc)` epilogue every 4-bit matmul kernel shares (also q4matmul.sgm.wgsl.ts). */
export function header(p: Q4Path, v: Q4MatmulVariant, wType: 'u32' | 'vec4<u32>', xType: 'f32' | 'vec4<f32>'): string {
  return `struct Dims { n: u32, inDim: u32, outDim: u32, yStride: u32, yOffset: u32, wRow: u32 }
@group(0) @binding(0) var<storage, read> Wq: array<${wType}>;
${q4ScaleDecl(p, 1)}
@group(0) @binding(2) var<storage, read> x: array<${xType}>;
@group(0) @binding(3) var<storage, read_write> y: array<f32>;
@group(0) @binding(4) var<uniform> dims: Dims;
${v.bias ? '@group(0) @binding(5) var<storage, read> b: array<f32>;' : ''}
${Q4_UNPACK_WGSL}
${matmulStoreWgsl(v)}`;
}

/** Row r of x against the groups of two weight rows (qa, sa) and (qb, sb): x is loaded once for both. */
function pairDots(r: number): string {
  const xs = range(8).map((v) => `let x${r}_${v} = x[${r}u * dims.inDim / 4u + g * 8u + ${v}u];`).join(' ');
  const dots = (q: string) =>
    range(4)
      .map((c) => `dot(q4lo(${q}.${'xyzw'[c]}), x${r}_${2 * c}) + dot(q4hi(${q}.${'xyzw'[c]}), x${r}_${2 * c + 1})`)
      .join(' + ');
  return `{ ${xs}
          acc${r} += sa * (${dots('qa')});
          bcc${r} += sb * (${dots('qb')}); }`;
}

const range = (n: number) => Array.from({ length: n }, (_, i) => i);

/** Rows kernel for exactly `nr` (1..Q4_SMALL_N) rows of x, with or without subgroups, `rows` output rows per workgroup. */
export function q4RowsWgsl(p: Q4Path, v: Q4MatmulVariant, nr: number, subgroups: boolean, rows = Q4_ROWS): string {
  if (!Number.isInteger(nr) || nr < 1 || nr > Q4_SMALL_N) throw new Error(`q4RowsWgsl: nr must be 1..${Q4_SMALL_N}, got ${nr}`);
  if (!Q4_ROWS_CHOICES.includes(rows)) throw new Error(`q4RowsWgsl: rows per workgroup must be one of ${Q4_ROWS_CHOICES.join(', ')}, got ${rows}`);
  const lanes = Q4_ROWS_WG / (rows / 2);
  const accDecl = range(nr).map((r) => `var acc${r} = 0.0;`).join(' ');
  if (subgroups) {
    // Subgroups get a dense index from a workgroup counter (WGSL has no portable subgroup id and does not
    // promise which invocations form a subgroup); the subgroup then owns row pairs idx, idx + count, ...
    // Two rows per pass: the x values a lane loads serve both, and two weight loads are in flight at once.
    // Every branch around subgroupAdd depends only on values equal across the subgroup, which the
    // uniformity analysis cannot see, hence the diagnostic.
    const accB = range(nr).map((r) => `var bcc${r} = 0.0;`).join(' ');
    return /* wgsl */ `${q4Enables(p, true)}diagnostic(off, subgroup_uniformity);
${header(p, v, 'vec4<u32>', 'vec4<f32>')}
${SUBGROUP_COUNTER_WGSL}

@compute @workgroup_size(${Q4_ROWS_SG_WG})
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  ${SUBGROUP_INDEX_WGSL}
  let row0 = (wg.x + wg.y * nwg.x) * ${rows}u;
  let G = dims.inDim / 32u;
  for (var r = 2u * sgIndex; r < ${rows}u; r += 2u * sgTotal) {
    let o = row0 + r;
    if (o >= dims.outDim) { break; }
    let hasB = o + 1u < dims.outDim;
    ${accDecl}
    ${accB}
    let abase = (dims.wRow + o) * G;
    let bbase = abase + G;
    for (var g0 = 0u; g0 < G; g0 += sgSize) {
      let g = g0 + sid;
      if (g < G) {
        let qa = Wq[abase + g];
        let sa = S_at(abase + g);
        var qb = vec4<u32>(0x77777777u);
        var sb = 0.0;
        if (hasB) { qb = Wq[bbase + g]; sb = S_at(bbase + g); }
        ${range(nr).map((r) => pairDots(r)).join('\n        ')}
      }
    }
    ${range(nr).map((r) => `let ta${r} = subgroupAdd(acc${r}); let tb${r} = subgroupAdd(bcc${r});`).join('\n    ')}
    if (sid == 0u) {
      ${range(nr).map((r) => `store(${r}u, o, ta${r});`).join(' ')}
      if (hasB) { ${range(nr).map((r) => `store(${r}u, o + 1u, tb${r});`).join(' ')} }
    }
  }
}
`;
  }
  const P = Q4_ROWS_WG;
  return /* wgsl */ `${q4Enables(p)}
${header(p, v, 'vec4<u32>', 'vec4<f32>')}
${pairPartialsWgsl(P, nr)}

@compute @workgroup_size(${P})
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let lane = lid % ${lanes}u;
  let o = (wg.x + wg.y * nwg.x) * ${rows}u + 2u * (lid / ${lanes}u);
  let hasB = o + 1u < dims.outDim;
  let G = dims.inDim / 32u;
  ${accDecl}
  ${range(nr).map((r) => `var bcc${r} = 0.0;`).join(' ')}
  if (o < dims.outDim) {
    let abase = (dims.wRow + o) * G;
    let bbase = abase + G;
    for (var g = lane; g < G; g += ${lanes}u) {
      let qa = Wq[abase + g];
      let sa = S_at(abase + g);
      var qb = vec4<u32>(0x77777777u);
      var sb = 0.0;
      if (hasB) { qb = Wq[bbase + g]; sb = S_at(bbase + g); }
      ${range(nr).map((r) => pairDots(r)).join('\n      ')}
    }
  }
${pairTreeSumWgsl(P, nr, lanes)}
  if (lane == 0u && o < dims.outDim) {
    ${range(nr).map((r) => `store(${r}u, o, partA[${r * P}u + lid]);`).join(' ')}
    if (hasB) { ${range(nr).map((r) => `store(${r}u, o + 1u, partB[${r * P}u + lid]);`).join(' ')} }
  }
}
`;
}

/** Register-tiled kernel, `rows` output rows per workgroup (tileRowsFor(n)); one K step is one group of 32. */
export function q4TiledWgsl(p: Q4Path, v: Q4MatmulVariant, rows: TileRows = 64): string {
  const T = Q4_TILE;
  return /* wgsl */ `${q4Enables(p)}
${header(p, v, 'u32', 'vec4<f32>')}
${registerTileWgsl({
  rows,
  k: Q4_TILE_K,
  setup: `let G = dims.inDim / 32u;
  let x4PerRow = dims.inDim / 4u;
  // W tile loader: thread -> (row m, word c) of the 64 x 4-word tile.
  let wm = lid >> 2u;
  let wc = lid & 3u;
  let wo = col0 + wm;`,
  loop: 'for (var g = 0u; g < G; g++)',
  load: (t) => `
    var lo = vec4<f32>(0.0);
    var hi = vec4<f32>(0.0);
    if (wo < dims.outDim) {
      let wrow = dims.wRow + wo;
      let word = Wq[(wrow * G + g) * 4u + wc];
      let s = S_at(wrow * G + g);
      lo = q4lo(word) * s;
      hi = q4hi(word) * s;
    }
    let kb = wc * 8u * ${T}u + wm;
    ${['lo.x', 'lo.y', 'lo.z', 'lo.w', 'hi.x', 'hi.y', 'hi.z', 'hi.w'].map((v, j) => `${t.b(`kb + ${j * T}u`)} = ${v};`).join(' ')}
    // x tile: ${rows} rows x 8 vec4.
    for (var e = lid; e < ${rows * 8}u; e += 256u) {
      let m = e >> 3u;
      let v4 = e & 7u;
      let r = row0 + m;
      var xv = vec4<f32>(0.0);
      if (r < dims.n) { xv = x[r * x4PerRow + g * 8u + v4]; }
      let xk = v4 * 4u * ${rows}u + m;
      ${['xv.x', 'xv.y', 'xv.z', 'xv.w'].map((v, j) => `${t.a(`xk + ${j * rows}u`)} = ${v};`).join(' ')}
    }`,
  rowCount: 'dims.n',
  colCount: 'dims.outDim',
  store: 'store(r, c, v);',
})}`;
}

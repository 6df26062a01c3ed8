// y[n, yOffset + o] (+)= sum_i x[n, i] * deq(W)[o, i] (+ b[o]) with W 4-bit (q4.ref.ts), dequantized in
// registers as it is read: no f16 or f32 copy of the weights exists anywhere.
//
// Two kernels, as for the f16 matmul:
// - rows (N <= Q4_SMALL_N, decode): memory-bound, so each group of 32 weights is one vec4<u32> load plus
//   one scale load, and all N rows of x are multiplied with it while it is in registers. A workgroup of 64
//   threads owns Q4_ROWS output rows. With `subgroups` each subgroup owns whole rows (its lanes stride over
//   the row's groups, subgroupAdd reduces), so no workgroup memory or barriers are in the reduction.
//   Without, 8 lanes per row reduce through workgroup memory.
// - tiled (prefill / training): 64x64 output tile per workgroup, K step 32 = one quantization group, so a
//   W tile row needs 4 words and 1 scale; the tile is dequantized once into workgroup memory and reused by
//   64 x rows. 16 KiB of workgroup memory, the WebGPU default limit.

import { q4Enables, q4ScaleDecl, Q4_UNPACK_WGSL, type Q4Path } from './q4.wgsl';

export interface Q4MatmulVariant {
  bias: boolean;
  accumulate: boolean;
}

export const Q4_TILE = 64;
export const Q4_TILE_K = 32;
export const Q4_SMALL_N = 4;
/** Output rows per workgroup of the rows kernel. */
export const Q4_ROWS = 8;
export const Q4_ROWS_WG = 64;
/** Lanes per output row in the rows kernel without subgroups. */
export const Q4_LANES = Q4_ROWS_WG / Q4_ROWS;

function header(p: Q4Path, v: Q4MatmulVariant, wType: 'u32' | 'vec4<u32>', xType: 'f32' | 'vec4<f32>'): string {
  return `struct Dims { n: u32, inDim: u32, outDim: u32, yStride: u32, yOffset: u32, wRow: u32 }
@group(0) @binding(0) var<storage, read> Wq: array<${wType}>;
${q4ScaleDecl(p, 1)}
@group(0) @binding(2) var<storage, read> x: array<${xType}>;
@group(0) @binding(3) var<storage, read_write> y: array<f32>;
@group(0) @binding(4) var<uniform> dims: Dims;
${v.bias ? '@group(0) @binding(5) var<storage, read> b: array<f32>;' : ''}
${Q4_UNPACK_WGSL}
fn store(row: u32, col: u32, acc: f32) {
  let idx = row * dims.yStride + dims.yOffset + col;
  var v = acc;
  ${v.bias ? 'v += b[col];' : ''}
  ${v.accumulate ? 'v += y[idx];' : ''}
  y[idx] = v;
}
`;
}

/** Dot of one dequantized group (vec4<u32> `q`, scale `s`) with x row `r` (as vec4 index base `xb`). */
function groupDots(nr: number): string {
  const lines: string[] = [];
  for (let r = 0; r < nr; r++) {
    const xb = `xb${r}`;
    lines.push(`{ let ${xb} = ${r}u * dims.inDim / 4u + g * 8u;
        acc${r} += s * (dot(w0, x[${xb}]) + dot(w1, x[${xb} + 1u]) + dot(w2, x[${xb} + 2u]) + dot(w3, x[${xb} + 3u])
          + dot(w4, x[${xb} + 4u]) + dot(w5, x[${xb} + 5u]) + dot(w6, x[${xb} + 6u]) + dot(w7, x[${xb} + 7u])); }`);
  }
  return lines.join('\n        ');
}

const DEQ_GROUP = `let q = Wq[wbase + g];
        let s = S_at(wbase + g);
        let w0 = q4lo(q.x); let w1 = q4hi(q.x); let w2 = q4lo(q.y); let w3 = q4hi(q.y);
        let w4 = q4lo(q.z); let w5 = q4hi(q.z); let w6 = q4lo(q.w); let w7 = q4hi(q.w);`;

const range = (n: number) => Array.from({ length: n }, (_, i) => i);

/** Rows kernel for exactly `nr` (1..Q4_SMALL_N) rows of x, with or without subgroups. */
export function q4RowsWgsl(p: Q4Path, v: Q4MatmulVariant, nr: number, subgroups: boolean): string {
  if (!Number.isInteger(nr) || nr < 1 || nr > Q4_SMALL_N) throw new Error(`q4RowsWgsl: nr must be 1..${Q4_SMALL_N}, got ${nr}`);
  const accDecl = range(nr).map((r) => `var acc${r} = 0.0;`).join(' ');
  if (subgroups) {
    // Subgroups get a dense index from a workgroup counter (WGSL has no portable subgroup id and does not
    // promise which invocations form a subgroup); the subgroup then owns rows idx, idx + count, ... Every
    // branch around subgroupAdd depends only on values equal across the subgroup, which the uniformity
    // analysis cannot see, hence the diagnostic.
    return /* wgsl */ `${q4Enables(p, true)}diagnostic(off, subgroup_uniformity);
${header(p, v, 'vec4<u32>', 'vec4<f32>')}
var<workgroup> sgCount: atomic<u32>;

@compute @workgroup_size(${Q4_ROWS_WG})
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(subgroup_invocation_id) sid: u32, @builtin(subgroup_size) sgSize: u32) {
  var mine = 0u;
  if (sid == 0u) { mine = atomicAdd(&sgCount, 1u); }
  let sgIndex = subgroupBroadcastFirst(mine);
  workgroupBarrier();
  let sgTotal = atomicLoad(&sgCount);
  let row0 = (wg.x + wg.y * nwg.x) * ${Q4_ROWS}u;
  let G = dims.inDim / 32u;
  for (var r = sgIndex; r < ${Q4_ROWS}u; r += sgTotal) {
    let o = row0 + r;
    if (o >= dims.outDim) { break; }
    ${accDecl}
    let wbase = (dims.wRow + o) * G;
    for (var g0 = 0u; g0 < G; g0 += sgSize) {
      let g = g0 + sid;
      if (g < G) {
        ${DEQ_GROUP}
        ${groupDots(nr)}
      }
    }
    ${range(nr).map((r) => `let t${r} = subgroupAdd(acc${r});`).join(' ')}
    if (sid == 0u) { ${range(nr).map((r) => `store(${r}u, o, t${r});`).join(' ')} }
  }
}
`;
  }
  return /* wgsl */ `${q4Enables(p)}
${header(p, v, 'vec4<u32>', 'vec4<f32>')}
var<workgroup> partial: array<f32, ${Q4_ROWS_WG * nr}>;

@compute @workgroup_size(${Q4_ROWS_WG})
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let lane = lid % ${Q4_LANES}u;
  let o = (wg.x + wg.y * nwg.x) * ${Q4_ROWS}u + lid / ${Q4_LANES}u;
  let G = dims.inDim / 32u;
  ${accDecl}
  if (o < dims.outDim) {
    let wbase = (dims.wRow + o) * G;
    for (var g = lane; g < G; g += ${Q4_LANES}u) {
        ${DEQ_GROUP}
        ${groupDots(nr)}
    }
  }
  ${range(nr).map((r) => `partial[${r * Q4_ROWS_WG}u + lid] = acc${r};`).join(' ')}
  workgroupBarrier();
  for (var st = ${Q4_LANES / 2}u; st > 0u; st >>= 1u) {
    if (lane < st) {
      ${range(nr).map((r) => `partial[${r * Q4_ROWS_WG}u + lid] += partial[${r * Q4_ROWS_WG}u + lid + st];`).join(' ')}
    }
    workgroupBarrier();
  }
  if (lane == 0u && o < dims.outDim) {
    ${range(nr).map((r) => `store(${r}u, o, partial[${r * Q4_ROWS_WG}u + lid]);`).join(' ')}
  }
}
`;
}

export function q4TiledWgsl(p: Q4Path, v: Q4MatmulVariant): string {
  const T = Q4_TILE;
  return /* wgsl */ `${q4Enables(p)}
${header(p, v, 'u32', 'vec4<f32>')}
// k-major ([k][m]) so the inner loop reads consecutive rows / columns; one K step is one group of 32.
var<workgroup> xs: array<f32, ${T * Q4_TILE_K}>;
var<workgroup> ws: array<f32, ${T * Q4_TILE_K}>;

@compute @workgroup_size(16, 16)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_id) lid3: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let col0 = wg.x * ${T}u;
  let row0 = wg.y * ${T}u;
  let tx = lid3.x;
  let ty = lid3.y;
  let G = dims.inDim / 32u;
  let x4PerRow = dims.inDim / 4u;
  var acc0 = vec4<f32>(0.0);
  var acc1 = vec4<f32>(0.0);
  var acc2 = vec4<f32>(0.0);
  var acc3 = vec4<f32>(0.0);
  // W tile loader: thread -> (row m, word c) of the 64 x 4-word tile.
  let wm = lid >> 2u;
  let wc = lid & 3u;
  let wo = col0 + wm;
  for (var g = 0u; g < G; g++) {
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
    ws[kb] = lo.x; ws[kb + ${T}u] = lo.y; ws[kb + ${2 * T}u] = lo.z; ws[kb + ${3 * T}u] = lo.w;
    ws[kb + ${4 * T}u] = hi.x; ws[kb + ${5 * T}u] = hi.y; ws[kb + ${6 * T}u] = hi.z; ws[kb + ${7 * T}u] = hi.w;
    // x tile: 64 rows x 8 vec4 = 512 vec4, two per thread.
    for (var l = 0u; l < 2u; l++) {
      let e = lid + l * 256u;
      let m = e >> 3u;
      let v4 = e & 7u;
      let r = row0 + m;
      var xv = vec4<f32>(0.0);
      if (r < dims.n) { xv = x[r * x4PerRow + g * 8u + v4]; }
      let xk = v4 * 4u * ${T}u + m;
      xs[xk] = xv.x; xs[xk + ${T}u] = xv.y; xs[xk + ${2 * T}u] = xv.z; xs[xk + ${3 * T}u] = xv.w;
    }
    workgroupBarrier();
    for (var kk = 0u; kk < ${Q4_TILE_K}u; kk++) {
      let xb = kk * ${T}u + ty;
      let wb = kk * ${T}u + tx;
      let w = vec4<f32>(ws[wb], ws[wb + 16u], ws[wb + 32u], ws[wb + 48u]);
      acc0 += xs[xb] * w;
      acc1 += xs[xb + 16u] * w;
      acc2 += xs[xb + 32u] * w;
      acc3 += xs[xb + 48u] * w;
    }
    workgroupBarrier();
  }
  storeRow(row0 + ty, col0 + tx, acc0);
  storeRow(row0 + ty + 16u, col0 + tx, acc1);
  storeRow(row0 + ty + 32u, col0 + tx, acc2);
  storeRow(row0 + ty + 48u, col0 + tx, acc3);
}

fn storeRow(r: u32, c: u32, v: vec4<f32>) {
  if (r >= dims.n) { return; }
  for (var j = 0u; j < 4u; j++) {
    let o = c + 16u * j;
    if (o < dims.outDim) { store(r, o, v[j]); }
  }
}
`;
}

// y[n, yOffset + o] (+)= sum_i x[n, i] * W[o, i] (+ b[o]), W f16 [out, in] (Hugging Face layout).
// Output rows are written at a row stride `yStride` and column offset `yOffset`, so the LM head can
// write a vocabulary chunk into its columns of a wider logits buffer.
//
// Two kernels: a register-tiled one for prefill/training (common/tile.wgsl.ts: 16, 32, 64 or 128 rows x 64
// columns per workgroup, K step 16), and a row kernel for N <= SMALL_N (decode), where the whole cost is
// reading W once: one workgroup per output column, all N rows accumulated from the same W reads.

import { enableF16, halfArray, type WeightPath } from '../common/weights.wgsl';
import { registerTileWgsl, TILE_COLS, type TileRows } from '../common/tile.wgsl';

export interface MatmulVariant {
  bias: boolean;
  accumulate: boolean;
  /** Rows kernel only: reduce with subgroupAdd (device has `subgroups`) instead of a shared-memory tree. */
  subgroups?: boolean;
}

export const TILE = TILE_COLS;
export const TILE_K = 16;
export const SMALL_N = 4;
export const ROW_WG = 64;

/**
 * `store(row, col, acc)`: y[row, yOffset + col] = acc (+ b[col]) (+ the old y), the epilogue every matmul-shaped
 * forward kernel shares (tiled, rows, 4-bit and tensor-core); needs `dims.yStride`, `dims.yOffset`, `y` and `b`.
 */
export function matmulStoreWgsl(v: Pick<MatmulVariant, 'bias' | 'accumulate'>): string {
  return `fn store(row: u32, col: u32, acc: f32) {
  let idx = row * dims.yStride + dims.yOffset + col;
  var v = acc;
  ${v.bias ? 'v += b[col];' : ''}
  ${v.accumulate ? 'v += y[idx];' : ''}
  y[idx] = v;
}
`;
}

function header(p: WeightPath, v: MatmulVariant): string {
  return `${enableF16(p)}${v.subgroups ? 'enable subgroups;\n' : ''}
struct Dims { n: u32, inDim: u32, outDim: u32, yStride: u32, yOffset: u32 }
${halfArray(p, 0, 'W')}
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read_write> y: array<f32>;
@group(0) @binding(3) var<uniform> dims: Dims;
${v.bias ? '@group(0) @binding(4) var<storage, read> b: array<f32>;' : ''}

${matmulStoreWgsl(v)}`;
}

/** Register-tiled kernel, `rows` output rows per workgroup (tileRowsFor(n)); K step TILE_K. */
export function matmulTiledWgsl(p: WeightPath, v: MatmulVariant, rows: TileRows = 64): string {
  return /* wgsl */ `${header(p, v)}
${registerTileWgsl({
  rows,
  k: TILE_K,
  loop: `for (var k0 = 0u; k0 < dims.inDim; k0 += ${TILE_K}u)`,
  load: (t) => `
    for (var e = lid; e < ${rows * TILE_K}u; e += 256u) {
      let m = e / ${TILE_K}u;
      let kk = e % ${TILE_K}u;
      let r = row0 + m;
      let k = k0 + kk;
      var xv = 0.0;
      if (r < dims.n && k < dims.inDim) { xv = x[r * dims.inDim + k]; }
      ${t.a(`kk * ${rows}u + m`)} = xv;
    }
    for (var e = lid; e < ${TILE * TILE_K}u; e += 256u) {
      let m = e / ${TILE_K}u;
      let kk = e % ${TILE_K}u;
      let o = col0 + m;
      let k = k0 + kk;
      var wv = 0.0;
      if (o < dims.outDim && k < dims.inDim) { wv = W_at(o * dims.inDim + k); }
      ${t.b(`kk * ${TILE}u + m`)} = wv;
    }`,
  rowCount: 'dims.n',
  colCount: 'dims.outDim',
  store: 'store(r, c, v);',
})}`;
}

export function matmulRowsWgsl(p: WeightPath, v: MatmulVariant): string {
  // Subgroup path: each subgroup sums its lanes with subgroupAdd and only its lane 0 keeps the sum (WGSL
  // does not promise which invocations share a subgroup, so no slot is derived from the subgroup size);
  // then the first N threads add up the slots. The fallback is the usual shared-memory tree.
  const reduce = v.subgroups
    ? `
  for (var r = 0u; r < ${SMALL_N}u; r++) {
    let t = subgroupAdd(acc[r]);
    partial[r * ${ROW_WG}u + lid] = select(0.0, t, sgLane == 0u);
  }
  workgroupBarrier();
  if (lid < dims.n) {
    var total = 0.0;
    for (var g = 0u; g < ${ROW_WG}u; g++) { total += partial[lid * ${ROW_WG}u + g]; }
    store(lid, o, total);
  }`
    : `
  for (var r = 0u; r < ${SMALL_N}u; r++) { partial[r * ${ROW_WG}u + lid] = acc[r]; }
  workgroupBarrier();
  for (var s = ${ROW_WG / 2}u; s > 0u; s >>= 1u) {
    if (lid < s) {
      for (var r = 0u; r < ${SMALL_N}u; r++) { partial[r * ${ROW_WG}u + lid] += partial[r * ${ROW_WG}u + lid + s]; }
    }
    workgroupBarrier();
  }
  if (lid < dims.n) { store(lid, o, partial[lid * ${ROW_WG}u]); }`;
  const sgArgs = v.subgroups ? ',\n        @builtin(subgroup_invocation_id) sgLane: u32' : '';
  return /* wgsl */ `${header(p, v)}
var<workgroup> partial: array<f32, ${ROW_WG * SMALL_N}>;

@compute @workgroup_size(${ROW_WG})
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32${sgArgs}) {
  let o = wg.x + wg.y * nwg.x;
  if (o >= dims.outDim) { return; }
  var acc: array<f32, ${SMALL_N}>;
  for (var r = 0u; r < ${SMALL_N}u; r++) { acc[r] = 0.0; }
  let base = o * dims.inDim;
  for (var i = lid; i < dims.inDim; i += ${ROW_WG}u) {
    let w = W_at(base + i);
    for (var r = 0u; r < dims.n; r++) { acc[r] += w * x[r * dims.inDim + i]; }
  }${reduce}
}
`;
}

// Activation gradient through a frozen 4-bit linear (QLoRA): dx[N, in] (+)= dy[N, out] · deq(W)[out, in].
// The forward's register tiling (common/tile.wgsl.ts) with the roles of the operands turned: the
// reduction runs over `out` in steps of 16, each step dequantizes a 16 x 64 tile of W (16 rows x 8 words,
// one word = 8 consecutive input columns, all in one group) into workgroup memory and stages rows x 16 of dy.
// Also serves the tied LM head (W = a window of the embedding, dy = that vocab chunk's dlogits).
// Split-K (matmul/matmul.splitk.ts): workgroup z walks only outputs [z * slice, (z + 1) * slice) and writes
// its sum to partials[z, r, c] instead of dx; with one slice of outDim it is the plain kernel, same bits.

import { registerTileWgsl, TILE_COLS, type TileRows } from '../common/tile.wgsl';
import { q4Enables, q4ScaleDecl, Q4_UNPACK_WGSL, type Q4Path } from './q4.wgsl';

export const Q4_BWD_TILE = TILE_COLS;
export const Q4_BWD_TILE_K = 16;

/**
 * `rows` dx rows per workgroup (tileRowsFor(n)); every shape gives the same bits. `splitK`: binding 3 is
 * the [splits, n, inDim] partials, overwritten, instead of dx.
 */
export function q4MatmulBackwardWgsl(p: Q4Path, rows: TileRows = 64, splitK = false): string {
  const T = Q4_BWD_TILE;
  const K = Q4_BWD_TILE_K;
  return /* wgsl */ `${q4Enables(p)}
struct Params { n: u32, inDim: u32, outDim: u32, wRow: u32, accumulate: u32, dyStride: u32, dyOffset: u32, slice: u32 }
@group(0) @binding(0) var<storage, read> Wq: array<u32>;
${q4ScaleDecl(p, 1)}
@group(0) @binding(2) var<storage, read> dy: array<f32>;
@group(0) @binding(3) var<storage, read_write> dx: array<f32>;
@group(0) @binding(4) var<uniform> P: Params;
// This workgroup's slice of outDim (wg.z), for the store.
var<private> split: u32;
${Q4_UNPACK_WGSL}
${registerTileWgsl({
  rows,
  k: K,
  setup: `let words = P.inDim / 8u;
  let G = P.inDim / 32u;
  // W tile loader (threads 0..127): k row wk, word wc (input columns col0 + 8wc .. +8).
  let wk = lid >> 3u;
  let wc = lid & 7u;
  let wcol = col0 + wc * 8u;
  split = wg.z;
  let oBegin = wg.z * P.slice;
  let oEnd = min(P.outDim, oBegin + P.slice);`,
  loop: `for (var o0 = oBegin; o0 < oEnd; o0 += ${K}u)`,
  load: (t) => `
    if (lid < ${K * 8}u) {
      var lo = vec4<f32>(0.0);
      var hi = vec4<f32>(0.0);
      let o = o0 + wk;
      if (o < oEnd && wcol < P.inDim) {
        let row = P.wRow + o;
        let word = Wq[row * words + wcol / 8u];
        let s = S_at(row * G + wcol / 32u);
        lo = q4lo(word) * s;
        hi = q4hi(word) * s;
      }
      let wb = wk * ${T}u + wc * 8u;
      ${['lo.x', 'lo.y', 'lo.z', 'lo.w', 'hi.x', 'hi.y', 'hi.z', 'hi.w'].map((v, j) => `${t.b(`wb + ${j}u`)} = ${v};`).join(' ')}
    }
    for (var e = lid; e < ${rows * K}u; e += 256u) {
      let m = e / ${K}u;
      let kk = e % ${K}u;
      let r = row0 + m;
      let o = o0 + kk;
      var a = 0.0;
      if (r < P.n && o < oEnd) { a = dy[r * P.dyStride + P.dyOffset + o]; }
      ${t.a(`kk * ${rows}u + m`)} = a;
    }`,
  rowCount: 'P.n',
  colCount: 'P.inDim',
  store: splitK
    ? `dx[(split * P.n + r) * P.inDim + c] = v;`
    : `let i = r * P.inDim + c;
      if (P.accumulate == 1u) { dx[i] = dx[i] + v; } else { dx[i] = v; }`,
})}`;
}

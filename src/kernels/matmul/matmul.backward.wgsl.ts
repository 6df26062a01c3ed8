// Activation gradient through a frozen linear y = x W^T (+ b): dx[N, in] (+)= dy[N, out] · W[out, in].
// W is f16 (halfArray). Also serves the tied LM head: W is then a chunk of the embedding table starting at
// `rowOffset` rows, and dy the dlogits of that vocab chunk (columns dyOffset.. of a [n, dyStride] buffer).
// Tiled 16x16: each workgroup owns a 16x16 tile of dx and walks `out` in steps of 16, staging dy and W
// tiles in workgroup memory (2 KiB) so each W element is read once per 16 rows instead of once per row.
// Split-K (matmul.splitk.ts): workgroup z walks only outputs [z * slice, (z + 1) * slice) and writes its
// sum to partials[z, row, col] instead of dx; with one slice of outDim it is the plain kernel, same bits.

import { enableF16, halfArray, type WeightPath } from '../common/weights.wgsl';

export const MATMUL_BWD_TILE = 16;

/** `splitK`: binding 2 is the [splits, n, inDim] partials, overwritten, instead of dx. */
export function matmulBackwardWgsl(p: WeightPath, splitK = false): string {
  const T = MATMUL_BWD_TILE;
  return /* wgsl */ `${enableF16(p)}
struct Params { n: u32, inDim: u32, outDim: u32, rowOffset: u32, accumulate: u32, dyStride: u32, dyOffset: u32, slice: u32 }
${halfArray(p, 0, 'W')}
@group(0) @binding(1) var<storage, read> dy: array<f32>;
@group(0) @binding(2) var<storage, read_write> dx: array<f32>;
@group(0) @binding(3) var<uniform> P: Params;

var<workgroup> tdy: array<array<f32, ${T}>, ${T}>;
var<workgroup> tw: array<array<f32, ${T}>, ${T}>;

@compute @workgroup_size(${T}, ${T})
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_id) l: vec3<u32>) {
  let col = wg.x * ${T}u + l.x;
  let row = wg.y * ${T}u + l.y;
  let oBegin = wg.z * P.slice;
  let oEnd = min(P.outDim, oBegin + P.slice);
  var acc = 0.0;
  for (var o0 = oBegin; o0 < oEnd; o0 += ${T}u) {
    let o = o0 + l.x;
    var a = 0.0;
    if (row < P.n && o < oEnd) { a = dy[row * P.dyStride + P.dyOffset + o]; }
    tdy[l.y][l.x] = a;
    let ow = o0 + l.y;
    var b = 0.0;
    if (ow < oEnd && col < P.inDim) { b = W_at((P.rowOffset + ow) * P.inDim + col); }
    tw[l.y][l.x] = b;
    workgroupBarrier();
    for (var k = 0u; k < ${T}u; k++) { acc += tdy[l.y][k] * tw[k][l.x]; }
    workgroupBarrier();
  }
  if (row < P.n && col < P.inDim) {
${splitK
    ? '    dx[(wg.z * P.n + row) * P.inDim + col] = acc;'
    : `    let i = row * P.inDim + col;
    if (P.accumulate == 1u) { dx[i] = dx[i] + acc; } else { dx[i] = acc; }`}
  }
}
`;
}

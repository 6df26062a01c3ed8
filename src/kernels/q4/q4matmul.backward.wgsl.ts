// Activation gradient through a frozen 4-bit linear (QLoRA): dx[N, in] (+)= dy[N, out] · deq(W)[out, in].
// Same 64x64 output tiling as the forward's tiled kernel, with the roles of the operands turned: the
// reduction runs over `out` in steps of 16, each step dequantizes a 16 x 64 tile of W (16 rows x 8 words,
// one word = 8 consecutive input columns, all in one group) into workgroup memory and stages 64 x 16 of dy.
// Also serves the tied LM head (W = a window of the embedding, dy = that vocab chunk's dlogits).

import { q4Enables, q4ScaleDecl, Q4_UNPACK_WGSL, type Q4Path } from './q4.wgsl';

export const Q4_BWD_TILE = 64;
export const Q4_BWD_TILE_K = 16;

export function q4MatmulBackwardWgsl(p: Q4Path): string {
  const T = Q4_BWD_TILE;
  const K = Q4_BWD_TILE_K;
  return /* wgsl */ `${q4Enables(p)}
struct Params { n: u32, inDim: u32, outDim: u32, wRow: u32, accumulate: u32, dyStride: u32, dyOffset: u32 }
@group(0) @binding(0) var<storage, read> Wq: array<u32>;
${q4ScaleDecl(p, 1)}
@group(0) @binding(2) var<storage, read> dy: array<f32>;
@group(0) @binding(3) var<storage, read_write> dx: array<f32>;
@group(0) @binding(4) var<uniform> P: Params;
${Q4_UNPACK_WGSL}
var<workgroup> ds: array<f32, ${T * K}>; // [k][n]
var<workgroup> ws: array<f32, ${T * K}>; // [k][in column]

@compute @workgroup_size(16, 16)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_id) lid3: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let col0 = wg.x * ${T}u;
  let row0 = wg.y * ${T}u;
  let tx = lid3.x;
  let ty = lid3.y;
  let words = P.inDim / 8u;
  let G = P.inDim / 32u;
  var acc0 = vec4<f32>(0.0);
  var acc1 = vec4<f32>(0.0);
  var acc2 = vec4<f32>(0.0);
  var acc3 = vec4<f32>(0.0);
  // W tile loader (threads 0..127): k row wk, word wc (input columns col0 + 8wc .. +8).
  let wk = lid >> 3u;
  let wc = lid & 7u;
  let wcol = col0 + wc * 8u;
  for (var o0 = 0u; o0 < P.outDim; o0 += ${K}u) {
    if (lid < ${K * 8}u) {
      var lo = vec4<f32>(0.0);
      var hi = vec4<f32>(0.0);
      let o = o0 + wk;
      if (o < P.outDim && wcol < P.inDim) {
        let row = P.wRow + o;
        let word = Wq[row * words + wcol / 8u];
        let s = S_at(row * G + wcol / 32u);
        lo = q4lo(word) * s;
        hi = q4hi(word) * s;
      }
      let wb = wk * ${T}u + wc * 8u;
      ws[wb] = lo.x; ws[wb + 1u] = lo.y; ws[wb + 2u] = lo.z; ws[wb + 3u] = lo.w;
      ws[wb + 4u] = hi.x; ws[wb + 5u] = hi.y; ws[wb + 6u] = hi.z; ws[wb + 7u] = hi.w;
    }
    for (var l = 0u; l < 4u; l++) {
      let e = lid + l * 256u;
      let m = e / ${K}u;
      let kk = e % ${K}u;
      let r = row0 + m;
      let o = o0 + kk;
      var a = 0.0;
      if (r < P.n && o < P.outDim) { a = dy[r * P.dyStride + P.dyOffset + o]; }
      ds[kk * ${T}u + m] = a;
    }
    workgroupBarrier();
    for (var kk = 0u; kk < ${K}u; kk++) {
      let db = kk * ${T}u + ty;
      let wb = kk * ${T}u + tx;
      let w = vec4<f32>(ws[wb], ws[wb + 16u], ws[wb + 32u], ws[wb + 48u]);
      acc0 += ds[db] * w;
      acc1 += ds[db + 16u] * w;
      acc2 += ds[db + 32u] * w;
      acc3 += ds[db + 48u] * w;
    }
    workgroupBarrier();
  }
  storeRow(row0 + ty, col0 + tx, acc0);
  storeRow(row0 + ty + 16u, col0 + tx, acc1);
  storeRow(row0 + ty + 32u, col0 + tx, acc2);
  storeRow(row0 + ty + 48u, col0 + tx, acc3);
}

fn storeRow(r: u32, c: u32, v: vec4<f32>) {
  if (r >= P.n) { return; }
  for (var j = 0u; j < 4u; j++) {
    let col = c + 16u * j;
    if (col < P.inDim) {
      let i = r * P.inDim + col;
      if (P.accumulate == 1u) { dx[i] = dx[i] + v[j]; } else { dx[i] = v[j]; }
    }
  }
}
`;
}

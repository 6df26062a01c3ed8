// Decode-only fused RoPE + KV-cache write: one dispatch instead of rope() and two copyBufferToBuffer.
// One thread per (row, head of nH + nKV, i < hd/2), the thread layout and arithmetic of rope.wgsl.ts:
// query heads are rotated in place; a KV-head thread writes its rotated pair of k to the key cache and
// copies the same two elements of v to the value cache, so k itself is left as the projection wrote it.
//
// The cache row of row r is cacheRow[r], read on the GPU (no CPU-side offset, so the runtime records a step
// once and replays it, or encodes several steps ahead). A single sequence stores position p at row p and
// binds its pos buffer here too; a batch of sequences keeps each in its own region of the cache, so its
// rows are (region start + position). Rows whose cache row is >= maxCtx write nothing.
//
// Bit-identity with rope(): the same inv_freq table, the same f32 angle f32(pos) * invf, the same sinCos
// text and the same rotation expressions, so the rotated values are the bits rope() produces.

import { ropeEntryWgsl, ROPE_MAX_HALF, ROPE_WG, SIN_COS_WGSL } from './rope.wgsl';

export const ROPE_KV_WG = ROPE_WG;

export function ropeKvWgsl(): string {
  return /* wgsl */ `
struct Dims { n: u32, nH: u32, nKV: u32, hd: u32, maxCtx: u32, pad0: u32, pad1: u32, pad2: u32, invf: array<vec4<f32>, ${ROPE_MAX_HALF / 4}> }
@group(0) @binding(0) var<storage, read_write> q: array<f32>;
@group(0) @binding(1) var<storage, read> k: array<f32>;
@group(0) @binding(2) var<storage, read> v: array<f32>;
@group(0) @binding(3) var<storage, read> pos: array<u32>;
@group(0) @binding(4) var<storage, read_write> kCache: array<f32>;
@group(0) @binding(5) var<storage, read_write> vCache: array<f32>;
@group(0) @binding(6) var<uniform> dims: Dims;
@group(0) @binding(7) var<storage, read> cacheRow: array<u32>;

${SIN_COS_WGSL}
${ropeEntryWgsl(ROPE_KV_WG)}
  let p = pos[row];
  let cr = cacheRow[row];
  let angle = f32(p) * dims.invf[i / 4u][i % 4u];
  let sc = sinCos(angle);
  let s = sc.x;
  let c = sc.y;
  if (h < dims.nH) {
    let base = row * dims.nH * dims.hd + h * dims.hd;
    let a = q[base + i];
    let b = q[base + i + half];
    q[base + i] = a * c - b * s;
    q[base + i + half] = b * c + a * s;
  } else if (cr < dims.maxCtx) {
    let kvd = dims.nKV * dims.hd;
    let off = (h - dims.nH) * dims.hd;
    let src = row * kvd + off;
    let dst = cr * kvd + off;
    let a = k[src + i];
    let b = k[src + i + half];
    kCache[dst + i] = a * c - b * s;
    kCache[dst + i + half] = b * c + a * s;
    vCache[dst + i] = v[src + i];
    vCache[dst + i + half] = v[src + i + half];
  }
}
`;
}

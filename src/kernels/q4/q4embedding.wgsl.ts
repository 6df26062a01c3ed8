// x[n, :] = deq(E)[ids[n] - rowOffset, :] for the ids inside this chunk of a 4-bit embedding table
// (MLC quantizes `embed_tokens` along the hidden axis, like a linear's input axis). One thread per
// q_weight word: one u32 read, one scale read, eight f32 written as two vec4. Ids >= vocab give zeros
// (by every chunk, idempotently), so a bad id never reads outside the table.

import { q4Enables, q4ScaleDecl, Q4_UNPACK_WGSL, type Q4Path } from './q4.wgsl';

export const Q4_EMBEDDING_WG = 256;

export function q4EmbeddingWgsl(p: Q4Path): string {
  return /* wgsl */ `${q4Enables(p)}
struct Dims { n: u32, h: u32, rowOffset: u32, rowCount: u32, vocab: u32, rowBase: u32 }
@group(0) @binding(0) var<storage, read> Eq: array<u32>;
${q4ScaleDecl(p, 1)}
@group(0) @binding(2) var<storage, read> ids: array<u32>;
@group(0) @binding(3) var<storage, read_write> x: array<vec4<f32>>;
@group(0) @binding(4) var<uniform> dims: Dims;
${Q4_UNPACK_WGSL}
@compute @workgroup_size(${Q4_EMBEDDING_WG})
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let words = dims.h / 8u;
  let i = (wg.x + wg.y * nwg.x) * ${Q4_EMBEDDING_WG}u + lid;
  if (i >= dims.n * words) { return; }
  let row = i / words;
  let k = i - row * words;
  let id = ids[row];
  let out = 2u * i; // x[row, 8k .. 8k+8] as vec4 index: (row * h + 8k) / 4
  if (id >= dims.vocab) {
    x[out] = vec4<f32>(0.0);
    x[out + 1u] = vec4<f32>(0.0);
    return;
  }
  if (id < dims.rowOffset || id - dims.rowOffset >= dims.rowCount) { return; }
  let r = dims.rowBase + id - dims.rowOffset;
  let w = Eq[r * words + k];
  let s = S_at(r * (dims.h / 32u) + k / 4u);
  x[out] = q4lo(w) * s;
  x[out + 1u] = q4hi(w) * s;
}
`;
}

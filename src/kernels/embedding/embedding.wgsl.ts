// x[n, :] = E[ids[n] - rowOffset, :] for the ids that fall inside this chunk of the table. A big table
// (Qwen2.5-0.5B: 272 MiB in f16) exceeds one storage binding, so the owner splits it into row chunks and
// dispatches once per chunk; every id lands in exactly one chunk. Ids >= vocab are written as zeros
// (by every chunk, idempotently) so a bad id can never read outside the table.

import { enableF16, halfArray, type WeightPath } from '../common/weights.wgsl';

export const EMBEDDING_WG = 256;

export function embeddingWgsl(p: WeightPath): string {
  return /* wgsl */ `${enableF16(p)}
struct Dims { n: u32, h: u32, rowOffset: u32, rowCount: u32, vocab: u32 }
${halfArray(p, 0, 'E')}
@group(0) @binding(1) var<storage, read> ids: array<u32>;
@group(0) @binding(2) var<storage, read_write> x: array<f32>;
@group(0) @binding(3) var<uniform> dims: Dims;

@compute @workgroup_size(${EMBEDDING_WG})
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let i = (wg.x + wg.y * nwg.x) * ${EMBEDDING_WG}u + lid;
  if (i >= dims.n * dims.h) { return; }
  let row = i / dims.h;
  let col = i - row * dims.h;
  let id = ids[row];
  if (id >= dims.vocab) { x[i] = 0.0; return; }
  if (id < dims.rowOffset || id - dims.rowOffset >= dims.rowCount) { return; }
  x[i] = E_at((id - dims.rowOffset) * dims.h + col);
}
`;
}

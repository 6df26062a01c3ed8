// The second half of a split-K input gradient (matmul.splitk.ts): dx[i] (+)= sum over splits s of
// partials[s, i], s ascending, one thread per element. The order is fixed, so the result is deterministic
// (no float atomics), and independent of how the GPU schedules the first dispatch's workgroups.

import { FLAT_WG } from '../common/params';

export const SPLITK_REDUCE_WG = 256;

export function splitKReduceWgsl(): string {
  return /* wgsl */ `
struct Params { count: u32, splits: u32, accumulate: u32 }
@group(0) @binding(0) var<storage, read> partials: array<f32>;
@group(0) @binding(1) var<storage, read_write> dx: array<f32>;
@group(0) @binding(2) var<uniform> P: Params;

@compute @workgroup_size(${SPLITK_REDUCE_WG})
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
  let i = (${FLAT_WG}) * ${SPLITK_REDUCE_WG}u + lid;
  if (i >= P.count) { return; }
  var s = 0.0;
  for (var k = 0u; k < P.splits; k++) { s += partials[k * P.count + i]; }
  if (P.accumulate == 1u) { dx[i] = dx[i] + s; } else { dx[i] = s; }
}
`;
}

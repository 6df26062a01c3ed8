// y[o] = sum_i W[o, i] * x[i]  (W row-major [rows, cols] in f16, x and y f32).
// One workgroup per output row; 64 threads stride over the row and reduce in workgroup memory.
// This is the decode-time shape (a single token), where reading W once is the whole cost.

import { enableF16, halfArray, type WeightPath } from '../common/weights.wgsl';

export const MATVEC_WG = 64;

export function matvecWgsl(p: WeightPath): string {
  return /* wgsl */ `${enableF16(p)}
struct Dims { rows: u32, cols: u32 }
${halfArray(p, 0, 'W')}
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read_write> y: array<f32>;
@group(0) @binding(3) var<uniform> dims: Dims;

var<workgroup> partial: array<f32, ${MATVEC_WG}>;

@compute @workgroup_size(${MATVEC_WG})
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let row = wg.x + wg.y * nwg.x;
  var acc = 0.0;
  if (row < dims.rows) {
    let base = row * dims.cols;
    for (var i = lid; i < dims.cols; i += ${MATVEC_WG}u) {
      acc += W_at(base + i) * x[i];
    }
  }
  partial[lid] = acc;
  workgroupBarrier();
  for (var s = ${MATVEC_WG / 2}u; s > 0u; s >>= 1u) {
    if (lid < s) { partial[lid] += partial[lid + s]; }
    workgroupBarrier();
  }
  if (lid == 0u && row < dims.rows) { y[row] = partial[0]; }
}
`;
}

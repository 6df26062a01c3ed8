// y = x * rstd * w, rstd = 1/sqrt(mean(x^2) + eps), one workgroup per row. rstd is written for the backward.
// No f16 weights here (norm weights are f32), so the source does not depend on the weight path.
// Rows whose squares would overflow f32 are pre-scaled (rms-scale.wgsl.ts).
import { RMS_SCALE_WGSL, rowRmsWgsl } from './rms-scale.wgsl';

export const RMSNORM_WG = 64;

export function rmsnormWgsl(): string {
  return /* wgsl */ `
struct Dims { n: u32, h: u32, eps: f32 }
@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read> w: array<f32>;
@group(0) @binding(2) var<storage, read_write> y: array<f32>;
@group(0) @binding(3) var<storage, read_write> rstd: array<f32>;
@group(0) @binding(4) var<uniform> dims: Dims;

var<workgroup> partial: array<f32, ${RMSNORM_WG}>;
${RMS_SCALE_WGSL}

@compute @workgroup_size(${RMSNORM_WG})
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let row = wg.x + wg.y * nwg.x;
  if (row >= dims.n) { return; }
  let base = row * dims.h;
  ${rowRmsWgsl({ wg: RMSNORM_WG, len: 'dims.h', read: (i) => `x[base + ${i}]`, partial: 'partial', eps: 'dims.eps' })}
  for (var i = lid; i < dims.h; i += ${RMSNORM_WG}u) {
    y[base + i] = x[base + i] * rs_s * rs_k * w[i];
  }
  if (lid == 0u) { rstd[row] = rs_s * rs_k; }
}
`;
}

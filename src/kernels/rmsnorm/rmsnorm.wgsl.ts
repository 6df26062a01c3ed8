// y = x * rstd * w, rstd = 1/sqrt(mean(x^2) + eps), one workgroup per row. rstd is written for the backward.
// No f16 weights here (norm weights are f32), so the source does not depend on the weight path.

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

@compute @workgroup_size(${RMSNORM_WG})
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let row = wg.x + wg.y * nwg.x;
  if (row >= dims.n) { return; }
  let base = row * dims.h;
  var acc = 0.0;
  for (var i = lid; i < dims.h; i += ${RMSNORM_WG}u) {
    let v = x[base + i];
    acc += v * v;
  }
  partial[lid] = acc;
  workgroupBarrier();
  for (var s = ${RMSNORM_WG / 2}u; s > 0u; s >>= 1u) {
    if (lid < s) { partial[lid] += partial[lid + s]; }
    workgroupBarrier();
  }
  // 1/sqrt rather than inverseSqrt: the latter is only ~2 ulp-accurate by spec on some GPUs.
  let r = 1.0 / sqrt(partial[0] / f32(dims.h) + dims.eps);
  for (var i = lid; i < dims.h; i += ${RMSNORM_WG}u) {
    y[base + i] = x[base + i] * r * w[i];
  }
  if (lid == 0u) { rstd[row] = r; }
}
`;
}

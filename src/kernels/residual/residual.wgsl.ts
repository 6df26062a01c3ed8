// x += y in place (the residual stream), elementwise.

export const RESIDUAL_WG = 256;

export function residualWgsl(): string {
  return /* wgsl */ `
@group(0) @binding(0) var<storage, read_write> x: array<f32>;
@group(0) @binding(1) var<storage, read> y: array<f32>;
@group(0) @binding(2) var<uniform> count: vec4<u32>;

@compute @workgroup_size(${RESIDUAL_WG})
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let i = (wg.x + wg.y * nwg.x) * ${RESIDUAL_WG}u + lid;
  if (i >= count.x) { return; }
  x[i] += y[i];
}
`;
}

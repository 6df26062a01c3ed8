// act = silu(gate) * up, elementwise. silu(g) = g / (1 + exp(-g)): for very negative g, exp(-g) becomes
// inf and the quotient a signed zero, which is the correct limit (no NaN).

export const SWIGLU_WG = 256;

export function swigluWgsl(): string {
  return /* wgsl */ `
@group(0) @binding(0) var<storage, read> gate: array<f32>;
@group(0) @binding(1) var<storage, read> up: array<f32>;
@group(0) @binding(2) var<storage, read_write> act: array<f32>;
@group(0) @binding(3) var<uniform> count: vec4<u32>;

@compute @workgroup_size(${SWIGLU_WG})
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let i = (wg.x + wg.y * nwg.x) * ${SWIGLU_WG}u + lid;
  if (i >= count.x) { return; }
  let g = gate[i];
  act[i] = g / (1.0 + exp(-g)) * up[i];
}
`;
}

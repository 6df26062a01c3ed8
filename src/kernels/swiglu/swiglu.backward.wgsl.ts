// SwiGLU backward: act = silu(gate) * up, silu(g) = g * sigmoid(g).
//   dup   = dact * silu(g)
//   dgate = dact * up * sigmoid(g) * (1 + g * (1 - sigmoid(g)))
// Elementwise, one thread per element.

export const SWIGLU_BWD_WG = 256;

export function swigluBackwardWgsl(): string {
  return /* wgsl */ `
struct Params { count: u32 }
@group(0) @binding(0) var<storage, read> dact: array<f32>;
@group(0) @binding(1) var<storage, read> gate: array<f32>;
@group(0) @binding(2) var<storage, read> up: array<f32>;
@group(0) @binding(3) var<storage, read_write> dgate: array<f32>;
@group(0) @binding(4) var<storage, read_write> dup: array<f32>;
@group(0) @binding(5) var<uniform> P: Params;

@compute @workgroup_size(${SWIGLU_BWD_WG})
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let i = (wg.x + wg.y * nwg.x) * ${SWIGLU_BWD_WG}u + lid;
  if (i >= P.count) { return; }
  let g = gate[i];
  let d = dact[i];
  // exp(-g) overflows to inf for g < -88: sig then becomes 0, which is the right limit.
  let sig = 1.0 / (1.0 + exp(-g));
  dup[i] = d * g * sig;
  dgate[i] = d * up[i] * sig * (1.0 + g * (1.0 - sig));
}
`;
}

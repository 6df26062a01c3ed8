// Gradient of per-row log-probs through log-softmax, for one vocab chunk [v0, v0 + vc):
//   logp_r = s*z_r[target_r] - lse_r,  lse_r = log sum_v exp(s*z_r[v])  (s = 1/temperature, usually 1)
//   dz_r[j] = s * dlogp_r * (onehot(target_r)[v0+j] - exp(s*z_r[j] - lse_r))
// In place over the chunk's logits (columns colOffset.. of a [rows, ld] buffer, the forward's layout):
// a chunk of a 151k vocab is the largest activation in training and a second copy is not worth it.

export const DLOGITS_WG = 256;

export function dlogitsWgsl(): string {
  return /* wgsl */ `
struct Params { rows: u32, vc: u32, v0: u32, rowOffset: u32, ld: u32, colOffset: u32, scale: f32 }
@group(0) @binding(0) var<storage, read_write> logits: array<f32>;
@group(0) @binding(1) var<storage, read> dlogp: array<f32>;
@group(0) @binding(2) var<storage, read> lse: array<f32>;
@group(0) @binding(3) var<storage, read> targets: array<u32>;
@group(0) @binding(4) var<uniform> P: Params;

@compute @workgroup_size(${DLOGITS_WG})
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let idx = (wg.x + wg.y * nwg.x) * ${DLOGITS_WG}u + lid;
  if (idx >= P.rows * P.vc) { return; }
  let row = idx / P.vc;
  let j = idx % P.vc;
  let r = P.rowOffset + row;
  let at = row * P.ld + P.colOffset + j;
  let hit = select(0.0, 1.0, targets[r] == P.v0 + j);
  logits[at] = P.scale * dlogp[r] * (hit - exp(P.scale * logits[at] - lse[r]));
}
`;
}

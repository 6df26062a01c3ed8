// AdamW step in place (PyTorch semantics, decoupled weight decay), on f32 p, g, m, v:
//   g' = g * clipScale;  m = b1 m + (1-b1) g';  v = b2 v + (1-b2) g'^2
//   p = p * (1 - lr*wd) - lr * (m / bc1) / (sqrt(v / bc2) + eps),   bc_k = 1 - beta_k^t
// The hyper-parameters (lr, t change every step) sit in a storage buffer written once per step, and the
// clip scale is read from the reduce kernel's output, so a step never waits on a GPU->CPU read-back.

export const ADAMW_WG = 256;
/** Layout of the `hyper` storage buffer (f32). */
export const ADAMW_HYPER = { lr: 0, beta1: 1, beta2: 2, eps: 3, weightDecay: 4, bc1: 5, bc2: 6 } as const;
export const ADAMW_HYPER_FLOATS = 8;

export function adamwWgsl(): string {
  return /* wgsl */ `
struct Params { count: u32, scaleIndex: u32 }
@group(0) @binding(0) var<storage, read_write> p: array<f32>;
@group(0) @binding(1) var<storage, read> g: array<f32>;
@group(0) @binding(2) var<storage, read_write> m: array<f32>;
@group(0) @binding(3) var<storage, read_write> v: array<f32>;
@group(0) @binding(4) var<storage, read> clip: array<f32>;
@group(0) @binding(5) var<storage, read> hyper: array<f32>;
@group(0) @binding(6) var<uniform> P: Params;

@compute @workgroup_size(${ADAMW_WG})
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let i = (wg.x + wg.y * nwg.x) * ${ADAMW_WG}u + lid;
  if (i >= P.count) { return; }
  let lr = hyper[${ADAMW_HYPER.lr}];
  let b1 = hyper[${ADAMW_HYPER.beta1}];
  let b2 = hyper[${ADAMW_HYPER.beta2}];
  let gi = g[i] * clip[P.scaleIndex];
  let mi = b1 * m[i] + (1.0 - b1) * gi;
  let vi = b2 * v[i] + (1.0 - b2) * gi * gi;
  m[i] = mi;
  v[i] = vi;
  let denom = sqrt(vi / hyper[${ADAMW_HYPER.bc2}]) + hyper[${ADAMW_HYPER.eps}];
  p[i] = p[i] * (1.0 - lr * hyper[${ADAMW_HYPER.weightDecay}]) - lr * (mi / hyper[${ADAMW_HYPER.bc1}]) / denom;
}
`;
}

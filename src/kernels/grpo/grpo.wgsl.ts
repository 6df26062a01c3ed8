// Flow-GRPO per-token loss and d(loss)/d(logp); the math and the branch rules are documented in
// grpo.ref.ts. One thread per token; weight folds the 1/N mean and the response mask into one number.

export const GRPO_WG = 256;

export function grpoWgsl(): string {
  return /* wgsl */ `
struct Params { n: u32, epsLow: f32, epsHigh: f32, beta: f32 }
@group(0) @binding(0) var<storage, read> logp: array<f32>;
@group(0) @binding(1) var<storage, read> oldLogp: array<f32>;
@group(0) @binding(2) var<storage, read> refLogp: array<f32>;
@group(0) @binding(3) var<storage, read> adv: array<f32>;
@group(0) @binding(4) var<storage, read> weight: array<f32>;
@group(0) @binding(5) var<storage, read_write> dlogp: array<f32>;
@group(0) @binding(6) var<storage, read_write> stats: array<f32>;
@group(0) @binding(7) var<uniform> P: Params;

@compute @workgroup_size(${GRPO_WG})
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let i = (wg.x + wg.y * nwg.x) * ${GRPO_WG}u + lid;
  if (i >= P.n) { return; }
  let lp = logp[i];
  let a = adv[i];
  let w = weight[i];
  let rho = exp(lp - oldLogp[i]);
  let lo = 1.0 - P.epsLow;
  let hi = 1.0 + P.epsHigh;
  let u1 = -a * rho;
  let u2 = -a * clamp(rho, lo, hi);
  let inRange = rho >= lo && rho <= hi;
  let clipped = !inRange && u2 > u1;
  let dpg = select(-a * rho, 0.0, clipped);
  let d = refLogp[i] - lp;
  let ed = exp(d);
  let kraw = ed - d - 1.0;
  let k3 = clamp(kraw, -10.0, 10.0);
  let dk3 = select(0.0, 1.0 - ed, kraw >= -10.0 && kraw <= 10.0);
  dlogp[i] = w * (dpg + P.beta * dk3);
  stats[i] = w * (max(u1, u2) + P.beta * k3);
  stats[P.n + i] = select(0.0, w, clipped);
  stats[2u * P.n + i] = w * k3;
}
`;
}

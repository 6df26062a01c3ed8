// RoPE backward: the forward rotates each pair (i, i + hd/2) by +angle (rotate-half), so its gradient is
// the rotation by -angle, applied in place on dq and dk:
//   dx[i] = dy[i] cos + dy[i+hd/2] sin,   dx[i+hd/2] = dy[i+hd/2] cos - dy[i] sin
// The angle and its sin/cos are computed exactly as the forward does (same inv_freq table from
// ropeInvFreq, same sinCos from rope.wgsl.ts): WGSL's builtin sin/cos are ~1e-4 off on SwiftShader, and
// any difference between the two would make the backward the adjoint of a slightly different rotation.
// One thread per (row, head, i < hd/2), q heads then k heads.
import { SIN_COS_WGSL } from './rope.wgsl';

export const ROPE_BWD_WG = 256;
export const ROPE_BWD_MAX_HALF = 128;

export function ropeBackwardWgsl(): string {
  return /* wgsl */ `
struct Dims { n: u32, nH: u32, nKV: u32, hd: u32, invf: array<vec4<f32>, ${ROPE_BWD_MAX_HALF / 4}> }
@group(0) @binding(0) var<storage, read_write> dq: array<f32>;
@group(0) @binding(1) var<storage, read_write> dk: array<f32>;
@group(0) @binding(2) var<storage, read> pos: array<u32>;
@group(0) @binding(3) var<uniform> dims: Dims;

${SIN_COS_WGSL}
fn unrotate(base: u32, i: u32, half: u32, c: f32, s: f32, isQ: bool) {
  if (isQ) {
    let a = dq[base + i];
    let b = dq[base + i + half];
    dq[base + i] = a * c + b * s;
    dq[base + i + half] = b * c - a * s;
  } else {
    let a = dk[base + i];
    let b = dk[base + i + half];
    dk[base + i] = a * c + b * s;
    dk[base + i + half] = b * c - a * s;
  }
}

@compute @workgroup_size(${ROPE_BWD_WG})
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let half = dims.hd / 2u;
  let heads = dims.nH + dims.nKV;
  let idx = (wg.x + wg.y * nwg.x) * ${ROPE_BWD_WG}u + lid;
  if (idx >= dims.n * heads * half) { return; }
  let i = idx % half;
  let t = idx / half;
  let h = t % heads;
  let row = t / heads;
  let angle = f32(pos[row]) * dims.invf[i / 4u][i % 4u];
  let sc = sinCos(angle);
  let s = sc.x;
  let c = sc.y;
  if (h < dims.nH) {
    unrotate(row * dims.nH * dims.hd + h * dims.hd, i, half, c, s, true);
  } else {
    unrotate(row * dims.nKV * dims.hd + (h - dims.nH) * dims.hd, i, half, c, s, false);
  }
}
`;
}

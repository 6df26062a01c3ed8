// RoPE backward: the forward rotates each pair (i, i + hd/2) by +angle (rotate-half), so its gradient is
// the rotation by -angle, applied in place on dq and dk:
//   dx[i] = dy[i] cos + dy[i+hd/2] sin,   dx[i+hd/2] = dy[i+hd/2] cos - dy[i] sin
// The angle is computed as Hugging Face does: inv_freq in float64 on the CPU rounded to f32 (a uniform
// table: the GPU's pow/exp carry ~1e-6 relative error, 2e-4 rad at position 200), times f32(pos) in f32.
// WGSL only bounds sin/cos error on [-pi, pi], so the angle is first reduced mod 2*pi with a 3-part
// Cody-Waite split (k*C1 exact for k < 2^16). One thread per (row, head, i < hd/2), q heads then k heads.

export const ROPE_BWD_WG = 256;
export const ROPE_BWD_MAX_HALF = 128;
const TWO_PI_C1 = 6.28125;
const TWO_PI_C2 = 0.0019350051879882812;
const TWO_PI_C3 = 2 * Math.PI - TWO_PI_C1 - TWO_PI_C2;

/** inv_freq[i] = theta^(-2i/hd) in float64, rounded to f32. */
export function ropeBackwardInvFreq(theta: number, headDim: number): Float32Array {
  return Float32Array.from({ length: headDim / 2 }, (_, i) => Math.pow(theta, (-2 * i) / headDim));
}

export function ropeBackwardWgsl(): string {
  return /* wgsl */ `
struct Dims { n: u32, nH: u32, nKV: u32, hd: u32, invf: array<vec4<f32>, ${ROPE_BWD_MAX_HALF / 4}> }
@group(0) @binding(0) var<storage, read_write> dq: array<f32>;
@group(0) @binding(1) var<storage, read_write> dk: array<f32>;
@group(0) @binding(2) var<storage, read> pos: array<u32>;
@group(0) @binding(3) var<uniform> dims: Dims;

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
  let kq = round(angle * ${1 / (2 * Math.PI)});
  let r = ((angle - kq * ${TWO_PI_C1}) - kq * ${TWO_PI_C2}) - kq * ${TWO_PI_C3};
  let c = cos(r);
  let s = sin(r);
  if (h < dims.nH) {
    unrotate(row * dims.nH * dims.hd + h * dims.hd, i, half, c, s, true);
  } else {
    unrotate(row * dims.nKV * dims.hd + (h - dims.nH) * dims.hd, i, half, c, s, false);
  }
}
`;
}

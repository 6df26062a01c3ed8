// In-place rotate-half RoPE on q [N, nH*hd] and k [N, nKV*hd], one thread per (row, head, i < hd/2).
//
// Precision. Like Hugging Face Qwen2 (which computes `inv_freq @ pos` in float32), the angle is the f32
// product f32(pos) * inv_freq_f32. inv_freq is computed on the CPU in float64 and rounded to f32 (passed
// in the uniform): the GPU's pow() is only specified to ~(3 + 2|x|) ulp, which at pos 32k would be a
// ~0.1 rad error. sin/cos are our own: WGSL's builtins are only specified to 2^-11 absolute on [-pi, pi]
// (SwiftShader really is ~1e-4 off) and not at all outside it. The f32 angle is reduced to
// y in [-pi/4, pi/4] plus a quadrant with a 3-part Cody-Waite split of pi/2, then Cephes' single
// precision minimax polynomials give ~1 ulp. What remains vs the exact float64 angle is the f32 rounding
// of the angle and of inv_freq: |err| <= ulp(angle)/2 + angle * 2^-24 ~ 4e-3 rad at pos 32768 (as in HF).

export const ROPE_WG = 256;
export const ROPE_MAX_HALF = 128;

// pi/2 = C1 + C2 + C3 with C1 (5 bits) and C2 (7 bits) short enough that k*C1 and k*C2 are exact for
// k < 2^17 (positions up to ~200k); the sum is checked in the test (to 3e-12).
export const HALF_PI_C1 = 1.5625;
export const HALF_PI_C2 = 0.0081787109375;
export const HALF_PI_C3 = 0.00011761585483327508;

/** WGSL `fn sinCos(angle: f32) -> vec2<f32>` (x = sin, y = cos), shared with the backward. */
export const SIN_COS_WGSL = /* wgsl */ `
// (sin, cos) of an f32 angle in [0, ~2e5] (quadrant index < 2^17), accurate to a few ulp.
fn sinCos(angle: f32) -> vec2<f32> {
  let kq = round(angle * ${2 / Math.PI});
  let y = ((angle - kq * ${HALF_PI_C1}) - kq * ${HALF_PI_C2}) - kq * ${HALF_PI_C3};
  let z = y * y;
  let sy = y + y * z * (-1.6666654611e-1 + z * (8.3321608736e-3 + z * -1.9515295891e-4));
  let cy = 1.0 - 0.5 * z + z * z * (4.166664568298827e-2 + z * (-1.388731625493765e-3 + z * 2.443315711809948e-5));
  switch (u32(i32(kq)) & 3u) {
    case 0u: { return vec2<f32>(sy, cy); }
    case 1u: { return vec2<f32>(cy, -sy); }
    case 2u: { return vec2<f32>(-sy, -cy); }
    default: { return vec2<f32>(-cy, sy); }
  }
}
`;

/**
 * `inverse` rotates by -angle: the backward of RoPE is its transpose, the same kernel with sin negated
 * (same angle table and sinCos, so forward and backward are exact adjoints).
 */
/**
 * The entry point and thread decoding of the RoPE kernels (rope, rope.kv): one thread per (row, head of
 * nH + nKV, i < hd/2), over a 2-D grid of `wg`-thread workgroups; defines half, heads, i, h and row.
 */
export function ropeEntryWgsl(wg: number): string {
  return `@compute @workgroup_size(${wg})
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let half = dims.hd / 2u;
  let heads = dims.nH + dims.nKV;
  let idx = (wg.x + wg.y * nwg.x) * ${wg}u + lid;
  if (idx >= dims.n * heads * half) { return; }
  let i = idx % half;
  let t = idx / half;
  let h = t % heads;
  let row = t / heads;`;
}

export function ropeWgsl(inverse = false): string {
  return /* wgsl */ `
struct Dims { n: u32, nH: u32, nKV: u32, hd: u32, invf: array<vec4<f32>, ${ROPE_MAX_HALF / 4}> }
@group(0) @binding(0) var<storage, read_write> q: array<f32>;
@group(0) @binding(1) var<storage, read_write> k: array<f32>;
@group(0) @binding(2) var<storage, read> pos: array<u32>;
@group(0) @binding(3) var<uniform> dims: Dims;

${SIN_COS_WGSL}
fn rotate(base: u32, i: u32, half: u32, c: f32, s: f32, isQ: bool) {
  if (isQ) {
    let a = q[base + i];
    let b = q[base + i + half];
    q[base + i] = a * c - b * s;
    q[base + i + half] = b * c + a * s;
  } else {
    let a = k[base + i];
    let b = k[base + i + half];
    k[base + i] = a * c - b * s;
    k[base + i + half] = b * c + a * s;
  }
}

${ropeEntryWgsl(ROPE_WG)}
  let angle = f32(pos[row]) * dims.invf[i / 4u][i % 4u];
  let sc = sinCos(angle);
  let s = ${inverse ? '-sc.x' : 'sc.x'};
  let c = sc.y;
  if (h < dims.nH) {
    rotate(row * dims.nH * dims.hd + h * dims.hd, i, half, c, s, true);
  } else {
    rotate(row * dims.nKV * dims.hd + (h - dims.nH) * dims.hd, i, half, c, s, false);
  }
}
`;
}

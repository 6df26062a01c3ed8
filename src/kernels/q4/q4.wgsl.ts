// WGSL pieces shared by the 4-bit kernels (format: see q4.ref.ts).
// q_weight is bound as array<vec4<u32>> where a kernel reads whole groups: a row holds in/8 words and
// in is a multiple of 32, so every group of 32 weights is exactly one aligned vec4<u32> (16 bytes), read
// with one load. Scales are f16 through halfArray() (native f16 or packed u32, same bytes) or f32.

import { enableF16, halfArray, type WeightPath } from '../common/weights.wgsl';
import type { Q4ScaleDtype } from './q4.ref';

export interface Q4Path extends WeightPath {
  /** Dtype of q_scale: 'f16' (q4f16_1) or 'f32' (q4f32_1). */
  scale: Q4ScaleDtype;
}

/** `enable f16;` only when the scales are read as native f16. */
export function q4Enables(p: Q4Path, subgroups = false): string {
  const f16 = p.scale === 'f16' ? enableF16(p) : '';
  return `${f16}${subgroups ? 'enable subgroups;\n' : ''}`;
}

/** Declares the scale array at `binding` and `S_at(i) -> f32`. */
export function q4ScaleDecl(p: Q4Path, binding: number): string {
  if (p.scale === 'f16') return halfArray(p, binding, 'S');
  return /* wgsl */ `
@group(0) @binding(${binding}) var<storage, read> S: array<f32>;
fn S_at(i: u32) -> f32 { return S[i]; }
`;
}

/**
 * `q4lo(w)` / `q4hi(w)`: nibbles 0..3 / 4..7 of a q_weight word as f32 (q - 7). One vector shift and mask
 * per four values instead of four scalar ones.
 */
export const Q4_UNPACK_WGSL = /* wgsl */ `
const Q4_SHIFT_LO = vec4<u32>(0u, 4u, 8u, 12u);
const Q4_SHIFT_HI = vec4<u32>(16u, 20u, 24u, 28u);
fn q4lo(w: u32) -> vec4<f32> { return vec4<f32>((vec4<u32>(w) >> Q4_SHIFT_LO) & vec4<u32>(15u)) - vec4<f32>(7.0); }
fn q4hi(w: u32) -> vec4<f32> { return vec4<f32>((vec4<u32>(w) >> Q4_SHIFT_HI) & vec4<u32>(15u)) - vec4<f32>(7.0); }
`;

/** Pipeline-name suffix for a path: keeps the four (f16 path x scale dtype) programs apart in labels. */
export function q4PathName(p: Q4Path): string {
  return `${p.f16 ? 'f16' : 'packed'}_s${p.scale}`;
}

const range = (n: number) => Array.from({ length: n }, (_, i) => i);

// The workgroup-memory reduction of the 4-bit row kernels without subgroups (q4matmul's rows kernel and
// q4decode): `lanes` neighbouring threads share a pair of weight rows, each holding partial dot products
// acc<r> / bcc<r> of the pair's first / second row with x row r; a tree over the lanes sums them.

/** The partial sums' workgroup memory, P threads x nr x rows, for each row of the pair. */
export function pairPartialsWgsl(P: number, nr: number): string {
  return `var<workgroup> partA: array<f32, ${P * nr}>;
var<workgroup> partB: array<f32, ${P * nr}>;`;
}

/** Stores and sums the partials; afterwards lane 0 of a pair holds the totals at part{A,B}[r * P + lid]. */
export function pairTreeSumWgsl(P: number, nr: number, lanes: number): string {
  return `  ${range(nr).map((r) => `partA[${r * P}u + lid] = acc${r}; partB[${r * P}u + lid] = bcc${r};`).join('\n  ')}
  workgroupBarrier();
  for (var st = ${lanes / 2}u; st > 0u; st >>= 1u) {
    if (lane < st) {
      ${range(nr).map((r) => `partA[${r * P}u + lid] += partA[${r * P}u + lid + st]; partB[${r * P}u + lid] += partB[${r * P}u + lid + st];`).join('\n      ')}
    }
    workgroupBarrier();
  }`;
}

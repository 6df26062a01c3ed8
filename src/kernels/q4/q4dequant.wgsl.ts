// W16[r, :] = deq(W)[r, :] as f16: the f16 copy of a 4-bit matrix that the tensor-core matmuls read
// (matmul/matmul.sgm.ts), made once when the weights are uploaded. One thread per q_weight word: one u32 and
// one scale read, eight f16 written as two vec4<f16>. Rounding: deq in f32 (q - 7) * scale, then to f16, as
// the 4-bit tensor-core kernel rounds its staged tiles, so both give the same operands.

import { q4ScaleDecl, Q4_UNPACK_WGSL, type Q4Path } from './q4.wgsl';
import { FLAT_WG } from '../common/params';

export const Q4_DEQUANT_WG = 256;

/** Needs native f16 (the copy is written as f16). Bindings: Wq u32, S, out vec4<f16>, dims {words, inDim}. */
export function q4DequantWgsl(p: Q4Path): string {
  if (!p.f16) throw new Error('q4DequantWgsl: writes f16: the native-f16 path only');
  return /* wgsl */ `enable f16;
struct Dims { words: u32, inDim: u32 }
@group(0) @binding(0) var<storage, read> Wq: array<u32>;
${q4ScaleDecl(p, 1)}
@group(0) @binding(2) var<storage, read_write> out: array<vec4<f16>>;
@group(0) @binding(3) var<uniform> dims: Dims;
${Q4_UNPACK_WGSL}
@compute @workgroup_size(${Q4_DEQUANT_WG})
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
  let i = (${FLAT_WG}) * ${Q4_DEQUANT_WG}u + lid;
  if (i >= dims.words) { return; }
  // Word i holds columns 8i .. 8i+7 of the flattened [rows, inDim] matrix; its group of 32 is i / 4.
  let s = S_at(i / 4u);
  let w = Wq[i];
  out[2u * i] = vec4<f16>(q4lo(w) * s);
  out[2u * i + 1u] = vec4<f16>(q4hi(w) * s);
}
`;
}

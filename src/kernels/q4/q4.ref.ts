// CPU side of web-llm's 4-bit group quantization (mlc-llm `q4f16_1` / `q4f32_1`): a quantizer to make test
// and benchmark weights, and a float64 dequantizer the kernel references multiply with.
//
// Format, as mlc-llm writes it (python/mlc_llm/quantization/group_quantization.py, GroupQuantize with
// quantize_dtype int4, storage_dtype uint32, group_size 32, linear_weight_layout "NK"):
// - q_weight uint32 [out, in/8]: utils.py pack_weight shifts element r of a storage word by r*4 bits, so
//   input column 8k+j is bits 4j..4j+3 of word k (convert_uint_to_float reads it back the same way);
// - q_scale [out, in/32] in the model dtype (f16 for q4f16_1, f32 for q4f32_1);
// - max_int_value = 2^(4-1) - 1 = 7; _quantize: scale = max|w| / 7 over the group,
//   q = clamp(round(w / scale + 7), 0, 14); _dequantize: value = (q - 7) * scale.
// Groups run along the INPUT dimension, so `in` must be a multiple of 32. Embeddings are quantized the
// same way along the hidden axis (they are [vocab, hidden], i.e. the tied LM head's [out, in]).
import { f16BitsToF32, f32ToF16Bits } from '../../util/half';

export const Q4_GROUP = 32;
export const Q4_ZERO = 7;

export type Q4ScaleDtype = 'f16' | 'f32';

/** One quantized [out, in] matrix on the CPU: the bytes the GPU buffers hold. */
export interface Q4Matrix {
  /** uint32 [out, in/8]. */
  qWeight: Uint32Array;
  /** f16 bits (Uint16Array) or f32 (Float32Array), [out, in/32]. */
  qScale: Uint16Array | Float32Array;
  scale: Q4ScaleDtype;
  out: number;
  inDim: number;
}

/** Throws unless `inDim` can be group-quantized: a clear error naming `what`. */
export function checkQ4InDim(what: string, inDim: number): void {
  if (!Number.isInteger(inDim) || inDim < Q4_GROUP || inDim % Q4_GROUP !== 0) {
    throw new Error(`${what}: 4-bit weights need the input dimension to be a positive multiple of ${Q4_GROUP} (one scale per ${Q4_GROUP} inputs), got ${inDim}`);
  }
}

/** Quantizes W [out, in] row-major the way mlc-llm's GroupQuantize does (scale rounded to the scale dtype first). */
export function quantizeQ4(W: ArrayLike<number>, out: number, inDim: number, scale: Q4ScaleDtype = 'f16'): Q4Matrix {
  checkQ4InDim('quantizeQ4', inDim);
  if (W.length !== out * inDim) throw new Error(`quantizeQ4: W has ${W.length} values, expected ${out} x ${inDim}`);
  const groups = inDim / Q4_GROUP;
  const qWeight = new Uint32Array((out * inDim) / 8);
  const qScale = scale === 'f16' ? new Uint16Array(out * groups) : new Float32Array(out * groups);
  for (let o = 0; o < out; o++) {
    for (let g = 0; g < groups; g++) {
      const base = o * inDim + g * Q4_GROUP;
      let maxAbs = 0;
      for (let j = 0; j < Q4_GROUP; j++) maxAbs = Math.max(maxAbs, Math.abs(W[base + j]));
      let s: number;
      if (scale === 'f16') {
        const bits = f32ToF16Bits(maxAbs / Q4_ZERO);
        qScale[o * groups + g] = bits;
        s = f16BitsToF32(bits);
      } else {
        s = Math.fround(maxAbs / Q4_ZERO);
        qScale[o * groups + g] = s;
      }
      for (let j = 0; j < Q4_GROUP; j++) {
        const q = s > 0 ? Math.min(2 * Q4_ZERO, Math.max(0, Math.round(W[base + j] / s + Q4_ZERO))) : Q4_ZERO;
        const col = g * Q4_GROUP + j;
        qWeight[(o * inDim + col) >> 3] |= q << (4 * (col & 7));
      }
    }
  }
  // `|=` on a Uint32Array element stores the (possibly negative) int32 result modulo 2^32: bits are exact.
  return { qWeight, qScale, scale, out, inDim };
}

/** Scale of group g of row o as a number. */
function scaleAt(m: Pick<Q4Matrix, 'qScale' | 'scale'>, i: number): number {
  return m.scale === 'f16' ? f16BitsToF32(m.qScale[i]) : m.qScale[i];
}

/**
 * Float64 dequantization of rows [rowOffset, rowOffset + rows) (default: all) of a q4 matrix:
 * value[o, 8k + j] = (((qWeight[o, k] >> 4j) & 15) - 7) * qScale[o, (8k + j) / 32].
 */
export function dequantizeQ4(m: Q4Matrix, rowOffset = 0, rows = m.out - rowOffset): Float64Array {
  checkQ4InDim('dequantizeQ4', m.inDim);
  const words = m.inDim / 8;
  const groups = m.inDim / Q4_GROUP;
  if (m.qWeight.length < m.out * words) throw new Error(`dequantizeQ4: q_weight has ${m.qWeight.length} words, expected ${m.out} x ${words}`);
  if (m.qScale.length < m.out * groups) throw new Error(`dequantizeQ4: q_scale has ${m.qScale.length} values, expected ${m.out} x ${groups}`);
  if (rowOffset < 0 || rowOffset + rows > m.out) throw new Error(`dequantizeQ4: rows [${rowOffset}, ${rowOffset + rows}) outside [0, ${m.out})`);
  const res = new Float64Array(rows * m.inDim);
  for (let r = 0; r < rows; r++) {
    const o = rowOffset + r;
    for (let k = 0; k < words; k++) {
      const w = m.qWeight[o * words + k];
      const s = scaleAt(m, o * groups + (k >> 2));
      for (let j = 0; j < 8; j++) res[r * m.inDim + 8 * k + j] = (((w >>> (4 * j)) & 15) - Q4_ZERO) * s;
    }
  }
  return res;
}

/** GPU bytes of a q4 matrix: weights plus scales (what a decode step reads). */
export function q4Bytes(out: number, inDim: number, scale: Q4ScaleDtype = 'f16'): number {
  return (out * inDim) / 2 + (out * inDim / Q4_GROUP) * (scale === 'f16' ? 2 : 4);
}

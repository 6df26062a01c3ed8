import { describe, expect, it } from 'vitest';
import { Rng } from '../../util/rng';
import { f16BitsToF32 } from '../../util/half';
import { dequantizeQ4f16_1 } from '../../io/mlc';
import { dequantizeQ4, q4Bytes, quantizeQ4 } from './q4.ref';

describe('q4 CPU quantizer / dequantizer (mlc-llm group quantization)', () => {
  it('packs column 8k+j into bits 4j..4j+3 of word k, with q = w/scale + 7 and scale = max|w|/7', () => {
    // Row values (q - 7) * 0.5 with q = column mod 15: max |w| = 3.5, so scale = 0.5 and q comes back exactly.
    const W = Array.from({ length: 64 }, (_, c) => ((c % 15) - 7) * 0.5);
    const m = quantizeQ4(W, 1, 64);
    expect(f16BitsToF32(m.qScale[0])).toBe(0.5);
    expect(f16BitsToF32(m.qScale[1])).toBe(0.5);
    expect(m.qWeight[0]).toBe(0x76543210);
    expect(m.qWeight[1]).toBe(0xedcba98); // columns 8..15: q = 8, 9, ..., 14, 0
    expect(Array.from(dequantizeQ4(m))).toEqual(W);
  });

  it('every dequantized value is within half a step of the original, for both scale dtypes', () => {
    const rng = new Rng(1);
    const [out, inDim] = [9, 96];
    const W = rng.fill(out * inDim);
    for (const scale of ['f16', 'f32'] as const) {
      const m = quantizeQ4(W, out, inDim, scale);
      const d = dequantizeQ4(m);
      for (let o = 0; o < out; o++) {
        for (let g = 0; g < inDim / 32; g++) {
          let maxAbs = 0;
          for (let j = 0; j < 32; j++) maxAbs = Math.max(maxAbs, Math.abs(W[o * inDim + g * 32 + j]));
          const step = maxAbs / 7;
          for (let j = 0; j < 32; j++) {
            const i = o * inDim + g * 32 + j;
            expect(Math.abs(d[i] - W[i])).toBeLessThanOrEqual(step / 2 + step * 2e-3);
          }
        }
      }
    }
  });

  it('dequantizeQ4 agrees with the engine loader on arbitrary words (nibble 15 included)', () => {
    const rng = new Rng(2);
    const [out, inDim] = [5, 64];
    const qWeight = Uint32Array.from({ length: (out * inDim) / 8 }, () => Math.floor(rng.next() * 2 ** 32));
    const qScale = Uint16Array.from({ length: (out * inDim) / 32 }, () => 0x3000 + rng.int(0x1000));
    const mine = dequantizeQ4({ qWeight, qScale, scale: 'f16', out, inDim });
    expect(Array.from(mine)).toEqual(Array.from(dequantizeQ4f16_1(qWeight, qScale, out, inDim)));
  });

  it('rejects an input dimension that is not a multiple of 32', () => {
    expect(() => quantizeQ4(new Float32Array(40), 1, 40)).toThrow(/multiple of 32.*got 40/);
  });

  it('counts weight and scale bytes', () => {
    expect(q4Bytes(896, 896)).toBe(896 * 448 + 896 * 28 * 2);
    expect(q4Bytes(2, 32, 'f32')).toBe(32 + 8);
  });
});

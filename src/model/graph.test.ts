// Encode inputs: recorded copies take their per-call offsets from what encodeSteps is given, and a step
// reading an input the caller left out fails naming it (not a NaN offset handed to the GPU).
import { describe, expect, it } from 'vitest';
import type { GpuContext } from '../gpu/device';
import { cacheRowInput, copyStep, encodeInput, encodeSteps, type EncodeInputs } from './graph';

const buf = (label: string) => ({ label }) as unknown as GPUBuffer;

function encoder() {
  const copies: Array<[string, number, string, number, number]> = [];
  const enc = {
    copyBufferToBuffer: (src: GPUBuffer, so: number, dst: GPUBuffer, dO: number, size: number) => copies.push([src.label, so, dst.label, dO, size]),
  } as unknown as GPUCommandEncoder;
  return { enc, copies };
}

describe('encodeSteps inputs', () => {
  const ctx = {} as GpuContext;
  const a = buf('a');
  const b = buf('b');
  const steps = [
    copyStep(a, b, 8, (i: EncodeInputs) => encodeInput(i, 'cacheRow') * 8),
    copyStep(a, b, 4, (i: EncodeInputs) => cacheRowInput(i, 1) * 8, (i: EncodeInputs) => encodeInput(i, 'row0') * 4),
  ];

  it('computes each copy offset from the inputs of this encode', () => {
    const { enc, copies } = encoder();
    encodeSteps(ctx, enc, steps, { cacheRow: 3, cacheRows: [9, 5], row0: 2 });
    encodeSteps(ctx, enc, steps, { cacheRow: 4, cacheRows: [0, 6], row0: 7 });
    expect(copies).toEqual([['a', 0, 'b', 24, 8], ['a', 8, 'b', 40, 4], ['a', 0, 'b', 32, 8], ['a', 28, 'b', 48, 4]]);
  });

  it('names an input the steps read but the caller left out', () => {
    expect(() => encodeSteps(ctx, encoder().enc, steps, { cacheRows: [0, 1], row0: 0 })).toThrow(/encode input 'cacheRow'/);
    expect(() => encodeSteps(ctx, encoder().enc, steps, { cacheRow: 0, cacheRows: [0], row0: 0 })).toThrow(/row 1 of the encode input 'cacheRows'/);
    expect(() => encodeSteps(ctx, encoder().enc, steps, { cacheRow: 0, cacheRows: [0, 1] })).toThrow(/encode input 'row0'/);
  });
});

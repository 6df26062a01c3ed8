// Which q/k/v LoRA ups the fused decode puts in c_attn's epilogue for a device's storage-binding limit.
import { describe, expect, it } from 'vitest';
import { qkvEpilogueLoras } from './decode-forward';

describe('qkvEpilogueLoras', () => {
  const all = [true, true, true];
  it('puts every up in the epilogue where 13 storage bindings fit (lavapipe: 16)', () => {
    expect(qkvEpilogueLoras(all, 16)).toEqual([true, true, true]);
    expect(qkvEpilogueLoras(all, 13)).toEqual([true, true, true]);
  });
  it('puts as many as fit, in q, k, v order, under a narrower limit (SwiftShader: 10)', () => {
    expect(qkvEpilogueLoras(all, 12)).toEqual([true, true, false]);
    expect(qkvEpilogueLoras(all, 10)).toEqual([true, false, false]);
    expect(qkvEpilogueLoras([true, false, true], 11)).toEqual([true, false, true]);
    expect(qkvEpilogueLoras([false, true, false], 9)).toEqual([false, true, false]);
  });
  it('leaves the LoRA unfused where the norm + downs group storing xn1 cannot bind, or nothing is adapted', () => {
    // Three downs with the norm weight and xn1: 9 bindings.
    expect(qkvEpilogueLoras(all, 8)).toBeNull();
    // One down fits (5) but c_attn with one up needs 9.
    expect(qkvEpilogueLoras([false, true, false], 8)).toBeNull();
    expect(qkvEpilogueLoras([false, false, false], 16)).toBeNull();
  });
});

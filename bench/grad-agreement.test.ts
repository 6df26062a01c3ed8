import { describe, expect, it } from 'vitest';
import { compareGradients, type GradRun } from './grad-agreement';

const run = (loss: number, t: Record<string, number[]>): GradRun => ({ loss, ms: 1, grads: new Map(Object.entries(t).map(([k, v]) => [k, Float32Array.from(v)])) });

describe('compareGradients', () => {
  it('gives the relative L2 error over all tensors, the worst tensor, the cosine and non-finite entries', () => {
    const ref = run(1, { a: [3, 4], b: [0, 1] });
    const got = run(1.5, { a: [3, 4], b: [0, 1.5] });
    const c = compareGradients(got, ref);
    // ||d|| = 0.5, ||ref|| = sqrt(26); tensor b is off by 50 %.
    expect(c.relativeL2).toBeCloseTo(0.5 / Math.sqrt(26), 4);
    expect(c.worstTensor).toEqual({ name: 'b', relativeL2: 0.5, refNorm: 1, diffNorm: 0.5 });
    expect(c.largestError).toEqual({ name: 'b', share: 1, relativeL2: 0.5 });
    expect(c.refNorm).toBeCloseTo(Math.sqrt(26), 3);
    expect(c.oneMinusCosine).toBeCloseTo(1 - 26.5 / Math.sqrt(27.25 * 26), 4);
    expect(c.cosine).toBeCloseTo(26.5 / Math.sqrt(27.25 * 26), 4);
    expect(c.loss).toEqual([1.5, 1]);
    expect(c.nonFinite).toBe(0);
    expect(compareGradients(run(1, { a: [NaN, 4], b: [0, 1] }), ref).nonFinite).toBe(1);
    expect(compareGradients(ref, ref)).toMatchObject({ relativeL2: 0, cosine: 1 });
  });

  it('names a tensor the compared path lacks or has at another size', () => {
    expect(() => compareGradients(run(1, { a: [3, 4] }), run(1, { a: [3, 4], b: [1] }))).toThrow(/gradient 'b' missing/);
    expect(() => compareGradients(run(1, { a: [3] }), run(1, { a: [3, 4] }))).toThrow(/gradient 'a' missing or of another size/);
  });
});

import { describe, expect, it } from 'vitest';
import { checkEntries, parseShapes, randomHalves, referenceEntry, sampleEntries, tflops } from './subgroup-matrix-check';
import { f16BitsToF32 } from '../src/util/half';

describe('subgroup-matrix probe: float64 check', () => {
  it('computes C = A W^T with W stored [n, k]', () => {
    // A [2, 3], W [2, 3]: C[1, 0] = 4*1 + 5*0 + 6*(-1) = -2; sum of |products| 10.
    const a = [1, 2, 3, 4, 5, 6];
    const w = [1, 0, -1, 0.5, 0.5, 0.5];
    expect(referenceEntry(a, w, 3, 1, 0)).toEqual({ value: -2, absSum: 10 });
    expect(referenceEntry(a, w, 3, 0, 1).value).toBe(3);
  });

  it('passes the exact product and catches a transposed W or a wrong entry', () => {
    const m = 8, n = 6, k = 40;
    const a = randomHalves(m * k, 1).values;
    const w = randomHalves(n * k, 2).values;
    const entries = sampleEntries(m, n, 20, 3);
    const exact = (r: number, c: number) => referenceEntry(a, w, k, r, c).value;
    const good = checkEntries((r, c) => Math.fround(exact(r, c)), a, w, k, entries);
    expect(good.maxErrorOverAbsSum).toBeLessThan(1e-6);
    expect(good.nonFinite).toBe(0);
    // W read as [k, n] instead of [n, k]: far off.
    const transposed = (r: number, c: number) => {
      let s = 0;
      for (let i = 0; i < k; i++) s += a[r * k + i] * w[(i % n) * k + ((c + i) % k)];
      return s;
    };
    expect(checkEntries(transposed, a, w, k, entries).maxErrorOverAbsSum).toBeGreaterThan(0.01);
    const nan = checkEntries((r, c) => (r === 0 && c === 0 ? NaN : exact(r, c)), a, w, k, entries);
    expect(nan.nonFinite).toBe(1);
  });

  it('draws the same exact halves every run, and samples include both corners', () => {
    const x = randomHalves(1000, 7);
    expect(randomHalves(1000, 7).bits).toEqual(x.bits);
    for (let i = 0; i < 1000; i++) {
      expect(x.values[i]).toBe(f16BitsToF32(x.bits[i]));
      expect(Math.abs(x.values[i])).toBeLessThanOrEqual(1);
    }
    const s = sampleEntries(768, 896, 10, 3);
    expect(s).toHaveLength(10);
    expect(s.slice(0, 2)).toEqual([[0, 0], [767, 895]]);
    for (const [r, c] of s) expect(r < 768 && c < 896).toBe(true);
  });

  it('gives TFLOP/s and parses shapes, naming a bad one', () => {
    expect(tflops(768, 1152, 896, 0.1)).toBe(15.85);
    expect(parseShapes('qkv:896x1152, down:4864x896', 768)).toEqual([
      { name: 'qkv', m: 768, k: 896, n: 1152 },
      { name: 'down', m: 768, k: 4864, n: 896 },
    ]);
    expect(() => parseShapes('qkv:896', 768)).toThrow(/--shapes: 'qkv:896' is not name:KxN/);
    expect(() => parseShapes('a:1x1', 0)).toThrow(/--rows must be a positive integer/);
  });
});

import { describe, expect, it } from 'vitest';
import { Rng } from '../../util/rng';
import { candidateDistribution, checkSamplingOptions, drawIndex, logSumExp, sortRow } from './draw';
import { samplingDistributionRef } from './sampling.ref';

describe('candidateDistribution (CPU half of sampling)', () => {
  const rng = new Rng(3);
  const logits = rng.fill(300, 2);
  const sorted = sortRow(logits);
  const top = (k: number) => [sorted.values.slice(0, k), sorted.ids.slice(0, k)] as const;

  for (const o of [
    { temperature: 0.5, topK: 10, topP: 1 },
    { temperature: 1, topK: 40, topP: 0.7 },
    { temperature: 0.3, topK: 0, topP: 0.9 },
  ]) {
    it(`T=${o.temperature} topK=${o.topK} topP=${o.topP}: 64 candidates give the float64 distribution`, () => {
      const [v, ids] = top(64);
      const d = candidateDistribution(v, ids, logSumExp(logits, 1 / o.temperature), logits.length, o);
      expect(d).not.toBeNull();
      const want = samplingDistributionRef(logits, o.temperature, o.topK, o.topP);
      expect(d!.ids.length).toBe(want.filter((p) => p > 0).length);
      d!.ids.forEach((id, i) => expect(d!.probs[i]).toBeCloseTo(want[id], 12));
    });
  }

  it('returns null when the candidates cannot decide (wide nucleus, top-k beyond them, pure temperature)', () => {
    const [v, ids] = top(8);
    const lse = logSumExp(logits, 1 / 2);
    expect(candidateDistribution(v, ids, lse, 300, { temperature: 2, topP: 0.99 })).toBeNull();
    expect(candidateDistribution(v, ids, lse, 300, { temperature: 2, topK: 100 })).toBeNull();
    expect(candidateDistribution(v, ids, lse, 300, { temperature: 2 })).toBeNull();
    // The whole row always decides.
    expect(candidateDistribution(sorted.values, sorted.ids, lse, 300, { temperature: 2 })).not.toBeNull();
  });

  it('drawIndex follows the probabilities and checkSamplingOptions names the bad field', () => {
    const r = new Rng(1);
    const counts = [0, 0, 0];
    for (let i = 0; i < 30000; i++) counts[drawIndex([0.2, 0.5, 0.3], r)]++;
    // 5 binomial sd at n = 30000 is < 0.012 of n.
    expect(Math.abs(counts[0] / 30000 - 0.2)).toBeLessThan(0.012);
    expect(Math.abs(counts[1] / 30000 - 0.5)).toBeLessThan(0.012);
    expect(() => checkSamplingOptions({ topP: 0 })).toThrow(/topP/);
    expect(() => checkSamplingOptions({ temperature: -1 })).toThrow(/temperature/);
    expect(() => checkSamplingOptions({ topK: 1.5 })).toThrow(/topK/);
  });
});

describe('sortRow (packed-key sort of a whole row)', () => {
  it('orders exactly as a (value desc, id asc) comparator sort, with ties, NaN, infinities and signed zeros', () => {
    const rng = new Rng(11);
    for (const V of [1, 2, 17, 5000]) {
      const row = Float32Array.from(rng.fill(V, 3), (x, i) => (i % 7 === 0 ? Math.round(x) : x));
      if (V > 10) {
        row[1] = NaN;
        row[2] = Infinity;
        row[3] = -Infinity;
        row[4] = -0;
        row[5] = 0;
        row[6] = row[8];
      }
      const key = (i: number) => (Number.isNaN(row[i]) ? -Infinity : row[i]);
      const want = Array.from({ length: V }, (_, i) => i).sort((a, b) => key(b) - key(a) || a - b);
      const got = sortRow(row);
      expect(Array.from(got.ids)).toEqual(want);
      expect(Array.from(got.values)).toEqual(want.map(key));
    }
  });
});

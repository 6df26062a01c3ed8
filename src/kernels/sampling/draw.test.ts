import { describe, expect, it } from 'vitest';
import { Rng } from '../../util/rng';
import { candidateDistribution, checkSamplingOptions, drawIndex, drawTail, logSumExp, pcgHash, pickFromPrefix, sortRow, tailAttempt } from './draw';
import { pureTemperatureDrawRef, samplingDistributionRef } from './sampling.ref';

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

describe('drawTail (pure temperature past the top candidates: seeded rejection draw over the rest of the row)', () => {
  // The rule in full on the CPU, as GpuSampler.sampleWithU applies it (top 64 first, then the tail).
  const drawRule = (row: Float32Array, T: number, u: number) => {
    const s = sortRow(row);
    const k = 64;
    const hit = pickFromPrefix(s.values.subarray(0, k), logSumExp(row, 1 / T), T, u);
    if (hit) return s.ids[hit.index];
    return drawTail(row, T, { value: s.values[k - 1], id: s.ids[k - 1] }, u) ?? s.ids[k - 1];
  };

  it('pcgHash is the published PCG hash (integer-exact, as the WGSL computes it)', () => {
    // pcg_hash(0) and pcg_hash(1) computed separately in Python (integers masked to 32 bits).
    expect(pcgHash(0)).toBe(129708002);
    expect(pcgHash(1)).toBe(2831084092);
    expect(pcgHash(0xffffffff)).toBe(pcgHash(-1));
  });

  it('tail tokens come out in proportion to exp(logit / T) among the tokens past the top 64', () => {
    const rng = new Rng(8);
    const V = 400;
    const T = 0.8;
    const row = rng.fill(V, 1.5);
    const s = sortRow(row);
    const last = { value: s.values[63], id: s.ids[63] };
    const tail = Array.from(s.ids.subarray(64));
    const w = tail.map((id) => Math.exp(row[id] / T));
    const z = w.reduce((a, b) => a + b, 0);
    const counts = new Map<number, number>();
    const n = 40000;
    for (let i = 0; i < n; i++) {
      const id = drawTail(row, T, last, rng.next())!;
      expect(tail.includes(id)).toBe(true);
      counts.set(id, (counts.get(id) ?? 0) + 1);
    }
    // Chi-square over bins of tail tokens with >= 100 expected draws each (bins of one token's count are
    // unreliable where few are expected): 6 sd above the mean fails.
    let chi = 0;
    let bins = 0;
    let got = 0;
    let want = 0;
    tail.forEach((id, j) => {
      got += counts.get(id) ?? 0;
      want += (n * w[j]) / z;
      if (want >= 100 || j === tail.length - 1) {
        chi += (got - want) ** 2 / want;
        bins++;
        got = want = 0;
      }
    });
    expect(bins).toBeGreaterThan(50);
    expect(chi).toBeLessThan(bins - 1 + 6 * Math.sqrt(2 * (bins - 1)));
  });

  it('the whole rule equals the independent float64 reference, including ties at the 64th logit and -Infinity', () => {
    const rng = new Rng(21);
    for (const [V, scale, T] of [[3000, 0.3, 1], [3000, 2, 0.7], [1500, 0.01, 1.5]] as const) {
      const row = rng.fill(V, scale);
      // A tie across the 64th place (the lower id is a candidate) and tokens that can never be drawn.
      const s = sortRow(row);
      row[V - 1] = row[s.ids[63]];
      for (let i = 0; i < 20; i++) row[rng.int(V)] = -Infinity;
      for (let i = 0; i < 200; i++) {
        const u = rng.next();
        expect(drawRule(row, T, u), `V=${V} scale=${scale} u=${u}`).toBe(pureTemperatureDrawRef(row, T, u));
      }
    }
  });

  it('an attempt past the last whole multiple of V proposes nothing, and a tail of zero weight gives null', () => {
    // Some seed's attempt lands in the last partial block of 2^32 (V = 3 * 2^30 + 1 leaves a quarter of it).
    const V = 3 * 2 ** 30 + 1;
    let none = 0;
    for (let k = 0; k < 64; k++) if (tailAttempt(0.5, k, V).id < 0) none++;
    expect(none).toBeGreaterThan(0);
    const row = new Float32Array(100).fill(-Infinity);
    for (let i = 0; i < 64; i++) row[i] = 1;
    expect(drawTail(row, 1, { value: 1, id: 63 }, 0.9)).toBeNull();
  });
});

import { describe, expect, it } from 'vitest';
import { Rng } from '../../util/rng';
import { gpuFor, weightPaths } from '../../../tests/support/gpu';
import { f32Buffer } from '../common/testing';
import { drawIndex, logSumExp, sortRow } from './draw';
import { GpuSampler, greedy } from '../../engine/gpu-sampler';
import { argmaxRef, samplingDistributionRef } from './sampling.ref';

describe('sampling (GPU candidates + seeded CPU draw)', async () => {
  const paths = await weightPaths();
  for (const path of paths) {
    for (const V of [1, 7, 1000, 3001]) {
      it(`${path}: V=${V} greedy = CPU argmax with ties to the lowest id, logprob = log softmax`, async () => {
        const ctx = await gpuFor(path);
        const rng = new Rng(V);
        const logits = rng.fill(V, 2);
        if (V > 10) {
          // A tie for the max across slices: the lower id must win.
          logits[V - 2] = 50;
          logits[3] = 50;
        }
        const buf = f32Buffer(ctx, 'logits', logits);
        const s = await GpuSampler.create(ctx, { logits: buf, vocab: V });
        const r = await greedy(s);
        expect(r.token).toBe(argmaxRef(logits));
        expect(r.sampleLogprob).toBe(0);
        // |lse| <= ~50: f32 lse carries ~1e-6 relative.
        expect(Math.abs(r.logprob - (logits[r.token] - logSumExp(logits)))).toBeLessThan(1e-4);
        // Top-64 candidates equal the CPU sort exactly (ids and f32 values).
        const k = Math.min(64, V);
        const c = await s.candidates(k);
        const ref = sortRow(logits);
        expect(Array.from(c.ids)).toEqual(Array.from(ref.ids.slice(0, k)));
        expect(Array.from(c.values)).toEqual(Array.from(ref.values.slice(0, k)));
        s.destroy();
        buf.destroy();
      });
    }

    // `full`: the candidates cannot decide the distribution, so the whole row is read back.
    const configs = [
      { temperature: 0.7, topK: 20, topP: 0.9, full: false },
      { temperature: 1.3, topK: 0, topP: 0.8, full: false },
      { temperature: 1, topK: 5, topP: 1, full: false },
      // Pure temperature sampling needs the whole distribution.
      { temperature: 2, topK: 0, topP: 1, full: true },
      // A nucleus wider than 64 tokens.
      { temperature: 3, topK: 0, topP: 0.95, full: true },
    ];
    for (const o of configs) {
      it(`${path}: T=${o.temperature} topK=${o.topK} topP=${o.topP}: distribution and draw frequencies match float64`, async () => {
        const ctx = await gpuFor(path);
        const V = 2500;
        const rng = new Rng(42);
        // Peaked logits so the nucleus is a few dozen tokens, like a real LM.
        const logits = rng.fill(V, 1);
        for (let i = 0; i < 30; i++) logits[rng.int(V)] += 9;
        const buf = f32Buffer(ctx, 'logits', logits);
        const s = await GpuSampler.create(ctx, { logits: buf, vocab: V });
        const want = samplingDistributionRef(logits, o.temperature, o.topK, o.topP);
        const d = await s.distribution(o);
        expect(d.usedFullRow).toBe(o.full);
        // Same support, probabilities to f32-lse accuracy (|logit/T| <= ~15: ~1e-6 relative).
        const support = Array.from(want.keys()).filter((i) => want[i] > 0);
        if (o.topP < 1) expect(support.length > 64).toBe(o.full);
        expect([...d.ids].sort((a, b) => a - b)).toEqual(support);
        d.ids.forEach((id, i) => expect(Math.abs(d.probs[i] - want[id])).toBeLessThan(1e-5));
        // End-to-end draws through sample(): every token is in the support and both log-probs are right.
        const draw = new Rng(7);
        const lse1 = logSumExp(logits);
        for (let t = 0; t < 150; t++) {
          const r = await s.sample(o, draw);
          expect(want[r.token]).toBeGreaterThan(0);
          expect(Math.abs(r.sampleLogprob - Math.log(want[r.token]))).toBeLessThan(1e-4);
          expect(Math.abs(r.logprob - (logits[r.token] - lse1))).toBeLessThan(1e-4);
        }
        // Frequencies of many seeded draws (the same drawIndex sample() uses) from the GPU-derived
        // distribution vs the float64 reference. Each token's count c must satisfy |c - np| < 5 sd + 5:
        // 5 sd for frequent tokens, +5 for the many rare ones (np << 1) where the normal approximation
        // fails; by a Chernoff bound a correct sampler breaks it with probability well under 1%, and the
        // fixed seed makes the outcome deterministic. A wrong temperature, cut-off or id is far outside it.
        const n = 20000;
        const counts = new Map<number, number>();
        for (let t = 0; t < n; t++) {
          const id = d.ids[drawIndex(d.probs, draw)];
          counts.set(id, (counts.get(id) ?? 0) + 1);
        }
        for (const id of support) {
          const p = want[id];
          const c = counts.get(id) ?? 0;
          expect(Math.abs(c - n * p)).toBeLessThan(5 * Math.sqrt(n * p * (1 - p)) + 5);
        }
        expect([...counts.keys()].every((id) => want[id] > 0)).toBe(true);
        s.destroy();
        buf.destroy();
      });
    }
  }
});

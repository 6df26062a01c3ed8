import { describe, expect, it } from 'vitest';
import { Rng } from '../../util/rng';
import { centralDiff } from '../finite-diff.ref';
import { flattenSamples, grpoRef, grpoTokenRef, randomGrpoTokens, type GrpoHyper } from './grpo.ref';
import { loadFlowGrpoFixture } from './grpo.fixture';

const H: GrpoHyper = { epsLow: 0.2, epsHigh: 0.28, beta: 0.04 };

describe('Flow-GRPO float64 reference', () => {
  it('reproduces the fixture loss from cur/old/ref log-probs', () => {
    const fx = loadFlowGrpoFixture();
    const f = flattenSamples(fx.samples);
    const { loss } = grpoRef(f.logp, f.old, f.ref, f.adv, f.weight, { epsLow: fx.eps_low, epsHigh: fx.eps_high, beta: fx.beta });
    expect(Math.abs(loss - fx.loss) / Math.abs(fx.loss)).toBeLessThan(1e-4);
  });

  it('d loss / d logp matches central finite differences on every branch', () => {
    const rng = new Rng(7);
    const T = 400;
    const { logp, old, ref, adv, w } = randomGrpoTokens(rng, T, (i) => (i % 5 === 0 ? 0 : 1 / T), Float64Array);
    const r = grpoRef(logp, old, ref, adv, w, H);
    const fd = centralDiff((x) => grpoRef(x, old, ref, adv, w, H).loss, logp, 1e-6);
    let maxErr = 0;
    for (let i = 0; i < T; i++) maxErr = Math.max(maxErr, Math.abs(fd[i] - r.dlogp[i]));
    expect(maxErr).toBeLessThan(1e-8);
    // Every branch is exercised: clipped tokens, unclipped out-of-range tokens, clamped k3.
    const res = Array.from(logp, (_, i) => grpoTokenRef(logp[i], old[i], ref[i], adv[i], H));
    expect(res.some((t) => t.clipped)).toBe(true);
    expect(res.some((t, i) => !t.clipped && Math.exp(logp[i] - old[i]) > 1.28)).toBe(true);
    expect(res.some((t) => t.k3 === 10)).toBe(true);
  });

  it('a clipped token has no policy gradient and a clamped k3 none either', () => {
    // rho = e^1 > 1.28 with A > 0: -A*clip wins, so only the k3 term (clamped here) remains: zero.
    const t = grpoTokenRef(-1, -2, 3, 1, H);
    expect(t.clipped).toBe(true);
    expect(t.k3).toBe(10);
    expect(t.dterm).toBe(0);
  });

  it('rejects per-token arrays of different lengths, naming the field', () => {
    expect(() => grpoRef([0, 0], [0, 0], [0], [0, 0], [0, 0], H)).toThrow(/'ref'/);
  });
});

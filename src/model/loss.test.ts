import { describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { TINY } from '../../tests/support/qwen2-fixture';
import { grpoLoss } from './loss';

describe('Flow-GRPO token loss (float64)', () => {
  it('reproduces the fixture loss from its logprobs (PyTorch reference)', () => {
    const f = JSON.parse(readFileSync(join(TINY, 'expected.json'), 'utf8')).flowgrpo;
    const logp: number[] = [];
    const old: number[] = [];
    const ref: number[] = [];
    const adv: number[] = [];
    for (const s of f.samples) {
      logp.push(...s.cur_logprobs);
      old.push(...s.old_logprobs);
      ref.push(...s.ref_logprobs);
      adv.push(...s.old_logprobs.map(() => s.advantage));
    }
    const r = grpoLoss({ logp, old, ref, adv }, { epsLow: f.eps_low, epsHigh: f.eps_high, beta: f.beta });
    expect(r.sums.tokens).toBe(24);
    expect(Math.abs(r.loss - f.loss) / Math.abs(f.loss)).toBeLessThan(1e-9);
  });

  it('hand-computed tokens: unclipped, clipped high, clipped low, KL clamp', () => {
    const p = { epsLow: 0.2, epsHigh: 0.3, beta: 0.5 };
    // ρ = e^0.1 = 1.10517 inside [0.8, 1.3]; A = 2: policy = -2.21034; ref = logp -> k3 = 0.
    let r = grpoLoss({ logp: [0.1], old: [0], ref: [0.1], adv: [2] }, p);
    expect(r.loss).toBeCloseTo(-2 * Math.exp(0.1), 12);
    expect(r.dlogp[0]).toBeCloseTo(-2 * Math.exp(0.1), 12);
    expect(r.sums.clipped).toBe(0);
    // ρ = e^0.5 = 1.6487 > 1.3 with A = 1: clipped branch -1.3 wins, zero policy gradient.
    r = grpoLoss({ logp: [0.5], old: [0], ref: [0.5], adv: [1] }, p);
    expect(r.loss).toBeCloseTo(-1.3, 12);
    expect(r.dlogp[0]).toBe(0);
    expect(r.sums.clipped).toBe(1);
    // ρ = e^-0.5 = 0.6065 < 0.8 with A = -1: clipped term 0.8 beats 0.6065, zero gradient.
    r = grpoLoss({ logp: [-0.5], old: [0], ref: [-0.5], adv: [-1] }, p);
    expect(r.loss).toBeCloseTo(0.8, 12);
    expect(r.sums.clipped).toBe(1);
    // ρ = e^0.5 with A = -1: unclipped -(-1)(1.6487) = 1.6487 > 1.3, so the gradient flows.
    r = grpoLoss({ logp: [0.5], old: [0], ref: [0.5], adv: [-1] }, p);
    expect(r.loss).toBeCloseTo(Math.exp(0.5), 12);
    expect(r.dlogp[0]).toBeCloseTo(Math.exp(0.5), 12);
    // KL: d = ref - logp = 1 -> k3 = e - 2 = 0.71828; dk3/dlogp = 1 - e.
    r = grpoLoss({ logp: [0], old: [0], ref: [1], adv: [0] }, p);
    expect(r.loss).toBeCloseTo(0.5 * (Math.E - 2), 12);
    expect(r.dlogp[0]).toBeCloseTo(0.5 * (1 - Math.E), 12);
    // d = 5 -> k3 = e^5 - 6 = 142 clamps to 10 with zero gradient.
    r = grpoLoss({ logp: [0], old: [0], ref: [5], adv: [0] }, p);
    expect(r.loss).toBeCloseTo(5, 12);
    expect(r.dlogp[0]).toBe(0);
  });

  it('dlogp matches central differences and respects mask and normalizer', () => {
    const x = { logp: [-1.2, -0.3, -2.0, -0.7], old: [-1.0, -0.5, -2.1, -0.7], ref: [-1.5, -0.2, -1.0, -0.9], adv: [0.8, -1.1, 0.4, 1.0], mask: [1, 1, 1, 0] };
    const p = { epsLow: 0.2, epsHigh: 0.28, beta: 0.04 };
    const r = grpoLoss(x, p, 10);
    expect(r.sums.tokens).toBe(3);
    expect(r.dlogp[3]).toBe(0);
    for (let i = 0; i < 3; i++) {
      const h = 1e-6;
      const up = [...x.logp];
      const dn = [...x.logp];
      up[i] += h;
      dn[i] -= h;
      const fd = (grpoLoss({ ...x, logp: up }, p, 10).loss - grpoLoss({ ...x, logp: dn }, p, 10).loss) / (2 * h);
      expect(r.dlogp[i]).toBeCloseTo(fd, 7);
    }
  });
});

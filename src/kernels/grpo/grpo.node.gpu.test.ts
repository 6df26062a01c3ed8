import { describe, expect, it } from 'vitest';
import { createStorage, readF32 } from '../../gpu/buffers';
import { submitDispatches } from '../../gpu/pipelines';
import { gpuFor } from '../../../tests/support/gpu';
import { f32Buffer, relMaxErr } from '../common/testing';
import { grpoLoss } from './grpo';
import { flattenSamples, grpoRef, grpoTokenRef } from './grpo.ref';
import { loadFlowGrpoFixture } from './grpo.fixture';
import { sumOf } from '../reduce/reduce';

describe('grpo loss kernel on the shared Flow-GRPO fixture', () => {
  it('GPU loss (summed on the GPU) matches expected.json flowgrpo.loss within 1e-4 relative', async () => {
    const ctx = await gpuFor('packed');
    const fx = loadFlowGrpoFixture();
    const f = flattenSamples(fx.samples);
    const T = f.logp.length;
    const [logp, old, ref, adv, w] = [f.logp, f.old, f.ref, f.adv, f.weight].map((a, k) => f32Buffer(ctx, `fx${k}`, a));
    const dlogp = createStorage(ctx, 'dlogp', T * 4);
    const stats = createStorage(ctx, 'stats', 3 * T * 4);
    const partials = createStorage(ctx, 'partials', 12);
    const out = createStorage(ctx, 'out', 16);
    submitDispatches(ctx, [
      await grpoLoss(ctx, { logp, old, ref, advantage: adv, weight: w, dlogp, stats, tokens: T, epsLow: fx.eps_low, epsHigh: fx.eps_high, beta: fx.beta }),
      // One input per stats plane: partials = [loss, clip fraction, mean k3].
      ...(await sumOf(ctx, { inputs: [0, 1, 2].map((k) => ({ buffer: stats, count: T, offset: k * T })), partials, out })),
    ]);
    const [loss, clipFrac, meanK3] = await readF32(ctx, partials, 3);
    expect(Math.abs(loss - fx.loss) / Math.abs(fx.loss)).toBeLessThan(1e-4);
    const hyper = { epsLow: fx.eps_low, epsHigh: fx.eps_high, beta: fx.beta };
    const tok = Array.from(f.logp, (_, i) => grpoTokenRef(f.logp[i], f.old[i], f.ref[i], f.adv[i], hyper));
    expect(Math.abs(clipFrac - tok.filter((t) => t.clipped).length / T)).toBeLessThan(1e-6);
    expect(Math.abs(meanK3 - tok.reduce((s, t) => s + t.k3, 0) / T)).toBeLessThan(1e-5);
    const d = await readF32(ctx, dlogp, T);
    // dlogp is O(1/T): compare T * dlogp so the tolerance is relative to O(1) values.
    const wantD = grpoRef(f.logp, f.old, f.ref, f.adv, f.weight, hyper).dlogp;
    expect(relMaxErr(Array.from(d, (x) => x * T), Array.from(wantD, (x) => x * T))).toBeLessThan(1e-4);
    expect(d.some((x) => x !== 0)).toBe(true);
  });
});

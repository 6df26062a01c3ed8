import { describe, expect, it } from 'vitest';
import { createStorage, readF32 } from '../../gpu/buffers';
import { submitDispatches } from '../../gpu/pipelines';
import { Rng } from '../../util/rng';
import { gpuFor } from '../../../tests/support/gpu';
import { f32Buffer, relMaxErr } from '../common/testing';
import { centralDiff } from '../finite-diff.ref';
import { grpoLoss } from './grpo';
import { grpoRef, randomGrpoTokens, type GrpoHyper } from './grpo.ref';

const H: GrpoHyper = { epsLow: 0.2, epsHigh: 0.28, beta: 0.04 };

describe('grpo loss kernel', () => {
  for (const T of [1, 37, 700]) {
    it(`T=${T}: loss terms, d loss/d logp and stats match float64 (and finite differences)`, async () => {
      const ctx = await gpuFor('packed');
      const rng = new Rng(T);
      const { logp, old, ref, adv, w } = randomGrpoTokens(rng, T, (i) => (i % 4 === 0 && T > 1 ? 0 : 1 / T), Float32Array);
      const bufs = [logp, old, ref, adv, w].map((a, k) => f32Buffer(ctx, `grpo.in${k}`, a));
      const dlogp = createStorage(ctx, 'dlogp', T * 4);
      const stats = createStorage(ctx, 'stats', 3 * T * 4);
      submitDispatches(ctx, [
        await grpoLoss(ctx, { logp: bufs[0], old: bufs[1], ref: bufs[2], advantage: bufs[3], weight: bufs[4], dlogp, stats, tokens: T, ...H }),
      ]);
      const gotD = await readF32(ctx, dlogp, T);
      const gotS = await readF32(ctx, stats, 3 * T);
      const want = grpoRef(logp, old, ref, adv, w, H);
      const fd = centralDiff((x) => grpoRef(x, old, ref, adv, w, H).loss, logp, 1e-6);
      expect(relMaxErr(want.dlogp, fd)).toBeLessThan(1e-7);
      // f32 exp of |logp-old| ~ 3 carries ~1e-6 relative error; gradients are O(1/T).
      expect(relMaxErr(Array.from(gotD, (v) => v * T), Array.from(want.dlogp, (v) => v * T))).toBeLessThan(1e-4);
      expect(relMaxErr(Array.from(gotS, (v) => v * T), Array.from(want.stats, (v) => v * T))).toBeLessThan(1e-4);
      let loss = 0;
      for (let i = 0; i < T; i++) loss += gotS[i];
      expect(Math.abs(loss - want.loss)).toBeLessThan(1e-4 * Math.max(1, Math.abs(want.loss)));
      expect(gotD.some((v) => v !== 0)).toBe(true);
      for (const b of [...bufs, dlogp, stats]) b.destroy();
    });
  }
});

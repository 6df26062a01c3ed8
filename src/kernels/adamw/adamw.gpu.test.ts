import { describe, expect, it } from 'vitest';
import { createStorage, readF32, writeBuffer } from '../../gpu/buffers';
import { submitDispatches } from '../../gpu/pipelines';
import { Rng } from '../../util/rng';
import { gpuFor } from '../../../tests/support/gpu';
import { f32Buffer, relMaxErr } from '../common/testing';
import { CLIP_SCALE_INDEX, sumOfSquares } from '../reduce/reduce';
import { ADAMW_HYPER_BYTES, adamw, writeAdamwHyper } from './adamw';
import { adamwStepRef, clipScaleRef, type AdamwHyper } from './adamw.ref';

const H: AdamwHyper = { lr: 1e-2, beta1: 0.9, beta2: 0.999, eps: 1e-8, weightDecay: 0.1 };

describe('AdamW with global-norm clipping on the GPU', () => {
  for (const maxNorm of [0, 0.5]) {
    it(`5 steps over two tensors, maxNorm=${maxNorm}`, async () => {
      const ctx = await gpuFor('packed');
      const rng = new Rng(11);
      const sizes = [3, 1000];
      const p64 = sizes.map((n) => Float64Array.from(rng.fill(n)));
      const m64 = sizes.map((n) => new Float64Array(n));
      const v64 = sizes.map((n) => new Float64Array(n));
      const pb = p64.map((p, i) => f32Buffer(ctx, `p${i}`, p));
      const gb = sizes.map((n, i) => createStorage(ctx, `g${i}`, n * 4));
      const mb = sizes.map((n, i) => createStorage(ctx, `m${i}`, n * 4));
      const vb = sizes.map((n, i) => createStorage(ctx, `v${i}`, n * 4));
      const partials = createStorage(ctx, 'partials', sizes.length * 4);
      const out = createStorage(ctx, 'norm', 12);
      const hyper = createStorage(ctx, 'hyper', ADAMW_HYPER_BYTES);
      const steps = [
        ...(await sumOfSquares(ctx, { inputs: gb.map((buffer, i) => ({ buffer, count: sizes[i] })), partials, out, maxNorm })),
        ...(await Promise.all(sizes.map((count, i) => adamw(ctx, { p: pb[i], g: gb[i], m: mb[i], v: vb[i], clip: out, scaleIndex: CLIP_SCALE_INDEX, hyper, count })))),
      ];
      let clipped = false;
      for (let t = 1; t <= 5; t++) {
        const grads = sizes.map((n) => rng.fill(n, 0.1 * t));
        grads.forEach((g, i) => writeBuffer(ctx, gb[i], g));
        writeAdamwHyper(ctx, hyper, H, t);
        submitDispatches(ctx, steps);
        const scale = clipScaleRef(grads, maxNorm);
        clipped ||= scale < 1;
        sizes.forEach((_, i) => adamwStepRef(p64[i], grads[i], m64[i], v64[i], H, t, scale));
      }
      expect(clipped).toBe(maxNorm > 0);
      for (let i = 0; i < sizes.length; i++) {
        expect(relMaxErr(await readF32(ctx, pb[i], sizes[i]), p64[i])).toBeLessThan(2e-5);
        expect(relMaxErr(await readF32(ctx, mb[i], sizes[i]), m64[i])).toBeLessThan(2e-5);
        expect(relMaxErr(await readF32(ctx, vb[i], sizes[i]), v64[i])).toBeLessThan(2e-5);
      }
      for (const b of [...pb, ...gb, ...mb, ...vb, partials, out, hyper]) b.destroy();
    });
  }

  it('rejects a step below 1', async () => {
    const ctx = await gpuFor('packed');
    const hyper = createStorage(ctx, 'hyper', ADAMW_HYPER_BYTES);
    expect(() => writeAdamwHyper(ctx, hyper, H, 0)).toThrow(/'step'/);
  });
});

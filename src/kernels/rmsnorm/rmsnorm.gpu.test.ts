import { describe, expect, it } from 'vitest';
import { readF32 } from '../../gpu/buffers';
import { submitDispatches } from '../../gpu/pipelines';
import { Rng } from '../../util/rng';
import { gpuFor, weightPaths } from '../../../tests/support/gpu';
import { emptyF32, f32Buffer, relMaxErr } from '../common/testing';
import { rmsnorm } from './rmsnorm';
import { rmsnormRef } from './rmsnorm.ref';

describe('rmsnorm kernel', async () => {
  // No f16 weights, but run on both device configurations so the kernel is checked on each device.
  const paths = await weightPaths();
  for (const path of paths) {
    for (const [N, H] of [[1, 1], [3, 17], [5, 130], [2, 896]] as const) {
      it(`${path}: N=${N} H=${H} matches float64 (y and rstd)`, async () => {
        const ctx = await gpuFor(path);
        const rng = new Rng(N * 31 + H);
        const x = rng.fill(N * H, 3);
        const w = rng.fill(H);
        const eps = 1e-6;
        const xb = f32Buffer(ctx, 'x', x);
        const wb = f32Buffer(ctx, 'w', w);
        const y = emptyF32(ctx, 'y', N * H);
        const rstd = emptyF32(ctx, 'rstd', N);
        submitDispatches(ctx, [await rmsnorm(ctx, { x: xb, w: wb, y, rstd, n: N, hidden: H, eps })]);
        const want = rmsnormRef(x, w, N, H, eps);
        // f32 sum of H squares: relative error ~ H * 2^-24 in the worst case; 1e-5 covers H <= 896 easily.
        expect(relMaxErr(await readF32(ctx, y, N * H), want.y)).toBeLessThan(1e-5);
        expect(relMaxErr(await readF32(ctx, rstd, N), want.rstd)).toBeLessThan(1e-5);
        for (const b of [xb, wb, y, rstd]) b.destroy();
      });
    }
  }
});

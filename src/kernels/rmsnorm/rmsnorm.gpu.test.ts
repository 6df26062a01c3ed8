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

    // Finite rows whose sum of squares overflows f32: the unscaled kernel gave 1/sqrt(inf) = 0, zeroing them.
    it(`${path}: rows up to f32's limit match float64 (pre-scaled, not zeroed)`, async () => {
      const ctx = await gpuFor(path);
      const H = 896;
      const scales = [1e20, 3e37, 1, 9e9, 1e-30];
      const N = scales.length + 1;
      const rng = new Rng(77);
      const x = rng.fill(N * H, 1);
      scales.forEach((s, r) => { for (let i = 0; i < H; i++) x[r * H + i] *= s; });
      // Last row: one element near f32's maximum among ordinary ones (the others then normalise to ~1e-38).
      x[(N - 1) * H + 5] = 3.3e38;
      const w = rng.fill(H);
      const eps = 1e-6;
      const bufs = [f32Buffer(ctx, 'x', x), f32Buffer(ctx, 'w', w), emptyF32(ctx, 'y', N * H), emptyF32(ctx, 'rstd', N)];
      submitDispatches(ctx, [await rmsnorm(ctx, { x: bufs[0], w: bufs[1], y: bufs[2], rstd: bufs[3], n: N, hidden: H, eps })]);
      const want = rmsnormRef(x, w, N, H, eps);
      const y = await readF32(ctx, bufs[2], N * H);
      const rstd = await readF32(ctx, bufs[3], N);
      for (let r = 0; r < N; r++) {
        // Relative to the row's own largest output: the rows differ by up to 68 orders of magnitude.
        const row = (a: ArrayLike<number>) => Array.from({ length: H }, (_, i) => a[r * H + i]);
        const scale = Math.max(...row(want.y).map(Math.abs));
        const err = Math.max(...row(y).map((v, i) => Math.abs(v - want.y[r * H + i])));
        expect(err / scale, `row ${r}`).toBeLessThan(1e-5);
        // rstd below f32's normal range (rms ~ 1e38) may be flushed; the others must match relative to themselves.
        if (want.rstd[r] > 1e-37) expect(Math.abs(rstd[r] - want.rstd[r]) / want.rstd[r], `rstd of row ${r}`).toBeLessThan(1e-5);
      }
      for (const b of bufs) b.destroy();
    });
  }
});

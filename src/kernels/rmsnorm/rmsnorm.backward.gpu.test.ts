import { describe, expect, it } from 'vitest';
import { readF32 } from '../../gpu/buffers';
import { submitDispatches } from '../../gpu/pipelines';
import { Rng } from '../../util/rng';
import { gpuFor } from '../../../tests/support/gpu';
import { f32Buffer, relMaxErr } from '../common/testing';
import { centralDiff, dot } from '../finite-diff.ref';
import { rmsnormBackward } from './rmsnorm.backward';
import { rmsnormBackwardRef, rmsnormForwardRef, rmsnormRstdRef } from './rmsnorm.backward.ref';

describe('RMSNorm backward', () => {
  for (const [n, h, accumulate] of [[1, 1, false], [3, 17, true], [9, 200, false]] as const) {
    it(`n=${n} h=${h} accumulate=${accumulate}`, async () => {
      const ctx = await gpuFor('packed');
      const rng = new Rng(n * 31 + h);
      const eps = 1e-6;
      const x = rng.fill(n * h), w = rng.fill(h), dy = rng.fill(n * h), dx0 = rng.fill(n * h);
      const want = rmsnormBackwardRef(dy, x, w, n, h, eps);
      const fd = centralDiff((xx) => dot(rmsnormForwardRef(xx, w, n, h, eps), dy), x, 1e-6);
      expect(relMaxErr(want, fd)).toBeLessThan(1e-7);
      const bufs = [f32Buffer(ctx, 'dy', dy), f32Buffer(ctx, 'x', x), f32Buffer(ctx, 'w', w), f32Buffer(ctx, 'rstd', rmsnormRstdRef(x, n, h, eps)), f32Buffer(ctx, 'dx', dx0)];
      submitDispatches(ctx, [await rmsnormBackward(ctx, { dy: bufs[0], x: bufs[1], w: bufs[2], rstd: bufs[3], dx: bufs[4], n, hidden: h, accumulate })]);
      const got = await readF32(ctx, bufs[4], n * h);
      expect(relMaxErr(got, accumulate ? Array.from(want, (v, i) => v + dx0[i]) : want)).toBeLessThan(1e-5);
      for (const b of bufs) b.destroy();
    });
  }
});

const F32_MIN_NORMAL = 2 ** -126;

describe('RMSNorm backward on rows far from 1 (huge activations)', () => {
  // rstd^3 underflows f32 once rms passes ~1e13 and the sum of w dy x overflows near f32's limit: the
  // kernel works on the normalised row x * rstd instead. Errors relative to each row's largest gradient.
  it('rows of rms 1e-3 .. 1e37 match float64', async () => {
    const ctx = await gpuFor('packed');
    const [h, eps] = [200, 1e-6];
    const scales = [1e20, 1e37, 1e15, 1, 1e-3];
    const n = scales.length;
    const rng = new Rng(12);
    const x = rng.fill(n * h), w = rng.fill(h), dy = rng.fill(n * h);
    scales.forEach((s, r) => { for (let i = 0; i < h; i++) x[r * h + i] *= s; });
    const want = rmsnormBackwardRef(dy, x, w, n, h, eps);
    const bufs = [f32Buffer(ctx, 'dy', dy), f32Buffer(ctx, 'x', x), f32Buffer(ctx, 'w', w), f32Buffer(ctx, 'rstd', rmsnormRstdRef(x, n, h, eps)), f32Buffer(ctx, 'dx', new Float32Array(n * h))];
    submitDispatches(ctx, [await rmsnormBackward(ctx, { dy: bufs[0], x: bufs[1], w: bufs[2], rstd: bufs[3], dx: bufs[4], n, hidden: h })]);
    const got = await readF32(ctx, bufs[4], n * h);
    for (let r = 0; r < n; r++) {
      const idx = Array.from({ length: h }, (_, i) => r * h + i);
      const scale = Math.max(...idx.map((i) => Math.abs(want[i])));
      // WGSL lets an implementation flush subnormal results to zero (SwiftShader does): a gradient below f32's
      // smallest normal (2^-126; the 1e37 row's are ~1e-37, some entries far smaller) may come out 0.
      const flushable = (i: number) => (Math.abs(want[i]) < F32_MIN_NORMAL ? F32_MIN_NORMAL : 0);
      expect(Math.max(...idx.map((i) => Math.max(0, Math.abs(got[i] - want[i]) - flushable(i)))) / scale, `row ${r} (x ~ ${scales[r]})`).toBeLessThan(1e-5);
    }
    for (const b of bufs) b.destroy();
  });
});

describe('RMSNorm backward chained after the forward kernel (its rstd)', () => {
  it('n=4 hidden=64: backward from the forward rstd matches float64', async () => {
    const { rmsnorm } = await import('./rmsnorm');
    const ctx = await gpuFor('packed');
    const [n, h, eps] = [4, 64, 1e-6];
    const rng = new Rng(4);
    const x = rng.fill(n * h), w = rng.fill(h), dy = rng.fill(n * h);
    const bufs = { x: f32Buffer(ctx, 'x', x), w: f32Buffer(ctx, 'w', w), dy: f32Buffer(ctx, 'dy', dy), y: f32Buffer(ctx, 'y', new Float32Array(n * h)), rstd: f32Buffer(ctx, 'rstd', new Float32Array(n)), dx: f32Buffer(ctx, 'dx', new Float32Array(n * h)) };
    submitDispatches(ctx, [
      await rmsnorm(ctx, { x: bufs.x, w: bufs.w, y: bufs.y, rstd: bufs.rstd, n, hidden: h, eps }),
      await rmsnormBackward(ctx, { dy: bufs.dy, x: bufs.x, w: bufs.w, rstd: bufs.rstd, dx: bufs.dx, n, hidden: h }),
    ]);
    expect(relMaxErr(await readF32(ctx, bufs.dx, n * h), rmsnormBackwardRef(dy, x, w, n, h, eps))).toBeLessThan(1e-5);
    for (const b of Object.values(bufs)) b.destroy();
  });
});

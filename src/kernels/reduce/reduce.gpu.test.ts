import { describe, expect, it } from 'vitest';
import { createStorage, readF32 } from '../../gpu/buffers';
import { submitDispatches } from '../../gpu/pipelines';
import { Rng } from '../../util/rng';
import { gpuFor } from '../../../tests/support/gpu';
import { f32Buffer } from '../common/testing';
import { sumOf, sumOfSquares } from './reduce';
import { reduceRef } from './reduce.ref';

describe('reduce kernels', () => {
  it('sum of squares over several buffers (one sub-range) gives norm^2, norm and the clip scale', async () => {
    const ctx = await gpuFor('packed');
    const rng = new Rng(3);
    const arrays = [rng.fill(1), rng.fill(300), rng.fill(5000, 0.1), rng.fill(77, 3)];
    const bufs = arrays.map((a, i) => f32Buffer(ctx, `g${i}`, a));
    const partials = createStorage(ctx, 'partials', 16);
    const out = createStorage(ctx, 'out', 12);
    for (const maxNorm of [0, 1, 1e6]) {
      submitDispatches(ctx, await sumOfSquares(ctx, {
        inputs: bufs.map((buffer, i) => (i === 1 ? { buffer, count: 100, offset: 50 } : { buffer, count: arrays[i].length })),
        partials, out, maxNorm,
      }));
      const got = await readF32(ctx, out, 3);
      const want = reduceRef([arrays[0], arrays[1].subarray(50, 150), arrays[2], arrays[3]], true, maxNorm);
      for (let k = 0; k < 3; k++) expect(Math.abs(got[k] - want[k])).toBeLessThan(1e-5 * Math.max(1, Math.abs(want[k])));
    }
    expect((await readF32(ctx, out, 3))[2]).toBe(1);
    for (const b of [...bufs, partials, out]) b.destroy();
  });

  it('plain sum', async () => {
    const ctx = await gpuFor('packed');
    const a = new Rng(9).fill(1234);
    const buf = f32Buffer(ctx, 'a', a);
    const partials = createStorage(ctx, 'partials', 4);
    const out = createStorage(ctx, 'out', 12);
    submitDispatches(ctx, await sumOf(ctx, { inputs: [{ buffer: buf, count: a.length }], partials, out }));
    const [got] = await readF32(ctx, out, 1);
    expect(Math.abs(got - reduceRef([a], false)[0])).toBeLessThan(1e-4);
    await expect(sumOf(ctx, { inputs: [{ buffer: buf, count: 2000 }], partials, out })).rejects.toThrow(/outside/);
  });
});

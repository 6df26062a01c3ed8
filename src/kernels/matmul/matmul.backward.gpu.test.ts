import { describe, expect, it } from 'vitest';
import { readF32, createStorage, uploadStorage } from '../../gpu/buffers';
import { submitDispatches } from '../../gpu/pipelines';
import { Rng } from '../../util/rng';
import { gpuFor, weightPaths } from '../../../tests/support/gpu';
import { f32Buffer, randomHalf, relMaxErr } from '../common/testing';
import { centralDiff, dot } from '../finite-diff.ref';
import { matmulBackward } from './matmul.backward';
import { linearForwardRef, matmulBackwardRef } from './matmul.backward.ref';

describe('matmul backward (dx = dy W, frozen f16 W)', async () => {
  for (const path of await weightPaths()) {
    for (const [n, inDim, outDim, rowOffset, accumulate] of [[1, 1, 1, 0, false], [5, 17, 33, 0, true], [37, 40, 19, 3, false]] as const) {
      it(`${path}: n=${n} in=${inDim} out=${outDim} rowOffset=${rowOffset} accumulate=${accumulate}`, async () => {
        const ctx = await gpuFor(path);
        const rng = new Rng(n * 7 + inDim);
        const W = randomHalf(rng, (rowOffset + outDim) * inDim);
        const x = rng.fill(n * inDim);
        const dy = rng.fill(n * outDim);
        const dx0 = rng.fill(n * inDim);
        const want = matmulBackwardRef(dy, W.values, n, inDim, outDim, rowOffset, accumulate ? dx0 : undefined);
        // The analytic backward is the gradient of <forward(x), dy> (finite differences, float64).
        const fd = centralDiff((xx) => dot(linearForwardRef(xx, W.values, n, inDim, outDim, rowOffset), dy), x);
        const analytic = matmulBackwardRef(dy, W.values, n, inDim, outDim, rowOffset);
        expect(relMaxErr(analytic, fd)).toBeLessThan(1e-8);
        const Wb = uploadStorage(ctx, 'W', W.bits);
        const dyb = f32Buffer(ctx, 'dy', dy);
        const dxb = f32Buffer(ctx, 'dx', dx0);
        submitDispatches(ctx, [await matmulBackward(ctx, { W: Wb, dy: dyb, dx: dxb, n, inDim, outDim, rowOffset, accumulate })]);
        const got = await readF32(ctx, dxb, n * inDim);
        expect(relMaxErr(got, want)).toBeLessThan(1e-5);
        for (const b of [Wb, dyb, dxb]) b.destroy();
      });
    }
  }
  it('rejects a W too small for the requested rows', async () => {
    const ctx = await gpuFor('packed');
    const W = createStorage(ctx, 'Wsmall', 8);
    const d = createStorage(ctx, 'd', 64);
    await expect(matmulBackward(ctx, { W, dy: d, dx: d, n: 1, inDim: 4, outDim: 4 })).rejects.toThrow(/Wsmall/);
  });
});

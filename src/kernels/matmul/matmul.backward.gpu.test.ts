import { describe, expect, it } from 'vitest';
import { readF32, createStorage, uploadStorage } from '../../gpu/buffers';
import { submitDispatches } from '../../gpu/pipelines';
import { Rng } from '../../util/rng';
import { gpuFor, weightPaths } from '../../../tests/support/gpu';
import { bitDiffCount, f32Buffer, randomHalf, relMaxErr } from '../common/testing';
import { centralDiff, dot } from '../finite-diff.ref';
import { matmulBackward, matmulBackwardSplitK } from './matmul.backward';
import { splitKPartialsBytes } from './matmul.splitk';
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
    // Split-K (the LM head's path): slices of whole 16-output steps (70 = 32 + 32 + 6, 83 = 48 + 35) into
    // partials, then a fixed-order sum into dx; the second case is a vocab chunk of a wider dlogits.
    const splitCases = [
      { n: 5, inDim: 17, outDim: 70, splits: 3, accumulate: false, window: false },
      { n: 20, inDim: 40, outDim: 83, splits: 2, accumulate: true, window: true },
    ];
    for (const { n, inDim, outDim, splits, accumulate, window } of splitCases) {
      it(`${path}: split-K in ${splits}: n=${n} in=${inDim} out=${outDim} accumulate=${accumulate}${window ? ' (dyOffset/dyStride, rowOffset)' : ''} matches float64`, async () => {
        const ctx = await gpuFor(path);
        const rng = new Rng(n * 13 + outDim);
        const off = window ? 9 : 0;
        const ld = window ? off + outDim + 5 : outDim;
        const W = randomHalf(rng, (off + outDim) * inDim);
        const dl = rng.fill(n * ld);
        const dyChunk = new Float32Array(n * outDim);
        for (let r = 0; r < n; r++) dyChunk.set(dl.subarray(r * ld + off, r * ld + off + outDim), r * outDim);
        const dx0 = rng.fill(n * inDim);
        const want = matmulBackwardRef(dyChunk, W.values, n, inDim, outDim, off, accumulate ? dx0 : undefined);
        const Wb = uploadStorage(ctx, 'W', W.bits);
        const dyb = f32Buffer(ctx, 'dy', dl);
        const partials = createStorage(ctx, 'partials', splitKPartialsBytes(n, inDim));
        const got: Float32Array[] = [];
        for (let rep = 0; rep < 2; rep++) {
          const dxb = f32Buffer(ctx, 'dx', dx0);
          const ds = await matmulBackwardSplitK(ctx, { W: Wb, dy: dyb, dx: dxb, n, inDim, outDim, rowOffset: off, dyStride: ld, dyOffset: off, accumulate, partials, splits });
          expect(ds.map((d) => d.label)).toEqual(['matmul_backward_splitk', 'matmul_splitk_reduce']);
          expect(ds[0].workgroups).toEqual([Math.ceil(inDim / 16), Math.ceil(n / 16), splits]);
          submitDispatches(ctx, ds);
          got.push(await readF32(ctx, dxb, n * inDim));
          dxb.destroy();
        }
        expect(relMaxErr(got[0], want)).toBeLessThan(1e-5);
        expect(bitDiffCount(got[0], got[1])).toBe(0);
        for (const b of [Wb, dyb, partials]) b.destroy();
      });
    }
    it(`${path}: split-K stays one plain dispatch where outDim is short`, async () => {
      const ctx = await gpuFor(path);
      const rng = new Rng(4);
      const [n, inDim, outDim] = [3, 20, 40];
      const W = uploadStorage(ctx, 'W', randomHalf(rng, outDim * inDim).bits);
      const dyb = f32Buffer(ctx, 'dy', rng.fill(n * outDim));
      const dxb = createStorage(ctx, 'dx', n * inDim * 4);
      const partials = createStorage(ctx, 'partials', splitKPartialsBytes(n, inDim));
      const ds = await matmulBackwardSplitK(ctx, { W, dy: dyb, dx: dxb, n, inDim, outDim, partials });
      expect(ds.map((d) => d.label)).toEqual(['matmul_backward']);
      for (const b of [W, dyb, dxb, partials]) b.destroy();
    });
  }
  it('rejects a W too small for the requested rows', async () => {
    const ctx = await gpuFor('packed');
    const W = createStorage(ctx, 'Wsmall', 8);
    const d = createStorage(ctx, 'd', 64);
    await expect(matmulBackward(ctx, { W, dy: d, dx: d, n: 1, inDim: 4, outDim: 4 })).rejects.toThrow(/Wsmall/);
  });
});

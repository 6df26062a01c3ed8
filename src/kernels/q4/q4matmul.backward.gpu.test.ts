import { describe, expect, it } from 'vitest';
import { createStorage, readF32 } from '../../gpu/buffers';
import { submitDispatches } from '../../gpu/pipelines';
import { Rng } from '../../util/rng';
import { gpuFor, weightPaths } from '../../../tests/support/gpu';
import { bitDiffCount, f32Buffer, relMaxErr } from '../common/testing';
import { TILE_ROW_CHOICES } from '../common/tile.wgsl';
import { centralDiff, dot } from '../finite-diff.ref';
import { linearForwardRef, matmulBackwardRef } from '../matmul/matmul.backward.ref';
import { dequantizeQ4, quantizeQ4, type Q4ScaleDtype } from './q4.ref';
import { q4MatmulBackward } from './q4matmul.backward';
import { destroyQ4, uploadQ4 } from './q4weight';

describe('q4 matmul backward (dx = dy deq(W), frozen 4-bit W)', async () => {
  const cases: Array<[number, number, number, number, boolean, Q4ScaleDtype]> = [
    [1, 32, 1, 0, false, 'f16'],
    [5, 96, 33, 0, true, 'f32'],
    [70, 160, 19, 3, false, 'f16'],
  ];
  for (const path of await weightPaths()) {
    for (const [n, inDim, outDim, rowOffset, accumulate, scale] of cases) {
      it(`${path}: n=${n} in=${inDim} out=${outDim} rowOffset=${rowOffset} accumulate=${accumulate} scale=${scale}`, async () => {
        const ctx = await gpuFor(path);
        const rng = new Rng(n * 7 + inDim);
        const rows = rowOffset + outDim;
        const q = quantizeQ4(rng.fill(rows * inDim), rows, inDim, scale);
        const Wd = dequantizeQ4(q);
        const x = rng.fill(n * inDim);
        const dy = rng.fill(n * outDim);
        const dx0 = rng.fill(n * inDim);
        const want = matmulBackwardRef(dy, Wd, n, inDim, outDim, rowOffset, accumulate ? dx0 : undefined);
        // The reference is the gradient of <forward(x), dy> through the dequantized weights (finite differences).
        if (n * inDim <= 500) {
          const fd = centralDiff((xx) => dot(linearForwardRef(xx, Wd, n, inDim, outDim, rowOffset), dy), x);
          expect(relMaxErr(matmulBackwardRef(dy, Wd, n, inDim, outDim, rowOffset), fd)).toBeLessThan(1e-8);
        }
        const W = uploadQ4(ctx, 'W', q);
        const dyb = f32Buffer(ctx, 'dy', dy);
        const dxb = f32Buffer(ctx, 'dx', dx0);
        submitDispatches(ctx, [await q4MatmulBackward(ctx, { W, dy: dyb, dx: dxb, n, inDim, outDim, rowOffset, accumulate })]);
        const got = await readF32(ctx, dxb, n * inDim);
        expect(relMaxErr(got, want)).toBeLessThan(1e-5);
        destroyQ4(W);
        for (const b of [dyb, dxb]) b.destroy();
      });
    }
    it(`${path}: 16-, 32- and 64-row tiles give the same bits (medium row counts), and match float64`, async () => {
      const ctx = await gpuFor(path);
      const rng = new Rng(12);
      const [n, inDim, outDim, rowOffset] = [21, 96, 37, 2];
      const q = quantizeQ4(rng.fill((rowOffset + outDim) * inDim), rowOffset + outDim, inDim);
      const dy = rng.fill(n * outDim);
      const dx0 = rng.fill(n * inDim);
      const W = uploadQ4(ctx, 'W', q);
      const dyb = f32Buffer(ctx, 'dy', dy);
      const outs = new Map<number, Float32Array>();
      for (const tileRows of TILE_ROW_CHOICES) {
        const dxb = f32Buffer(ctx, 'dx', dx0);
        const d = await q4MatmulBackward(ctx, { W, dy: dyb, dx: dxb, n, inDim, outDim, rowOffset, accumulate: true, tileRows });
        expect(d.workgroups).toEqual([Math.ceil(inDim / 64), Math.ceil(n / tileRows)]);
        submitDispatches(ctx, [d]);
        outs.set(tileRows, await readF32(ctx, dxb, n * inDim));
        dxb.destroy();
      }
      const full = outs.get(64)!;
      expect(relMaxErr(full, matmulBackwardRef(dy, dequantizeQ4(q), n, inDim, outDim, rowOffset, dx0))).toBeLessThan(1e-5);
      for (const tileRows of [16, 32]) expect(bitDiffCount(outs.get(tileRows)!, full)).toBe(0);
      destroyQ4(W);
      dyb.destroy();
    });
    it(`${path}: LM-head chunk: dy columns at an offset of a wider dlogits, W window via rowBase`, async () => {
      const ctx = await gpuFor(path);
      const rng = new Rng(3);
      const [n, H, V, off, cnt] = [6, 64, 50, 20, 17];
      const q = quantizeQ4(rng.fill(V * H), V, H);
      const dl = rng.fill(n * V);
      const dyChunk = new Float32Array(n * cnt);
      for (let r = 0; r < n; r++) dyChunk.set(dl.subarray(r * V + off, r * V + off + cnt), r * cnt);
      const want = matmulBackwardRef(dyChunk, dequantizeQ4(q), n, H, cnt, off);
      const W = uploadQ4(ctx, 'E', q);
      const dyb = f32Buffer(ctx, 'dlogits', dl);
      const dxb = createStorage(ctx, 'dx', n * H * 4);
      submitDispatches(ctx, [await q4MatmulBackward(ctx, { W: { ...W, rowBase: off }, dy: dyb, dx: dxb, n, inDim: H, outDim: cnt, dyStride: V, dyOffset: off })]);
      expect(relMaxErr(await readF32(ctx, dxb, n * H), want)).toBeLessThan(1e-5);
      destroyQ4(W);
      dyb.destroy();
      dxb.destroy();
    });
  }
  it('rejects a q_scale too small for the requested rows, naming it', async () => {
    const ctx = await gpuFor('packed');
    const d = createStorage(ctx, 'd', 1024);
    const W = { qWeight: createStorage(ctx, 'w.q_weight', 1024), qScale: createStorage(ctx, 'w.q_scale', 2) };
    await expect(q4MatmulBackward(ctx, { W, dy: d, dx: createStorage(ctx, 'dx', 1024), n: 1, inDim: 32, outDim: 4 })).rejects.toThrow(/w\.q_scale/);
  });
});

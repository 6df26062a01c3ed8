import { describe, expect, it } from 'vitest';
import { createStorage, readF32 } from '../../gpu/buffers';
import { submitDispatches } from '../../gpu/pipelines';
import { Rng } from '../../util/rng';
import { gpuFor, weightPaths } from '../../../tests/support/gpu';
import { bitDiffCount, f32Buffer, relMaxErr } from '../common/testing';
import { TILE_ROW_CHOICES, tileRowsMax, tileStorageBytes } from '../common/tile.wgsl';
import { centralDiff, dot } from '../finite-diff.ref';
import { linearForwardRef, matmulBackwardRef } from '../matmul/matmul.backward.ref';
import { dequantizeQ4, quantizeQ4, type Q4ScaleDtype } from './q4.ref';
import { q4MatmulBackward, q4MatmulBackwardSplitK } from './q4matmul.backward';
import { Q4_BWD_TILE_K } from './q4matmul.backward.wgsl';
import { splitKPartialsBytes } from '../matmul/matmul.splitk';
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
    // Medium row counts, and a large one (two 128-row tiles, the second partly padding).
    for (const [n, inDim, outDim, rowOffset] of [[21, 96, 37, 2], [140, 96, 37, 2]]) {
    it(`${path}: n=${n}: 16-, 32-, 64- and 128-row tiles give the same bits, and match float64`, async () => {
      const ctx = await gpuFor(path);
      const rng = new Rng(12);
      const q = quantizeQ4(rng.fill((rowOffset + outDim) * inDim), rowOffset + outDim, inDim);
      const dy = rng.fill(n * outDim);
      const dx0 = rng.fill(n * inDim);
      const W = uploadQ4(ctx, 'W', q);
      const dyb = f32Buffer(ctx, 'dy', dy);
      const outs = new Map<number, Float32Array>();
      const choices = TILE_ROW_CHOICES.filter((r) => tileStorageBytes(r, Q4_BWD_TILE_K) <= ctx.caps.limits.maxComputeWorkgroupStorageSize);
      expect(choices).toContain(128);
      for (const tileRows of choices) {
        const dxb = f32Buffer(ctx, 'dx', dx0);
        const d = await q4MatmulBackward(ctx, { W, dy: dyb, dx: dxb, n, inDim, outDim, rowOffset, accumulate: true, tileRows });
        expect(d.workgroups).toEqual([Math.ceil(inDim / 64), Math.ceil(n / tileRows)]);
        submitDispatches(ctx, [d]);
        outs.set(tileRows, await readF32(ctx, dxb, n * inDim));
        dxb.destroy();
      }
      const full = outs.get(64)!;
      expect(relMaxErr(full, matmulBackwardRef(dy, dequantizeQ4(q), n, inDim, outDim, rowOffset, dx0))).toBeLessThan(1e-5);
      for (const tileRows of choices) expect(bitDiffCount(outs.get(tileRows)!, full)).toBe(0);
      destroyQ4(W);
      dyb.destroy();
    });
    }
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
    // Split-K (the LM head's path): slices of outDim into partials, then a fixed-order sum into dx. Slices
    // are whole 16-output steps: 70 = 32 + 32 + 6, 83 = 48 + 35 (last slices partial).
    const splitCases: Array<{ n: number; inDim: number; outDim: number; splits: number; accumulate: boolean; window: boolean }> = [
      { n: 5, inDim: 96, outDim: 70, splits: 3, accumulate: false, window: false },
      // A vocab chunk: dy columns at an offset of a wider dlogits, W rows from rowBase, accumulated onto dx.
      { n: 6, inDim: 64, outDim: 83, splits: 2, accumulate: true, window: true },
    ];
    for (const { n, inDim, outDim, splits, accumulate, window } of splitCases) {
      it(`${path}: split-K in ${splits}: n=${n} in=${inDim} out=${outDim} accumulate=${accumulate}${window ? ' (dyOffset/dyStride, rowBase)' : ''} matches float64`, async () => {
        const ctx = await gpuFor(path);
        const rng = new Rng(n * 13 + outDim);
        const off = window ? 9 : 0;
        const ld = window ? off + outDim + 5 : outDim;
        const rows = off + outDim;
        const q = quantizeQ4(rng.fill(rows * inDim), rows, inDim);
        const dl = rng.fill(n * ld);
        const dyChunk = new Float32Array(n * outDim);
        for (let r = 0; r < n; r++) dyChunk.set(dl.subarray(r * ld + off, r * ld + off + outDim), r * outDim);
        const dx0 = rng.fill(n * inDim);
        const want = matmulBackwardRef(dyChunk, dequantizeQ4(q), n, inDim, outDim, off, accumulate ? dx0 : undefined);
        const W = uploadQ4(ctx, 'W', q);
        const dyb = f32Buffer(ctx, 'dy', dl);
        const partials = createStorage(ctx, 'partials', splitKPartialsBytes(n, inDim));
        const got: Float32Array[] = [];
        for (let rep = 0; rep < 2; rep++) {
          const dxb = f32Buffer(ctx, 'dx', dx0);
          const ds = await q4MatmulBackwardSplitK(ctx, {
            W: { ...W, rowBase: off }, dy: dyb, dx: dxb, n, inDim, outDim, dyStride: ld, dyOffset: off, accumulate, partials, splits,
          });
          expect(ds.map((d) => d.label)).toEqual([expect.stringMatching(/^q4_matmul_backward_splitk16_/), 'matmul_splitk_reduce']);
          expect(ds[0].workgroups).toEqual([Math.ceil(inDim / 64), 1, splits]);
          submitDispatches(ctx, ds);
          got.push(await readF32(ctx, dxb, n * inDim));
          dxb.destroy();
        }
        expect(relMaxErr(got[0], want)).toBeLessThan(1e-5);
        // Deterministic: the slices are summed in a fixed order.
        expect(bitDiffCount(got[0], got[1])).toBe(0);
        destroyQ4(W);
        for (const b of [dyb, partials]) b.destroy();
      });
    }
    it(`${path}: split-K over 130 rows: the 128-row tile (asked for) gives the 64-row tile's slices and bits; by default split-K keeps 64 rows`, async () => {
      const ctx = await gpuFor(path);
      const rng = new Rng(130);
      // 64 slices of 16 outputs x 2 x 2 tiles of 128 rows: 256 workgroups.
      const [n, inDim, outDim, splits] = [130, 128, 1024, 64];
      const q = quantizeQ4(rng.fill(outDim * inDim), outDim, inDim);
      const dy = rng.fill(n * outDim);
      const W = uploadQ4(ctx, 'W', q);
      const dyb = f32Buffer(ctx, 'dy', dy);
      const partials = createStorage(ctx, 'partials', splitKPartialsBytes(n, inDim));
      const outs: Float32Array[] = [];
      // The default is 64 rows: the 128-row tile was slower for split-K on the H200 (q4matmul.backward.ts).
      const byDefault = await q4MatmulBackwardSplitK(ctx, { W, dy: dyb, dx: createStorage(ctx, 'dx0', n * inDim * 4), n, inDim, outDim, partials, splits });
      expect(byDefault[0].label).toMatch(/^q4_matmul_backward_splitk_/);
      for (const tileRows of [128, 64] as const) {
        const dxb = createStorage(ctx, 'dx', n * inDim * 4);
        const ds = await q4MatmulBackwardSplitK(ctx, { W, dy: dyb, dx: dxb, n, inDim, outDim, partials, splits, tileRows });
        const rows = tileRows; // 12 KiB at 128 rows: fits every device
        expect(ds[0].label).toMatch(new RegExp(`^q4_matmul_backward_splitk${rows === 64 ? '' : rows}_`));
        expect(ds[0].workgroups).toEqual([2, Math.ceil(n / rows), splits]);
        submitDispatches(ctx, ds);
        outs.push(await readF32(ctx, dxb, n * inDim));
        dxb.destroy();
      }
      expect(relMaxErr(outs[0], matmulBackwardRef(dy, dequantizeQ4(q), n, inDim, outDim, 0))).toBeLessThan(1e-5);
      expect(bitDiffCount(outs[0], outs[1])).toBe(0);
      destroyQ4(W);
      for (const b of [dyb, partials]) b.destroy();
    });
    it(`${path}: split-K stays one plain dispatch (same bits) where the grid is large enough or outDim short`, async () => {
      const ctx = await gpuFor(path);
      const rng = new Rng(5);
      const [n, inDim, outDim] = [40, 64, 48];
      const q = quantizeQ4(rng.fill(outDim * inDim), outDim, inDim);
      const W = uploadQ4(ctx, 'W', q);
      const dyb = f32Buffer(ctx, 'dy', rng.fill(n * outDim));
      const partials = createStorage(ctx, 'partials', splitKPartialsBytes(n, inDim));
      const a = f32Buffer(ctx, 'dxA', new Float32Array(n * inDim));
      const b = f32Buffer(ctx, 'dxB', new Float32Array(n * inDim));
      const ds = await q4MatmulBackwardSplitK(ctx, { W, dy: dyb, dx: a, n, inDim, outDim, partials });
      expect(ds.map((d) => d.label)).toEqual([expect.stringMatching(/^q4_matmul_backward_(f16|packed)/)]);
      submitDispatches(ctx, [...ds, await q4MatmulBackward(ctx, { W, dy: dyb, dx: b, n, inDim, outDim })]);
      expect(bitDiffCount(await readF32(ctx, a, n * inDim), await readF32(ctx, b, n * inDim))).toBe(0);
      destroyQ4(W);
      for (const x of [dyb, partials, a, b]) x.destroy();
    });
    it(`${path}: split-K planned by itself takes as many slices as the partials buffer holds`, async () => {
      const ctx = await gpuFor(path);
      const rng = new Rng(8);
      // 4 x 512 outputs on a single tile: the plan wants 4 slices; a buffer of 2 [n, inDim] blocks allows 2.
      const [n, inDim, outDim] = [4, 32, 2048];
      const q = quantizeQ4(rng.fill(outDim * inDim), outDim, inDim);
      const dy = rng.fill(n * outDim);
      const W = uploadQ4(ctx, 'W', q);
      const dyb = f32Buffer(ctx, 'dy', dy);
      const dxb = createStorage(ctx, 'dx', n * inDim * 4);
      const partials = createStorage(ctx, 'partials', 2 * n * inDim * 4 + 12);
      const ds = await q4MatmulBackwardSplitK(ctx, { W, dy: dyb, dx: dxb, n, inDim, outDim, partials });
      expect(ds.map((d) => d.workgroups)).toEqual([[1, 1, 2], [1, 1]]);
      submitDispatches(ctx, ds);
      expect(relMaxErr(await readF32(ctx, dxb, n * inDim), matmulBackwardRef(dy, dequantizeQ4(q), n, inDim, outDim, 0))).toBeLessThan(1e-5);
      destroyQ4(W);
      for (const x of [dyb, dxb, partials]) x.destroy();
    });
  }
  it('split-K: a missing or too small partials buffer is named', async () => {
    const ctx = await gpuFor('packed');
    const q = quantizeQ4(new Rng(1).fill(64 * 32), 64, 32);
    const W = uploadQ4(ctx, 'W', q);
    const d = createStorage(ctx, 'dy', 4 * 64 * 2);
    const dx = createStorage(ctx, 'dx', 4 * 32 * 2);
    const a = { W, dy: d, dx, n: 2, inDim: 32, outDim: 64, splits: 4 };
    await expect(q4MatmulBackwardSplitK(ctx, a)).rejects.toThrow(/partials/);
    await expect(q4MatmulBackwardSplitK(ctx, { ...a, partials: createStorage(ctx, 'tiny.partials', 16) })).rejects.toThrow(/tiny\.partials/);
    destroyQ4(W);
  });
  it('rejects a q_scale too small for the requested rows, naming it', async () => {
    const ctx = await gpuFor('packed');
    const d = createStorage(ctx, 'd', 1024);
    const W = { qWeight: createStorage(ctx, 'w.q_weight', 1024), qScale: createStorage(ctx, 'w.q_scale', 2) };
    await expect(q4MatmulBackward(ctx, { W, dy: d, dx: createStorage(ctx, 'dx', 1024), n: 1, inDim: 32, outDim: 4 })).rejects.toThrow(/w\.q_scale/);
  });
});

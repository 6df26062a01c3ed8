import { describe, expect, it } from 'vitest';
import { readF32 } from '../../gpu/buffers';
import { submitDispatches } from '../../gpu/pipelines';
import { Rng } from '../../util/rng';
import { gpuFor, weightPaths } from '../../../tests/support/gpu';
import { bitDiffCount, f32Buffer, matmulInputs, relMaxErr, randomHalf } from '../common/testing';
import { TILE_ROW_CHOICES, tileStorageBytes } from '../common/tile.wgsl';
import { uploadStorage } from '../../gpu/buffers';
import { matmul } from './matmul';
import { matmulRef } from './matmul.ref';
import { TILE_K } from './matmul.wgsl';

// f32 accumulation of `in` products of O(1) values: error ~ sqrt(in) * 2^-24 * |terms|, relative to a
// result of magnitude ~sqrt(in); 2e-5 relative leaves margin for in up to ~1000 and any summation order.
const TOL = 2e-5;

describe('matmul kernel (f16 W, f32 accumulate)', async () => {
  const paths = await weightPaths();
  const cases: Array<[number, number, number, 'tiled' | 'rows', boolean, boolean]> = [
    [1, 1, 1, 'rows', false, false],
    [1, 33, 7, 'rows', true, false],
    [3, 70, 65, 'rows', true, true],
    [1, 5, 3, 'tiled', false, false],
    [5, 17, 9, 'tiled', true, false],
    [67, 45, 130, 'tiled', false, true],
    [70, 129, 66, 'tiled', true, true],
  ];
  for (const path of paths) {
    for (const [N, IN, OUT, kernel, bias, acc] of cases) {
      it(`${path}: ${kernel} N=${N} in=${IN} out=${OUT} bias=${bias} accumulate=${acc}`, async () => {
        const ctx = await gpuFor(path);
        const rng = new Rng(N * 1000 + IN * 10 + OUT);
        const W = randomHalf(rng, OUT * IN);
        const { x, b, y0, xb, bb } = matmulInputs(ctx, rng, N, IN, OUT);
        const Wb = uploadStorage(ctx, 'W', W.bits);
        const y = f32Buffer(ctx, 'y', y0);
        submitDispatches(ctx, [
          await matmul(ctx, { x: xb, W: Wb, y, bias: bias ? bb : undefined, n: N, inDim: IN, outDim: OUT, accumulate: acc, kernel }),
        ]);
        const got = await readF32(ctx, y, N * OUT);
        const want = matmulRef(x, W.values, N, IN, OUT, bias ? b : undefined, acc ? y0 : undefined);
        expect(relMaxErr(got, want)).toBeLessThan(TOL);
        for (const buf of [Wb, xb, bb, y]) buf.destroy();
      });
    }
    it(`${path}: rows kernel, subgroup reduction and shared-memory fallback agree with float64`, async () => {
      const ctx = await gpuFor(path);
      const rng = new Rng(7);
      const [N, IN, OUT] = [3, 301, 37];
      const W = randomHalf(rng, OUT * IN);
      const x = rng.fill(N * IN);
      const b = rng.fill(OUT);
      const Wb = uploadStorage(ctx, 'W', W.bits);
      const xb = f32Buffer(ctx, 'x', x);
      const bb = f32Buffer(ctx, 'b', b);
      const want = matmulRef(x, W.values, N, IN, OUT, b);
      // Runs the subgroup path where the device has the feature, and the fallback everywhere.
      for (const subgroups of ctx.caps.subgroups ? [true, false] : [false]) {
        const y = f32Buffer(ctx, 'y', new Float32Array(N * OUT));
        submitDispatches(ctx, [await matmul(ctx, { x: xb, W: Wb, y, bias: bb, n: N, inDim: IN, outDim: OUT, kernel: 'rows', subgroups })]);
        expect(relMaxErr(await readF32(ctx, y, N * OUT), want)).toBeLessThan(TOL);
        y.destroy();
      }
      for (const buf of [Wb, xb, bb]) buf.destroy();
    });
    // Medium row counts (short prefills, a few packed sequences) get 16- or 32-row tiles; the sampling seeds
    // pinned by the e2e tests need them to add up each output exactly as the 64-row tile does.
    // Large ones (N=150: two 128-row tiles, the second partly padding) may get 128-row tiles.
    for (const [N, IN, OUT] of [[9, 75, 70], [27, 40, 130], [150, 40, 70]] as const) {
      it(`${path}: N=${N} in=${IN} out=${OUT}: 16-, 32-, 64- and 128-row tiles give the same bits, and match float64`, async () => {
        const ctx = await gpuFor(path);
        const rng = new Rng(N * 31 + OUT);
        const W = randomHalf(rng, OUT * IN);
        const { x, b, y0, xb, bb } = matmulInputs(ctx, rng, N, IN, OUT);
        const Wb = uploadStorage(ctx, 'W', W.bits);
        const outs = new Map<number, Float32Array>();
        const choices = TILE_ROW_CHOICES.filter((r) => tileStorageBytes(r, TILE_K) <= ctx.caps.limits.maxComputeWorkgroupStorageSize);
        expect(choices).toContain(128);
        for (const tileRows of choices) {
          const y = f32Buffer(ctx, 'y', y0);
          const d = await matmul(ctx, { x: xb, W: Wb, y, bias: bb, n: N, inDim: IN, outDim: OUT, accumulate: true, kernel: 'tiled', tileRows });
          expect(d.workgroups).toEqual([Math.ceil(OUT / 64), Math.ceil(N / tileRows)]);
          submitDispatches(ctx, [d]);
          outs.set(tileRows, await readF32(ctx, y, N * OUT));
          y.destroy();
        }
        const full = outs.get(64)!;
        expect(relMaxErr(full, matmulRef(x, W.values, N, IN, OUT, b, y0))).toBeLessThan(TOL);
        for (const tileRows of choices) expect(bitDiffCount(outs.get(tileRows)!, full)).toBe(0);
        // The default shape for N is the smallest tile covering it (150 x 70: a 4-workgroup grid in 128-row
        // tiles, too small for them, so 64).
        const yd = f32Buffer(ctx, 'y', y0);
        const dflt = await matmul(ctx, { x: xb, W: Wb, y: yd, n: N, inDim: IN, outDim: OUT });
        expect(dflt.label).toMatch(N <= 16 ? /^matmul_tiled16_/ : N <= 32 ? /^matmul_tiled32_/ : /^matmul_tiled_/);
        for (const buf of [Wb, xb, bb, yd]) buf.destroy();
      });
    }
    it(`${path}: a W row chunk lands at its column offset of a wider y (LM-head use)`, async () => {
      const ctx = await gpuFor(path);
      const rng = new Rng(99);
      const [N, IN, V] = [6, 19, 23];
      const W = randomHalf(rng, V * IN);
      const x = rng.fill(N * IN);
      const xb = f32Buffer(ctx, 'x', x);
      const y = f32Buffer(ctx, 'y', new Float32Array(N * V));
      const ds = [];
      const bufs = [];
      for (const [off, cnt, kernel] of [[0, 10, 'tiled'], [10, 13, 'rows']] as const) {
        const Wb = uploadStorage(ctx, 'Wchunk', W.bits.subarray(off * IN, (off + cnt) * IN));
        bufs.push(Wb);
        const n = kernel === 'rows' ? 4 : N;
        ds.push(await matmul(ctx, { x: xb, W: Wb, y, n, inDim: IN, outDim: cnt, yStride: V, yOffset: off, kernel }));
        if (kernel === 'rows') {
          // rows kernel covers N <= 4; the last two rows come from a second dispatch on shifted x.
          const x2 = f32Buffer(ctx, 'x2', x.subarray(4 * IN));
          const y2 = f32Buffer(ctx, 'y2', new Float32Array(2 * V));
          bufs.push(x2, y2);
          ds.push(await matmul(ctx, { x: x2, W: Wb, y: y2, n: 2, inDim: IN, outDim: cnt, yStride: V, yOffset: off, kernel }));
        }
      }
      submitDispatches(ctx, ds);
      const got = await readF32(ctx, y, N * V);
      const got2 = await readF32(ctx, bufs[bufs.length - 1], 2 * V);
      const want = matmulRef(x, W.values, N, IN, V);
      const merged = Array.from(got);
      for (let r = 4; r < N; r++) for (let c = 10; c < V; c++) merged[r * V + c] = got2[(r - 4) * V + c];
      expect(relMaxErr(merged, want)).toBeLessThan(TOL);
      for (const b of [...bufs, xb, y]) b.destroy();
    });
  }
  it('rejects a tile shape it has no kernel for, naming the setting', async () => {
    const ctx = await gpuFor('packed');
    const d = f32Buffer(ctx, 'd', new Float32Array(64));
    const y = f32Buffer(ctx, 'y', new Float32Array(64));
    await expect(matmul(ctx, { x: d, W: d, y, n: 8, inDim: 4, outDim: 4, tileRows: 8 as 16 })).rejects.toThrow(/matmul: tileRows must be one of 16, 32, 64, 128, got 8/);
  });
});

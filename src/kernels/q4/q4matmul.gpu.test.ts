import { describe, expect, it } from 'vitest';
import { createStorage, readF32 } from '../../gpu/buffers';
import { submitDispatches } from '../../gpu/pipelines';
import { Rng } from '../../util/rng';
import { alsoInBrowser, gpuFor, weightPaths } from '../../../tests/support/gpu';
import { bitDiffCount, f32Buffer, matmulInputs, relMaxErr } from '../common/testing';
import { TILE_ROW_CHOICES, tileRowsMax, tileStorageBytes } from '../common/tile.wgsl';
import { matmulRef } from '../matmul/matmul.ref';
import { dequantizeQ4, quantizeQ4, type Q4ScaleDtype } from './q4.ref';
import { q4Matmul, q4Matvec } from './q4matmul';
import { Q4_TILE_K } from './q4matmul.wgsl';
import { destroyQ4, uploadQ4 } from './q4weight';

// The reference multiplies the dequantized weights in float64, so the only GPU error is f32 accumulation
// over `in` products (as for the f16 matmul): 2e-5 relative to the largest output.
const TOL = 2e-5;

describe('q4 matmul (4-bit W dequantized in registers, f32 accumulate)', async () => {
  const paths = await weightPaths();
  const cases: Array<[number, number, number, 'tiled' | 'rows', boolean, boolean, Q4ScaleDtype]> = [
    [1, 96, 13, 'rows', true, false, 'f16'],
    [2, 320, 17, 'rows', false, true, 'f32'],
    [4, 800, 70, 'rows', true, true, 'f16'],
    // A decode step of a whole Flow-GRPO group (8 sequences) and an odd count in between.
    [6, 96, 21, 'rows', false, false, 'f16'],
    [8, 160, 33, 'rows', true, true, 'f32'],
    [5, 64, 9, 'tiled', true, false, 'f32'],
    [67, 96, 130, 'tiled', false, true, 'f16'],
    [70, 160, 66, 'tiled', true, true, 'f16'],
  ];
  for (const path of paths) {
    const ctxP = gpuFor(path);
    // The subgroup reduction where the device has subgroups (lavapipe, most GPUs), and always the fallback.
    const sgModes = (await ctxP).caps.subgroups ? [true, false] : [false];
    for (const subgroups of sgModes) {
      for (const [N, IN, OUT, kernel, bias, acc, scale] of cases) {
        if (kernel === 'tiled' && !subgroups) continue; // the tiled kernel has no subgroup variant
        it(`${path}${kernel === 'rows' ? (subgroups ? ' subgroups' : ' no-subgroups') : ''}: ${kernel} N=${N} in=${IN} out=${OUT} bias=${bias} accumulate=${acc} scale=${scale}`, async () => {
          const ctx = await ctxP;
          expect(ctx.caps.f16).toBe(path === 'native');
          const rng = new Rng(N * 1000 + IN * 10 + OUT);
          const q = quantizeQ4(rng.fill(OUT * IN, 0.5), OUT, IN, scale);
          const Wd = dequantizeQ4(q);
          const { x, b, y0, xb, bb } = matmulInputs(ctx, rng, N, IN, OUT);
          const W = uploadQ4(ctx, 'W', q);
          const y = f32Buffer(ctx, 'y', y0);
          const d = await q4Matmul(ctx, { x: xb, W, y, bias: bias ? bb : undefined, n: N, inDim: IN, outDim: OUT, accumulate: acc, kernel, subgroups });
          expect(d.label?.includes('_sg')).toBe(kernel === 'rows' && subgroups);
          submitDispatches(ctx, [d]);
          const got = await readF32(ctx, y, N * OUT);
          const want = matmulRef(x, Wd, N, IN, OUT, bias ? b : undefined, acc ? y0 : undefined);
          expect(relMaxErr(got, want)).toBeLessThan(TOL);
          destroyQ4(W);
          for (const buf of [xb, bb, y]) buf.destroy();
        });
      }
    }

    for (const rowsPerWorkgroup of [2, 64]) {
      it(`${path}: rows kernel with ${rowsPerWorkgroup} rows per workgroup (each subgroup / lane group owning several row pairs, or one)`, async () => {
        const ctx = await ctxP;
        const rng = new Rng(rowsPerWorkgroup);
        const [N, IN, OUT] = [1, 224, 203];
        const q = quantizeQ4(rng.fill(OUT * IN), OUT, IN);
        const x = rng.fill(N * IN);
        const W = uploadQ4(ctx, 'W', q);
        const xb = f32Buffer(ctx, 'x', x);
        const want = matmulRef(x, dequantizeQ4(q), N, IN, OUT);
        for (const subgroups of sgModes) {
          const y = createStorage(ctx, 'y', N * OUT * 4);
          submitDispatches(ctx, [await q4Matmul(ctx, { x: xb, W, y, n: N, inDim: IN, outDim: OUT, subgroups, rowsPerWorkgroup })]);
          expect(relMaxErr(await readF32(ctx, y, N * OUT), want)).toBeLessThan(TOL);
          y.destroy();
        }
        destroyQ4(W);
        xb.destroy();
      });
    }

    // Medium row counts get 16- or 32-row tiles, large ones (training micro-batches, prefill chunks) 128-row
    // ones where the device grants the workgroup memory; e2e sampling seeds need them to add up each
    // output exactly as the 64-row tile does. N=150: two 128-row tiles, the second partly padding (the browser's
    // one: the other two shapes took 31 of its 64 s there).
    for (const [N, IN, OUT, scale] of alsoInBrowser([[11, 96, 70, 'f16'], [30, 64, 130, 'f32'], [150, 64, 70, 'f16']] as const, ([N]) => N === 150)) {
      it(`${path}: N=${N} in=${IN} out=${OUT} scale=${scale}: 16-, 32-, 64- and 128-row tiles give the same bits, and match float64`, async () => {
        const ctx = await ctxP;
        const rng = new Rng(N * 31 + OUT);
        const q = quantizeQ4(rng.fill(OUT * IN, 0.5), OUT, IN, scale);
        const { x, b, y0, xb, bb } = matmulInputs(ctx, rng, N, IN, OUT);
        const W = uploadQ4(ctx, 'W', q);
        const outs = new Map<number, Float32Array>();
        const choices = TILE_ROW_CHOICES.filter((r) => tileStorageBytes(r, Q4_TILE_K) <= ctx.caps.limits.maxComputeWorkgroupStorageSize);
        expect(choices).toContain(64);
        for (const tileRows of choices) {
          const y = f32Buffer(ctx, 'y', y0);
          const d = await q4Matmul(ctx, { x: xb, W, y, bias: bb, n: N, inDim: IN, outDim: OUT, accumulate: true, kernel: 'tiled', tileRows });
          expect(d.workgroups).toEqual([Math.ceil(OUT / 64), Math.ceil(N / tileRows)]);
          submitDispatches(ctx, [d]);
          outs.set(tileRows, await readF32(ctx, y, N * OUT));
          y.destroy();
        }
        const full = outs.get(64)!;
        expect(relMaxErr(full, matmulRef(x, dequantizeQ4(q), N, IN, OUT, b, y0))).toBeLessThan(TOL);
        for (const tileRows of choices) expect(bitDiffCount(outs.get(tileRows)!, full)).toBe(0);
        const yd = createStorage(ctx, 'y', N * OUT * 4);
        const dflt = await q4Matmul(ctx, { x: xb, W, y: yd, n: N, inDim: IN, outDim: OUT });
        // 150 rows x 70 columns: 128-row tiles would make a 4-workgroup grid, so the default stays at 64.
        expect(dflt.label).toMatch(N <= 16 ? /^q4_matmul_tiled16_/ : N <= 32 ? /^q4_matmul_tiled32_/ : /^q4_matmul_tiled_/);
        destroyQ4(W);
        for (const buf of [xb, bb, yd]) buf.destroy();
      });
    }

    it(`${path}: 128 rows over 132 column tiles take the 128-row tile by default where the device grants its 24 KiB (same bits as 64 rows, float64)`, async () => {
      const ctx = await ctxP;
      const rng = new Rng(128);
      const [N, IN, OUT] = [128, 32, 132 * 64];
      const q = quantizeQ4(rng.fill(OUT * IN, 0.5), OUT, IN, 'f32');
      const x = rng.fill(N * IN);
      const W = uploadQ4(ctx, 'W', q);
      const xb = f32Buffer(ctx, 'x', x);
      const [ya, yb] = [createStorage(ctx, 'yDefault', N * OUT * 4), createStorage(ctx, 'y64', N * OUT * 4)];
      const dflt = await q4Matmul(ctx, { x: xb, W, y: ya, n: N, inDim: IN, outDim: OUT });
      const wide = tileStorageBytes(128, Q4_TILE_K) <= ctx.caps.limits.maxComputeWorkgroupStorageSize && tileRowsMax() === 128;
      expect(dflt.label).toMatch(wide ? /^q4_matmul_tiled128_/ : /^q4_matmul_tiled_/);
      expect(dflt.workgroups).toEqual([132, wide ? 1 : 2]);
      submitDispatches(ctx, [dflt, await q4Matmul(ctx, { x: xb, W, y: yb, n: N, inDim: IN, outDim: OUT, tileRows: 64 })]);
      const got = await readF32(ctx, ya, N * OUT);
      expect(relMaxErr(got, matmulRef(x, dequantizeQ4(q), N, IN, OUT))).toBeLessThan(TOL);
      expect(bitDiffCount(got, await readF32(ctx, yb, N * OUT))).toBe(0);
      destroyQ4(W);
      for (const buf of [xb, ya, yb]) buf.destroy();
    });

    it(`${path}: q4Matvec on a window of rows (rowBase) of a larger matrix, both reductions`, async () => {
      const ctx = await ctxP;
      const rng = new Rng(7);
      const [ROWS, IN, base, cnt] = [41, 128, 11, 23];
      const q = quantizeQ4(rng.fill(ROWS * IN), ROWS, IN);
      const x = rng.fill(IN);
      const W = uploadQ4(ctx, 'Wbig', q);
      const xb = f32Buffer(ctx, 'x', x);
      const want = matmulRef(x, dequantizeQ4(q, base, cnt), 1, IN, cnt);
      for (const subgroups of sgModes) {
        const y = createStorage(ctx, 'y', cnt * 4);
        submitDispatches(ctx, [await q4Matvec(ctx, { W: { ...W, rowBase: base }, x: xb, y, rows: cnt, cols: IN, subgroups })]);
        expect(relMaxErr(await readF32(ctx, y, cnt), want)).toBeLessThan(TOL);
        y.destroy();
      }
      destroyQ4(W);
      xb.destroy();
    });
  }

  it('rejects an input dimension that is not a multiple of 32, and a too-small q_weight, naming them', async () => {
    const ctx = await gpuFor('packed');
    const d = createStorage(ctx, 'd', 4096);
    const W = { qWeight: createStorage(ctx, 'tiny.q_weight', 16), qScale: createStorage(ctx, 'tiny.q_scale', 4096) };
    await expect(q4Matmul(ctx, { x: d, W, y: createStorage(ctx, 'y', 4096), n: 1, inDim: 48, outDim: 1 })).rejects.toThrow(/multiple of 32 .*got 48/);
    await expect(q4Matmul(ctx, { x: d, W, y: createStorage(ctx, 'y', 4096), n: 1, inDim: 64, outDim: 4 })).rejects.toThrow(/tiny\.q_weight/);
    const ok = { qWeight: d, qScale: d };
    await expect(q4Matmul(ctx, { x: d, W: ok, y: createStorage(ctx, 'y', 4096), n: 8, inDim: 32, outDim: 4, tileRows: 48 as 64 })).rejects.toThrow(/q4Matmul: tileRows must be one of 16, 32, 64, 128, got 48/);
  });
});

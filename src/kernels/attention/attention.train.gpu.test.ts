import { describe, expect, it } from 'vitest';
import { readF32 } from '../../gpu/buffers';
import { submitDispatches } from '../../gpu/pipelines';
import { Rng } from '../../util/rng';
import { gpuFor, weightPaths } from '../../../tests/support/gpu';
import { emptyF32, f32Buffer, relMaxErr, u32Buffer } from '../common/testing';
import { attention } from './attention';
import { packedRanges } from './attention.backward.ref';
import { attentionRef } from './attention.ref';
import { attentionTrain } from './attention.train';

describe('training-forward attention (tiled) vs float64 and the single-pass kernel', async () => {
  const paths = await weightPaths();
  type Case = { name: string; nH: number; nKV: number; hd: number; M: number; ranges: ArrayLike<number>; qScale: number; tiles: Array<16 | 4> };
  const cases: Case[] = [
    { name: 'single row, single key', nH: 1, nKV: 1, hd: 2, M: 1, ranges: [0, 1], qScale: 1, tiles: [16] },
    // The trainer's layout at Qwen2.5-0.5B head shape: sequences ending mid-tile, a one-row sequence.
    { name: 'packed 21+1+17, hd 64, GQA 7:1', nH: 7, nKV: 1, hd: 64, M: 39, ranges: packedRanges([21, 1, 17]), qScale: 1, tiles: [16, 4] },
    // Sharp scores over many key tiles exercise the online rescale; hd 130 leaves column passes partial.
    { name: 'KV cache rows > query rows, hd 130, sharp', nH: 2, nKV: 2, hd: 130, M: 300, ranges: [0, 1, 0, 200, 0, 257], qScale: 4, tiles: [16] },
    // Ranges neither causal nor in row order, and an empty one (out 0, lse -3e38).
    { name: 'scattered ranges, one empty, GQA 6:3', nH: 6, nKV: 3, hd: 6, M: 23, ranges: [3, 20, 0, 1, 7, 7, 10, 23, 1, 6], qScale: 2, tiles: [16, 4] },
  ];
  for (const path of paths) {
    for (const c of cases) {
      it(`${path}: ${c.name}`, async () => {
        const ctx = await gpuFor(path);
        const N = c.ranges.length / 2;
        const rng = new Rng(N * 31 + c.hd + c.M);
        const q = rng.fill(N * c.nH * c.hd, c.qScale);
        const k = rng.fill(c.M * c.nKV * c.hd);
        const v = rng.fill(c.M * c.nKV * c.hd);
        const [qb, kb, vb, rb] = [f32Buffer(ctx, 'q', q), f32Buffer(ctx, 'k', k), f32Buffer(ctx, 'v', v), u32Buffer(ctx, 'ranges', Array.from(c.ranges))];
        const dims = { n: N, nHeads: c.nH, nKvHeads: c.nKV, headDim: c.hd };
        const one = { out: emptyF32(ctx, 'out1', N * c.nH * c.hd), lse: emptyF32(ctx, 'lse1', N * c.nH) };
        submitDispatches(ctx, [await attention(ctx, { q: qb, k: kb, v: vb, ranges: rb, ...one, ...dims })]);
        const single = { out: await readF32(ctx, one.out, N * c.nH * c.hd), lse: await readF32(ctx, one.lse, N * c.nH) };
        const want = attentionRef(q, k, v, c.ranges, N, c.nH, c.nKV, c.hd);
        const empty = new Set<number>();
        for (let r = 0; r < N; r++) if (c.ranges[2 * r] >= c.ranges[2 * r + 1]) for (let h = 0; h < c.nH; h++) empty.add(r * c.nH + h);
        for (const tile of c.tiles) {
          const out = f32Buffer(ctx, 'out', new Float32Array(N * c.nH * c.hd).fill(Number.NaN));
          const lse = f32Buffer(ctx, 'lse', new Float32Array(N * c.nH).fill(Number.NaN));
          submitDispatches(ctx, [await attentionTrain(ctx, { q: qb, k: kb, v: vb, ranges: rb, out, lse, ...dims, tile })]);
          const got = { out: await readF32(ctx, out, N * c.nH * c.hd), lse: await readF32(ctx, lse, N * c.nH) };
          // The single-pass kernel's conventions for an empty range (out 0, lse -3e38) hold bit for bit.
          for (const i of empty) expect([got.lse[i], got.out[i * c.hd]]).toEqual([single.lse[i], 0]);
          const wantLse = Float64Array.from(want.lse, (x, i) => (empty.has(i) ? single.lse[i] : x));
          // Same tolerances as the single-pass kernel's test (attention.gpu.test.ts).
          expect(relMaxErr(got.out, want.out), `tile ${tile}`).toBeLessThan(1e-4);
          expect(relMaxErr(got.lse, wantLse), `tile ${tile}`).toBeLessThan(1e-5);
          expect(relMaxErr(got.out, single.out), `tile ${tile} vs single-pass`).toBeLessThan(1e-4);
          out.destroy();
          lse.destroy();
        }
        for (const b of [qb, kb, vb, rb, one.out, one.lse]) b.destroy();
      });
    }
  }
});

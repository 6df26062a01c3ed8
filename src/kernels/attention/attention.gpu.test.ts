import { describe, expect, it } from 'vitest';
import { readF32 } from '../../gpu/buffers';
import { submitDispatches } from '../../gpu/pipelines';
import { Rng } from '../../util/rng';
import { gpuFor, weightPaths } from '../../../tests/support/gpu';
import { emptyF32, f32Buffer, relMaxErr, u32Buffer } from '../common/testing';
import { attention } from './attention';
import { attentionRef } from './attention.ref';

/** Packed prefill ranges for sequences of the given lengths: row i attends [seqStart, i+1). */
function packedRanges(lengths: number[]): number[] {
  const r: number[] = [];
  let s = 0;
  for (const len of lengths) {
    for (let i = 0; i < len; i++) r.push(s, s + i + 1);
    s += len;
  }
  return r;
}

describe('attention kernel', async () => {
  const paths = await weightPaths();
  type Case = { name: string; nH: number; nKV: number; hd: number; M: number; ranges: number[]; qScale: number };
  const cases: Case[] = [
    { name: 'single row, single key', nH: 1, nKV: 1, hd: 2, M: 1, ranges: [0, 1], qScale: 1 },
    { name: 'packed prefill of 3 sequences (GQA 4:2)', nH: 4, nKV: 2, hd: 8, M: 12, ranges: packedRanges([5, 1, 6]), qScale: 1 },
    { name: 'packed prefill crossing key blocks, hd=64, GQA 7:1', nH: 7, nKV: 1, hd: 64, M: 150, ranges: packedRanges([70, 80]), qScale: 3 },
    // Decode over a KV cache with more rows than queries; sharp scores exercise the online rescaling.
    { name: 'decode over a 300-row KV cache, hd=130', nH: 2, nKV: 2, hd: 130, M: 300, ranges: [0, 1, 0, 200, 0, 257], qScale: 4 },
  ];
  for (const path of paths) {
    for (const c of cases) {
      it(`${path}: ${c.name}`, async () => {
        const ctx = await gpuFor(path);
        const N = c.ranges.length / 2;
        const rng = new Rng(N * 17 + c.hd + c.M);
        const q = rng.fill(N * c.nH * c.hd, c.qScale);
        const k = rng.fill(c.M * c.nKV * c.hd);
        const v = rng.fill(c.M * c.nKV * c.hd);
        const bufs = [f32Buffer(ctx, 'q', q), f32Buffer(ctx, 'k', k), f32Buffer(ctx, 'v', v), u32Buffer(ctx, 'ranges', c.ranges)];
        const out = emptyF32(ctx, 'out', N * c.nH * c.hd);
        const lse = emptyF32(ctx, 'lse', N * c.nH);
        const [qb, kb, vb, rb] = bufs;
        submitDispatches(ctx, [
          await attention(ctx, { q: qb, k: kb, v: vb, ranges: rb, out, lse, n: N, nHeads: c.nH, nKvHeads: c.nKV, headDim: c.hd }),
        ]);
        const want = attentionRef(q, k, v, c.ranges, N, c.nH, c.nKV, c.hd);
        // Scores are f32 dots over hd <= 130 terms of magnitude up to ~|q|*|k|; exp and the weighted sum
        // of <= 257 values add a few ulp each. 1e-4 relative (to max |out| >= 1 and to lse magnitude)
        // covers the qScale=4 case where scores reach ~50 and exp's relative error scales with them.
        expect(relMaxErr(await readF32(ctx, out, N * c.nH * c.hd), want.out)).toBeLessThan(1e-4);
        expect(relMaxErr(await readF32(ctx, lse, N * c.nH), want.lse)).toBeLessThan(1e-5);
        for (const b of [...bufs, out, lse]) b.destroy();
      });
    }
  }
});

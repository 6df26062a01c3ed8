import { describe, expect, it } from 'vitest';
import { createStorage, readF32 } from '../../gpu/buffers';
import { submitDispatches } from '../../gpu/pipelines';
import { Rng } from '../../util/rng';
import { gpuFor } from '../../../tests/support/gpu';
import { f32Buffer, relMaxErr, u32Buffer } from '../common/testing';
import { centralDiff, dot } from '../finite-diff.ref';
import { attentionBackward } from './attention.backward';
import { attentionBackwardRef, attentionForwardRef, packedRanges, type AttnShape } from './attention.backward.ref';

interface Case {
  name: string;
  shape: AttnShape;
  ranges: Uint32Array;
  packed?: boolean;
  /** Also run tile 4 (several tiles per range at these small shapes); each head dim and tile is a shader compile, slow on a software GPU. */
  smallTiles?: boolean;
}

const cases: Case[] = [
  { name: 'one row, one head', shape: { n: 1, m: 1, nH: 1, nKV: 1, hd: 8 }, ranges: packedRanges([1]) },
  { name: 'packed 4+3, GQA 4/2', shape: { n: 7, m: 7, nH: 4, nKV: 2, hd: 8 }, ranges: packedRanges([4, 3]), packed: true, smallTiles: true },
  // Decode-like: 3 query rows over a 10-row KV cache, [0, pos+1).
  // Three sequences, the middle one spanning several 64-entry tiles (the packed scan's early stop).
  { name: 'packed 3+40+30, GQA 4/1', shape: { n: 73, m: 73, nH: 4, nKV: 1, hd: 8 }, ranges: packedRanges([3, 40, 30]), packed: true, smallTiles: true },
  // hd 6: tile 4 leaves the second column pass partly idle.
  { name: 'KV cache rows > query rows', shape: { n: 3, m: 10, nH: 2, nKV: 1, hd: 6 }, ranges: Uint32Array.from([0, 8, 0, 9, 0, 10]), smallTiles: true },
  // More than one 64-key tile and more than one 64-entry tile of (query, head) pairs; hd > 64.
  { name: 'packed 70+5, hd 96, GQA 6/2', shape: { n: 75, m: 75, nH: 6, nKV: 2, hd: 96 }, ranges: packedRanges([70, 5]), packed: true },
  // The trainer's layout at Qwen2.5-0.5B head shape (hd 64, GQA 7:1): sequences that end mid-tile and a
  // one-row sequence, so tiles straddle sequence starts and the last key block is partial.
  { name: 'packed 21+1+17, hd 64, GQA 7/1', shape: { n: 39, m: 39, nH: 7, nKV: 1, hd: 64 }, ranges: packedRanges([21, 1, 17]), packed: true },
  // Ranges that are neither causal nor contiguous in row order, and an empty range.
  { name: 'scattered ranges, one empty, GQA 6/3', shape: { n: 5, m: 23, nH: 6, nKV: 3, hd: 8 }, ranges: Uint32Array.from([3, 20, 0, 1, 7, 7, 10, 23, 1, 6]), smallTiles: true },
];

// Tile 16 (the default on these devices) and, where asked, tile 4; with and without the per-head
// partials (and their sum pass).
const variants = (c: Case) =>
  [
    { tile: 16, partials: false },
    { tile: 16, partials: true },
    { tile: 4, partials: false },
    { tile: 4, partials: true },
  ].filter((x) => x.tile === 16 || c.smallTiles) as Array<{ tile: 16 | 4; partials: boolean }>;

describe('attention backward (dq, dk, dv)', () => {
  for (const c of cases) {
    it(c.name, async () => {
      const ctx = await gpuFor('packed');
      const { n, m, nH, nKV, hd } = c.shape;
      const rng = new Rng(n * 100 + hd);
      const q = rng.fill(n * nH * hd), k = rng.fill(m * nKV * hd), v = rng.fill(m * nKV * hd), dout = rng.fill(n * nH * hd);
      const want = attentionBackwardRef(q, k, v, dout, c.ranges, c.shape);
      if (n * nH * hd <= 300) {
        const L = (qq: ArrayLike<number>, kk: ArrayLike<number>, vv: ArrayLike<number>) => dot(attentionForwardRef(qq, kk, vv, c.ranges, c.shape).out, dout);
        expect(relMaxErr(want.dq, centralDiff((x) => L(x, k, v), q))).toBeLessThan(1e-7);
        expect(relMaxErr(want.dk, centralDiff((x) => L(q, x, v), k))).toBeLessThan(1e-7);
        expect(relMaxErr(want.dv, centralDiff((x) => L(q, k, x), v))).toBeLessThan(1e-7);
      }
      const fwd = attentionForwardRef(q, k, v, c.ranges, c.shape);
      const b = {
        q: f32Buffer(ctx, 'q', q), k: f32Buffer(ctx, 'k', k), v: f32Buffer(ctx, 'v', v), out: f32Buffer(ctx, 'out', fwd.out),
        lse: f32Buffer(ctx, 'lse', fwd.lse), dout: f32Buffer(ctx, 'dout', dout), ranges: u32Buffer(ctx, 'ranges', c.ranges),
        stats: createStorage(ctx, 'stats', 2 * n * nH * 4), dq: createStorage(ctx, 'dq', n * nH * hd * 4),
        dk: createStorage(ctx, 'dk', m * nKV * hd * 4), dv: createStorage(ctx, 'dv', m * nKV * hd * 4),
        partials: createStorage(ctx, 'partials', 2 * m * nH * hd * 4),
      };
      const garbage = new Float32Array(Math.max(n * nH, m * nKV) * hd).fill(Number.NaN);
      // The general scan, and for packed batches also the packed shortcut.
      for (const packed of c.packed ? [false, true] : [false]) {
        for (const { tile, partials } of variants(c)) {
          // Outputs start as NaN: every element must be written.
          for (const o of [b.dq, b.dk, b.dv]) ctx.device.queue.writeBuffer(o, 0, garbage, 0, o.size / 4);
          const { partials: part, ...rest } = b;
          submitDispatches(ctx, await attentionBackward(ctx, { ...rest, ...(partials ? { partials: part } : {}), n, kvRows: m, nHeads: nH, nKvHeads: nKV, headDim: hd, packed, tile }));
          const what = `packed ${packed}, tile ${tile}, partials ${partials}`;
          expect(relMaxErr(await readF32(ctx, b.dq, n * nH * hd), want.dq), what).toBeLessThan(1e-4);
          expect(relMaxErr(await readF32(ctx, b.dk, m * nKV * hd), want.dk), what).toBeLessThan(1e-4);
          expect(relMaxErr(await readF32(ctx, b.dv, m * nKV * hd), want.dv), what).toBeLessThan(1e-4);
        }
      }
      for (const x of Object.values(b)) x.destroy();
    });
  }
});

describe('attention backward chained after the forward kernel (its out and lse conventions)', () => {
  it('packed 5+4, GQA 4/2: forward on the GPU, backward from its out/lse matches float64', async () => {
    const { attention } = await import('./attention');
    const ctx = await gpuFor('packed');
    const shape: AttnShape = { n: 9, m: 9, nH: 4, nKV: 2, hd: 16 };
    const ranges = packedRanges([5, 4]);
    const rng = new Rng(99);
    const qn = shape.n * shape.nH * shape.hd, kvn = shape.m * shape.nKV * shape.hd;
    const q = rng.fill(qn), k = rng.fill(kvn), v = rng.fill(kvn), dout = rng.fill(qn);
    const want = attentionBackwardRef(q, k, v, dout, ranges, shape);
    const b = {
      q: f32Buffer(ctx, 'q', q), k: f32Buffer(ctx, 'k', k), v: f32Buffer(ctx, 'v', v), out: createStorage(ctx, 'out', qn * 4),
      lse: createStorage(ctx, 'lse', shape.n * shape.nH * 4), dout: f32Buffer(ctx, 'dout', dout), ranges: u32Buffer(ctx, 'ranges', ranges),
      stats: createStorage(ctx, 'stats', 2 * shape.n * shape.nH * 4), dq: createStorage(ctx, 'dq', qn * 4),
      dk: createStorage(ctx, 'dk', kvn * 4), dv: createStorage(ctx, 'dv', kvn * 4),
    };
    const dims = { n: shape.n, nHeads: shape.nH, nKvHeads: shape.nKV, headDim: shape.hd };
    submitDispatches(ctx, [
      await attention(ctx, { q: b.q, k: b.k, v: b.v, ranges: b.ranges, out: b.out, lse: b.lse, ...dims }),
      ...(await attentionBackward(ctx, { ...b, ...dims, kvRows: shape.m, packed: true })),
    ]);
    expect(relMaxErr(await readF32(ctx, b.dq, qn), want.dq)).toBeLessThan(1e-4);
    expect(relMaxErr(await readF32(ctx, b.dk, kvn), want.dk)).toBeLessThan(1e-4);
    expect(relMaxErr(await readF32(ctx, b.dv, kvn), want.dv)).toBeLessThan(1e-4);
    for (const x of Object.values(b)) x.destroy();
  });
});

import { describe, expect, it } from 'vitest';
import { createStorage, readF32 } from '../../gpu/buffers';
import { submitDispatches } from '../../gpu/pipelines';
import { Rng } from '../../util/rng';
import { gpuFor } from '../../../tests/support/gpu';
import { emptyF32, f32Buffer, relMaxErr, u32Buffer } from '../common/testing';
import { attention } from './attention';
import { attentionRef } from './attention.ref';
import { attentionPartialsBytes, attentionSplit, attentionSplits } from './attention.split';
import { ATTN_NEG } from './attention.wgsl';

interface Case {
  name: string;
  nH: number;
  nKV: number;
  hd: number;
  /** K/V rows (a KV cache's maxCtx) and the longest range the dispatch is sized for. */
  M: number;
  ranges: number[];
  keysPerSplit?: number;
  qScale?: number;
  /** Slices the dispatch must have, so each case provably exercises what its name says. */
  splits: number;
}

const cases: Case[] = [
  // Rows of different lengths over one cache: 1 key, a range shorter than one slice, one ending mid-slice
  // (130 = 64 + 64 + 2), one filling every slice with a partial last one (300 = 4*64 + 44).
  { name: 'GQA 14/2, hd 64, ranges of 1, 50, 130, 300 keys over 5 slices', nH: 14, nKV: 2, hd: 64, M: 300, ranges: [0, 1, 0, 50, 0, 130, 0, 300], keysPerSplit: 64, splits: 5 },
  // Ranges that do not start at row 0 (a packed batch's later sequence) and sharp scores (online rescaling
  // across slices whose maxima differ by tens).
  { name: 'hd 130 (3 dims per thread), offset ranges, sharp scores', nH: 2, nKV: 1, hd: 130, M: 400, ranges: [17, 18, 100, 399, 5, 260], keysPerSplit: 64, qScale: 4, splits: 7 },
  { name: 'MHA 3/3, hd 6 (fixture head dim), decode row', nH: 3, nKV: 3, hd: 6, M: 200, ranges: [0, 193], keysPerSplit: 64, splits: 4 },
  // The production slice length: 1100 keys of a 1200-row cache give ceil(1100/5) -> 256-key slices.
  { name: 'default slice length, GQA 4/2, hd 16, 1100 keys over 5 slices', nH: 4, nKV: 2, hd: 16, M: 1200, ranges: [0, 1100, 0, 7], splits: 5 },
];

/** Runs the split-K kernels (`split`) or the single-pass kernel on the same inputs; returns out and lse. */
async function run(c: Case, q: Float32Array, k: Float32Array, v: Float32Array, split: boolean): Promise<{ out: Float32Array; lse: Float32Array }> {
  const ctx = await gpuFor('packed');
  const N = c.ranges.length / 2;
  const [qb, kb, vb, rb] = [f32Buffer(ctx, 'q', q), f32Buffer(ctx, 'k', k), f32Buffer(ctx, 'v', v), u32Buffer(ctx, 'ranges', c.ranges)];
  const out = emptyF32(ctx, 'out', N * c.nH * c.hd);
  const lse = emptyF32(ctx, 'lse', N * c.nH);
  const made = [qb, kb, vb, rb, out, lse];
  const a = { q: qb, k: kb, v: vb, ranges: rb, out, lse, n: N, nHeads: c.nH, nKvHeads: c.nKV, headDim: c.hd };
  if (split) {
    const partials = createStorage(ctx, 'partials', attentionPartialsBytes(N, c.nH, c.hd, c.M, c.keysPerSplit));
    made.push(partials);
    submitDispatches(ctx, await attentionSplit(ctx, { ...a, maxKeys: c.M, partials, keysPerSplit: c.keysPerSplit }));
  } else {
    submitDispatches(ctx, [await attention(ctx, a)]);
  }
  const res = { out: await readF32(ctx, out, N * c.nH * c.hd), lse: await readF32(ctx, lse, N * c.nH) };
  for (const b of made) b.destroy();
  return res;
}

function inputs(c: Case, seed: number) {
  const rng = new Rng(seed);
  const N = c.ranges.length / 2;
  return { q: rng.fill(N * c.nH * c.hd, c.qScale ?? 1), k: rng.fill(c.M * c.nKV * c.hd), v: rng.fill(c.M * c.nKV * c.hd) };
}

describe('split-K attention (flash-decoding) vs the float64 reference', () => {
  for (const c of cases) {
    it(c.name, async () => {
      expect(attentionSplits(c.M, c.keysPerSplit)).toBe(c.splits);
      const N = c.ranges.length / 2;
      const { q, k, v } = inputs(c, N * 31 + c.hd + c.M);
      const got = await run(c, q, k, v, true);
      const want = attentionRef(q, k, v, c.ranges, N, c.nH, c.nKV, c.hd);
      // Same budget as the single-pass kernel's test: scores up to ~50 with qScale 4, f32 exp and sums.
      expect(relMaxErr(got.out, want.out)).toBeLessThan(1e-4);
      expect(relMaxErr(got.lse, want.lse)).toBeLessThan(1e-5);
    });
  }
});

describe('split-K attention vs the single-pass kernel', () => {
  it('a range of at most one slice gives the single-pass bits exactly (out and lse)', async () => {
    // 64-key slices; every range fits one: 1 key, 63, exactly 64, and 64 keys starting mid-cache.
    const c: Case = { name: '', nH: 4, nKV: 2, hd: 16, M: 256, ranges: [0, 1, 0, 63, 0, 64, 100, 164], keysPerSplit: 64, qScale: 3, splits: 4 };
    const { q, k, v } = inputs(c, 5);
    const split = await run(c, q, k, v, true);
    const single = await run(c, q, k, v, false);
    expect(Array.from(split.out)).toEqual(Array.from(single.out));
    expect(Array.from(split.lse)).toEqual(Array.from(single.lse));
  });

  it('an empty range gives out 0 and lse -3e38, like the single-pass kernel', async () => {
    const c: Case = { name: '', nH: 2, nKV: 1, hd: 8, M: 300, ranges: [4, 4, 0, 300], keysPerSplit: 64, splits: 5 };
    const { q, k, v } = inputs(c, 6);
    const split = await run(c, q, k, v, true);
    const single = await run(c, q, k, v, false);
    expect(Array.from(split.out.subarray(0, 2 * 8))).toEqual(new Array(16).fill(0));
    expect(Array.from(split.lse.subarray(0, 2))).toEqual([Math.fround(ATTN_NEG), Math.fround(ATTN_NEG)]);
    expect(Array.from(single.lse.subarray(0, 2))).toEqual(Array.from(split.lse.subarray(0, 2)));
    // The long row is a real multi-slice result, close to (not necessarily equal to) the single pass.
    expect(relMaxErr(split.out.subarray(16), single.out.subarray(16))).toBeLessThan(1e-5);
  });
});

describe('attentionSplit argument checks', () => {
  it('names a too-small partials buffer and a slice length that is not a multiple of 64', async () => {
    const ctx = await gpuFor('packed');
    const b = (label: string, bytes: number) => createStorage(ctx, label, bytes);
    const base = { q: b('q', 64), k: b('k', 64), v: b('v', 64), ranges: b('ranges', 8), out: b('out', 64), lse: b('lse', 16), n: 1, nHeads: 2, nKvHeads: 1, headDim: 8, maxKeys: 600 };
    const small = b('tiny.partials', 16);
    await expect(attentionSplit(ctx, { ...base, partials: small })).rejects.toThrow(/'partials' \('tiny\.partials'\) holds 16 bytes, needs 240/);
    await expect(attentionSplit(ctx, { ...base, partials: small, keysPerSplit: 100 })).rejects.toThrow(/keysPerSplit 100 is not a multiple of 64/);
    for (const x of [...Object.values(base).filter((x): x is GPUBuffer => typeof x === 'object'), small]) x.destroy();
  });
});

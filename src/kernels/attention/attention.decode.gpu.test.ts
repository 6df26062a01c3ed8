import { describe, expect, it } from 'vitest';
import { readF32 } from '../../gpu/buffers';
import { submitDispatches } from '../../gpu/pipelines';
import { Rng } from '../../util/rng';
import { alsoInBrowser, gpuFor } from '../../../tests/support/gpu';
import { emptyF32, f32Buffer, relMaxErr, u32Buffer } from '../common/testing';
import { attention } from './attention';
import { attentionDecode, attentionDecodePartialsBytes, attentionDecodeSplits } from './attention.decode';
import { attentionRef } from './attention.ref';

// Key ranges per call: one row each of 1, 7, 64, 300 and 1500 keys (a 256-key block boundary and several
// blocks), then three rows with different ranges, one not starting at 0, and a decode step of 8 sequences
// (ATTN_DECODE_MAX_ROWS), each in its own region of the cache.
const M = 1600;
const RANGE_SETS: number[][] = [
  [0, 1], [0, 7], [3, 67], [0, 300], [100, 1600], [0, 1, 37, 337, 0, 1500],
  [0, 5, 10, 74, 0, 1, 200, 330, 64, 65, 0, 130, 300, 301, 900, 1000],
];
// [nH, nKV, hd, split]: Qwen2.5-0.5B's 7 query heads per KV head and one head per KV head, head dims 64
// and 32, each variant one workgroup per (row, KV head) or split over workgroups. (Not every product:
// software GPUs take up to a minute to compile each variant.)
const VARIANTS = [[7, 1, 64, false], [7, 1, 64, true], [14, 2, 32, false], [2, 2, 64, false], [2, 2, 32, true]] as const;
// Split variant: slices of at least 64 keys, so 300 and 1500 keys span 5 and 8 workgroups per KV head.
const SPLIT = { splits: 8, keysPerSplit: 64 };

describe('attentionDecode', async () => {
  const ctx = await gpuFor('packed');
  const sgModes = ctx.caps.subgroups ? [true, false] : [false];
  // The browser runs the first shape, in one workgroup and split (its other shapes took 20 of 47 s there).
  for (const [nH, nKV, hd, split] of alsoInBrowser(VARIANTS, (_, i) => i < 2)) {
    for (const subgroups of sgModes) {
        it(`nH=${nH} nKV=${nKV} hd=${hd}, ${subgroups ? 'subgroups' : 'workgroup-memory reductions'}, ${split ? 'split over 8 workgroups' : 'one workgroup'} per (row, KV head)`, async () => {
          const rng = new Rng(nH * 100 + hd + (split ? 7 : 0));
          const k = rng.fill(M * nKV * hd);
          const v = rng.fill(M * nKV * hd);
          const kb = f32Buffer(ctx, 'k', k);
          const vb = f32Buffer(ctx, 'v', v);
          const partials = emptyF32(ctx, 'partials', attentionDecodePartialsBytes(8, nH, hd, SPLIT.splits) / 4);
          try {
            for (const ranges of RANGE_SETS) {
              const n = ranges.length / 2;
              // Scale 2 makes the softmax peaked enough that the running-max rescaling matters.
              const q = rng.fill(n * nH * hd, 2);
              const qb = f32Buffer(ctx, 'q', q);
              const rb = u32Buffer(ctx, 'ranges', ranges);
              const [out, lse, out0, lse0] = [emptyF32(ctx, 'out', n * nH * hd), emptyF32(ctx, 'lse', n * nH), emptyF32(ctx, 'out0', n * nH * hd), emptyF32(ctx, 'lse0', n * nH)];
              const base = { q: qb, k: kb, v: vb, ranges: rb, n, nHeads: nH, nKvHeads: nKV, headDim: hd };
              const mine = await attentionDecode(ctx, { ...base, out, lse, subgroups, ...(split ? { ...SPLIT, partials } : {}) });
              expect(mine.length).toBe(split ? 2 : 1);
              submitDispatches(ctx, [...mine, await attention(ctx, { ...base, out: out0, lse: lse0 })]);
              const got = await readF32(ctx, out, n * nH * hd);
              const gotLse = await readF32(ctx, lse, n * nH);
              const want = attentionRef(q, k, v, ranges, n, nH, nKV, hd);
              const what = `ranges [${ranges.join(', ')}]`;
              // f32 scores over hd terms and sums over <= 1500 keys: a few ulp each, far below 1e-5 of max(1, |out|).
              expect(relMaxErr(got, want.out), what).toBeLessThan(1e-5);
              expect(relMaxErr(gotLse, want.lse), what).toBeLessThan(1e-5);
              expect(relMaxErr(got, await readF32(ctx, out0, n * nH * hd)), what).toBeLessThan(1e-5);
              expect(relMaxErr(gotLse, await readF32(ctx, lse0, n * nH)), what).toBeLessThan(1e-5);
              for (const b of [qb, rb, out, lse, out0, lse0]) b.destroy();
            }
          } finally {
            for (const b of [kb, vb, partials]) b.destroy();
          }
        });
    }
  }

  // Shared prefix: row r attends prefixes[r] and then ranges[r] as one sequence of keys. Against float64 over
  // the gathered keys, and bit-exact against the plain kernel where the two ranges are contiguous (what a
  // batch of sequences sharing a prompt relies on to give each one's tokens exactly as alone).
  for (const [nH, nKV, hd, split] of [VARIANTS[0], VARIANTS[1]]) {
    for (const subgroups of sgModes) {
      it(`nH=${nH} nKV=${nKV} hd=${hd}, ${subgroups ? 'subgroups' : 'workgroup-memory reductions'}, ${split ? 'split' : 'one workgroup'}: a shared prefix range then the row's own`, async () => {
        const rng = new Rng(nH + hd + (split ? 3 : 0) + (subgroups ? 5 : 0));
        const k = rng.fill(M * nKV * hd);
        const v = rng.fill(M * nKV * hd);
        const kb = f32Buffer(ctx, 'k', k);
        const vb = f32Buffer(ctx, 'v', v);
        const partials = emptyF32(ctx, 'partials', attentionDecodePartialsBytes(8, nH, hd, SPLIT.splits) / 4);
        // [prefix, own] per row: a 700-key prefix shared by three rows whose own rows are elsewhere (one
        // crossing a 256-key block inside the prefix's last block), an empty prefix, an empty own range,
        // and a prefix contiguous with its own range.
        const prefixes = [0, 700, 0, 700, 0, 700, 5, 5, 40, 300, 0, 400];
        const ranges = [900, 901, 1000, 1130, 1200, 1500, 10, 74, 7, 7, 400, 650];
        const n = ranges.length / 2;
        const q = rng.fill(n * nH * hd, 2);
        const qb = f32Buffer(ctx, 'q', q);
        const pb = u32Buffer(ctx, 'prefixes', prefixes);
        const rb = u32Buffer(ctx, 'ranges', ranges);
        const [out, lse] = [emptyF32(ctx, 'out', n * nH * hd), emptyF32(ctx, 'lse', n * nH)];
        const base = { q: qb, k: kb, v: vb, ranges: rb, n, nHeads: nH, nKvHeads: nKV, headDim: hd, subgroups, ...(split ? { ...SPLIT, partials } : {}) };
        submitDispatches(ctx, await attentionDecode(ctx, { ...base, out, lse, prefixes: pb }));
        const got = await readF32(ctx, out, n * nH * hd);
        const gotLse = await readF32(ctx, lse, n * nH);
        const row = nKV * hd;
        for (let r = 0; r < n; r++) {
          const keys = [prefixes[2 * r], prefixes[2 * r + 1], ranges[2 * r], ranges[2 * r + 1]];
          const rows = [...Array.from({ length: keys[1] - keys[0] }, (_, i) => keys[0] + i), ...Array.from({ length: keys[3] - keys[2] }, (_, i) => keys[2] + i)];
          const gk = new Float32Array(Math.max(1, rows.length) * row);
          const gv = new Float32Array(Math.max(1, rows.length) * row);
          rows.forEach((c, i) => {
            gk.set(k.subarray(c * row, (c + 1) * row), i * row);
            gv.set(v.subarray(c * row, (c + 1) * row), i * row);
          });
          const want = attentionRef(q.subarray(r * nH * hd, (r + 1) * nH * hd), gk, gv, [0, rows.length], 1, nH, nKV, hd);
          const what = `row ${r}: prefix [${keys[0]}, ${keys[1]}), own [${keys[2]}, ${keys[3]})`;
          expect(relMaxErr(got.subarray(r * nH * hd, (r + 1) * nH * hd), want.out), what).toBeLessThan(1e-5);
          expect(relMaxErr(gotLse.subarray(r * nH, (r + 1) * nH), want.lse), what).toBeLessThan(1e-5);
        }
        // Rows 3 and 5 as plain ranges ([10, 74) and [0, 650)): the same bits.
        const plainRanges = u32Buffer(ctx, 'plain', [10, 74, 0, 650]);
        const q2 = f32Buffer(ctx, 'q2', [...q.subarray(3 * nH * hd, 4 * nH * hd), ...q.subarray(5 * nH * hd, 6 * nH * hd)]);
        const [out2, lse2] = [emptyF32(ctx, 'out2', 2 * nH * hd), emptyF32(ctx, 'lse2', 2 * nH)];
        submitDispatches(ctx, await attentionDecode(ctx, { ...base, q: q2, ranges: plainRanges, n: 2, out: out2, lse: lse2 }));
        const plain = await readF32(ctx, out2, 2 * nH * hd);
        expect(Array.from(plain.subarray(0, nH * hd))).toEqual(Array.from(got.subarray(3 * nH * hd, 4 * nH * hd)));
        expect(Array.from(plain.subarray(nH * hd))).toEqual(Array.from(got.subarray(5 * nH * hd, 6 * nH * hd)));
        expect(Array.from(await readF32(ctx, lse2, 2 * nH))).toEqual([...gotLse.subarray(3 * nH, 4 * nH), ...gotLse.subarray(5 * nH, 6 * nH)]);
        await expect(attentionDecode(ctx, { ...base, out, lse, prefixes: u32Buffer(ctx, 'short', [0, 1]) })).rejects.toThrow(/'prefixes' \('short'\) holds 8 bytes, needs 48/);
        for (const b of [kb, vb, partials, qb, pb, rb, out, lse, plainRanges, q2, out2, lse2]) b.destroy();
      });
    }
  }

  it('an empty range gives zeros and lse -3e38, as attention() does', async () => {
    // Head shapes of variants compiled above (software GPUs compile slowly).
    for (const [hd, split] of [[64, false], [32, true]] as const) {
      const [nH, nKV] = [2, 2];
      const rng = new Rng(hd);
      const q = f32Buffer(ctx, 'q', rng.fill(2 * nH * hd));
      const k = f32Buffer(ctx, 'k', rng.fill(16 * nKV * hd));
      const v = f32Buffer(ctx, 'v', rng.fill(16 * nKV * hd));
      const ranges = u32Buffer(ctx, 'ranges', [5, 5, 0, 16]);
      const partials = emptyF32(ctx, 'partials', attentionDecodePartialsBytes(2, nH, hd, SPLIT.splits) / 4);
      const out = f32Buffer(ctx, 'out', new Float32Array(2 * nH * hd).fill(7));
      const lse = f32Buffer(ctx, 'lse', new Float32Array(2 * nH).fill(7));
      const args = { q, k, v, ranges, out, lse, n: 2, nHeads: nH, nKvHeads: nKV, headDim: hd };
      submitDispatches(ctx, await attentionDecode(ctx, split ? { ...args, ...SPLIT, partials } : args));
      const o = await readF32(ctx, out, 2 * nH * hd);
      const l = await readF32(ctx, lse, 2 * nH);
      expect([...o.subarray(0, nH * hd)].every((x) => x === 0)).toBe(true);
      expect([...l.subarray(0, nH)].every((x) => x === Math.fround(-3e38))).toBe(true);
      // The second row's range is not empty: its outputs were written.
      expect(o[nH * hd]).not.toBe(7);
      for (const b of [q, k, v, ranges, partials, out, lse]) b.destroy();
    }
  });

  it('chooses one workgroup per (row, KV head) up to 1024 keys, then 512-key slices', () => {
    expect(attentionDecodeSplits(1)).toBe(1);
    expect(attentionDecodeSplits(1024)).toBe(1);
    expect(attentionDecodeSplits(1025)).toBe(3);
    expect(attentionDecodeSplits(4096)).toBe(8);
    expect(attentionDecodeSplits(1 << 20)).toBe(32);
  });

  it('names the bad argument', async () => {
    const buf = emptyF32(ctx, 'buf', 1 << 16);
    const small = emptyF32(ctx, 'small', 4);
    const a = { q: buf, k: buf, v: buf, ranges: buf, out: buf, lse: buf, n: 1, nHeads: 14, nKvHeads: 2, headDim: 64 };
    await expect(attentionDecode(ctx, { ...a, n: 9 })).rejects.toThrow(/'n' is 9/);
    await expect(attentionDecode(ctx, { ...a, nKvHeads: 3 })).rejects.toThrow(/'nHeads' 14 is not a multiple of 'nKvHeads' 3/);
    await expect(attentionDecode(ctx, { ...a, headDim: 30 })).rejects.toThrow(/'headDim'/);
    await expect(attentionDecode(ctx, { ...a, splits: 4 })).rejects.toThrow(/'partials'/);
    await expect(attentionDecode(ctx, { ...a, splits: 4, partials: small })).rejects.toThrow(/'partials' \('small'\) holds 16 bytes/);
    await expect(attentionDecode(ctx, { ...a, out: small })).rejects.toThrow(/'out'/);
    await expect(attentionDecode(ctx, { ...a, splits: 2, partials: buf, keysPerSplit: 100 })).rejects.toThrow(/'keysPerSplit'/);
    await expect(attentionDecode(ctx, { ...a, nHeads: 256, nKvHeads: 1 })).rejects.toThrow(/workgroup memory/);
    buf.destroy();
    small.destroy();
  });
});

import { describe, expect, it } from 'vitest';
import { readF32 } from '../../gpu/buffers';
import { submitDispatches } from '../../gpu/pipelines';
import { Rng } from '../../util/rng';
import { gpuFor } from '../../../tests/support/gpu';
import { bitDiffCount, f32Buffer, relMaxErr, u32Buffer } from '../common/testing';
import { rope } from './rope';
import { ropeKvWrite } from './rope.kv';
import { ropeRef } from './rope.ref';

describe('ropeKvWrite (fused decode RoPE + KV-cache write)', () => {
  // [n, nH, nKV, hd, maxCtx, positions, cache rows (default: the positions)]: the last row of the third and
  // fourth cases lies past the cache and must not be written. The fourth is a batch of sequences, each in
  // its own region of the cache (region start + position), two of them at the same position.
  const cases: Array<[number, number, number, number, number, number[], number[]?]> = [
    [1, 14, 2, 64, 300, [257]],
    [3, 7, 1, 32, 64, [5, 6, 63]],
    [4, 2, 2, 128, 40000, [39996, 39997, 12, 40000]],
    [4, 7, 1, 64, 96, [3, 3, 17, 0], [3, 35, 81, 96]],
  ];
  for (const [n, nH, nKV, hd, maxCtx, pos, rowsIn] of cases) {
    const rows = rowsIn ?? pos;
    it(`n=${n} nH=${nH} nKV=${nKV} hd=${hd}, positions ${pos.join(', ')} at cache rows ${rows.join(', ')} of ${maxCtx}`, async () => {
      const ctx = await gpuFor('packed');
      const rng = new Rng(n * 31 + hd + nH);
      const theta = 1e6;
      const kvd = nKV * hd;
      const q = rng.fill(n * nH * hd);
      const k = rng.fill(n * kvd);
      const v = rng.fill(n * kvd);
      const kc0 = rng.fill(maxCtx * kvd);
      const vc0 = rng.fill(maxCtx * kvd);
      const qb = f32Buffer(ctx, 'q', q);
      const kb = f32Buffer(ctx, 'k', k);
      const vb = f32Buffer(ctx, 'v', v);
      const pb = u32Buffer(ctx, 'pos', pos);
      const rb = rowsIn ? u32Buffer(ctx, 'cacheRows', rows) : undefined;
      const kcb = f32Buffer(ctx, 'kCache', kc0);
      const vcb = f32Buffer(ctx, 'vCache', vc0);
      // The existing kernel on copies of q and k: the bits the fused kernel must reproduce.
      const qr = f32Buffer(ctx, 'q.rope', q);
      const kr = f32Buffer(ctx, 'k.rope', k);
      submitDispatches(ctx, [
        await ropeKvWrite(ctx, { q: qb, k: kb, v: vb, pos: pb, cacheRows: rb, kCache: kcb, vCache: vcb, n, nHeads: nH, nKvHeads: nKV, headDim: hd, theta, maxCtx }),
        await rope(ctx, { q: qr, k: kr, pos: pb, n, nHeads: nH, nKvHeads: nKV, headDim: hd, theta }),
      ]);
      const gq = await readF32(ctx, qb, n * nH * hd);
      const gk = await readF32(ctx, kb, n * kvd);
      const kc = await readF32(ctx, kcb, maxCtx * kvd);
      const vc = await readF32(ctx, vcb, maxCtx * kvd);
      const wantQ = await readF32(ctx, qr, n * nH * hd);
      const wantK = await readF32(ctx, kr, n * kvd);

      expect(bitDiffCount(gq, wantQ)).toBe(0);
      expect(bitDiffCount(gk, k)).toBe(0); // k itself is left as projected
      const expK = Float32Array.from(kc0);
      const expV = Float32Array.from(vc0);
      for (let r = 0; r < n; r++) {
        if (rows[r] >= maxCtx) continue;
        expK.set(wantK.subarray(r * kvd, (r + 1) * kvd), rows[r] * kvd);
        expV.set(v.subarray(r * kvd, (r + 1) * kvd), rows[r] * kvd);
      }
      // Written rows carry rope()'s bits and v's bits; every other row (and the out-of-range row) is untouched.
      expect(bitDiffCount(kc, expK)).toBe(0);
      expect(bitDiffCount(vc, expV)).toBe(0);

      // And against float64 (same f32 angle as HF, as in rope.gpu.test.ts): ~1 ulp sin/cos plus rounding.
      expect(relMaxErr(gq, ropeRef(q, pos, nH, hd, theta, true))).toBeLessThan(1e-5);
      const refK = ropeRef(k, pos, nKV, hd, theta, true);
      for (let r = 0; r < n; r++) {
        if (rows[r] >= maxCtx) continue;
        expect(relMaxErr(kc.subarray(rows[r] * kvd, (rows[r] + 1) * kvd), refK.subarray(r * kvd, (r + 1) * kvd))).toBeLessThan(1e-5);
      }
      for (const b of [qb, kb, vb, pb, kcb, vcb, qr, kr, rb]) b?.destroy();
    });
  }

  it('names the undersized buffer and the bad shape', async () => {
    const ctx = await gpuFor('packed');
    const small = f32Buffer(ctx, 'small', new Float32Array(4));
    const big = f32Buffer(ctx, 'big', new Float32Array(4096));
    const base = { q: big, k: big, v: big, pos: big, kCache: big, vCache: big, n: 1, nHeads: 2, nKvHeads: 1, headDim: 8, theta: 1e4, maxCtx: 16 };
    await expect(ropeKvWrite(ctx, { ...base, kCache: small })).rejects.toThrow(/'kCache'.*needs 512/);
    await expect(ropeKvWrite(ctx, { ...base, n: 2, cacheRows: u32Buffer(ctx, 'rows', [0]) })).rejects.toThrow(/'cacheRows'.*needs 8/);
    await expect(ropeKvWrite(ctx, { ...base, headDim: 7 })).rejects.toThrow(/headDim/);
    await expect(ropeKvWrite(ctx, { ...base, maxCtx: 0 })).rejects.toThrow(/'maxCtx'/);
    small.destroy();
    big.destroy();
  });
});

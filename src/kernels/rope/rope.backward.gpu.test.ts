import { describe, expect, it } from 'vitest';
import { readF32 } from '../../gpu/buffers';
import { submitDispatches } from '../../gpu/pipelines';
import { Rng } from '../../util/rng';
import { gpuFor } from '../../../tests/support/gpu';
import { f32Buffer, relMaxErr, u32Buffer } from '../common/testing';
import { centralDiff, dot } from '../finite-diff.ref';
import { ropeBackward } from './rope.backward';
import { ropeBackwardRef, ropeForwardRef } from './rope.backward.ref';

describe('RoPE backward (inverse rotation in place on dq and dk)', () => {
  for (const [n, nH, nKV, hd, maxPos] of [[1, 1, 1, 2, 1], [5, 4, 2, 8, 50], [40, 2, 1, 64, 4000]] as const) {
    it(`n=${n} nH=${nH} nKV=${nKV} hd=${hd} positions < ${maxPos}`, async () => {
      const ctx = await gpuFor('packed');
      const rng = new Rng(n * nH + hd);
      const theta = 1e6;
      const pos = Array.from({ length: n }, () => rng.int(maxPos));
      const dq = rng.fill(n * nH * hd), dk = rng.fill(n * nKV * hd);
      const wantQ = ropeBackwardRef(dq, pos, n, nH, hd, theta), wantK = ropeBackwardRef(dk, pos, n, nKV, hd, theta);
      if (n * nH * hd <= 200) {
        const x = rng.fill(n * nH * hd);
        expect(relMaxErr(wantQ, centralDiff((xx) => dot(ropeForwardRef(xx, pos, n, nH, hd, theta), dq), x))).toBeLessThan(1e-8);
      }
      const [qb, kb, p] = [f32Buffer(ctx, 'dq', dq), f32Buffer(ctx, 'dk', dk), u32Buffer(ctx, 'pos', pos)];
      submitDispatches(ctx, [await ropeBackward(ctx, { dq: qb, dk: kb, pos: p, n, nHeads: nH, nKvHeads: nKV, headDim: hd, theta })]);
      // f32 angles (as Hugging Face computes them) differ from float64 by ~pos * 2^-24 rad; sinCos itself
      // is good to a few ulp (the forward's, not WGSL's builtins). A wrong sign or angle is off by O(1).
      const tol = 1e-5 + maxPos * 1.2e-7;
      expect(relMaxErr(await readF32(ctx, qb, n * nH * hd), wantQ)).toBeLessThan(tol);
      expect(relMaxErr(await readF32(ctx, kb, n * nKV * hd), wantK)).toBeLessThan(tol);
      for (const b of [qb, kb, p]) b.destroy();
    });
  }
});

describe('RoPE backward is the adjoint of the forward kernel', () => {
  it('<rope(x), dy> = <x, ropeBackward(dy)> with both sides from the GPU (positions up to 30000)', async () => {
    const { rope } = await import('./rope');
    const ctx = await gpuFor('packed');
    const [n, nH, nKV, hd, theta] = [6, 2, 1, 64, 1e6];
    const rng = new Rng(5);
    const pos = [0, 1, 17, 999, 12345, 30000];
    const xq = rng.fill(n * nH * hd), xk = rng.fill(n * nKV * hd), dq = rng.fill(n * nH * hd), dk = rng.fill(n * nKV * hd);
    const bufs = [f32Buffer(ctx, 'xq', xq), f32Buffer(ctx, 'xk', xk), f32Buffer(ctx, 'dq', dq), f32Buffer(ctx, 'dk', dk), u32Buffer(ctx, 'pos', pos)];
    const dims = { n, nHeads: nH, nKvHeads: nKV, headDim: hd, theta };
    submitDispatches(ctx, [
      await rope(ctx, { q: bufs[0], k: bufs[1], pos: bufs[4], ...dims }),
      await ropeBackward(ctx, { dq: bufs[2], dk: bufs[3], pos: bufs[4], ...dims }),
    ]);
    const [rq, rk, bq, bk] = await Promise.all(bufs.slice(0, 4).map((b, i) => readF32(ctx, b, i % 2 === 0 ? n * nH * hd : n * nKV * hd)));
    // Per (row, head, pair) the two sides agree when both kernels use the same angle: check each row.
    for (let r = 0; r < n; r++) {
      const sl = (a: ArrayLike<number>, w: number) => Array.from(a).slice(r * w, (r + 1) * w);
      const lhs = dot(sl(rq, nH * hd), sl(dq, nH * hd)) + dot(sl(rk, nKV * hd), sl(dk, nKV * hd));
      const rhs = dot(sl(xq, nH * hd), sl(bq, nH * hd)) + dot(sl(xk, nKV * hd), sl(bk, nKV * hd));
      expect(Math.abs(lhs - rhs)).toBeLessThan(2e-3 * Math.sqrt(hd * (nH + nKV)));
    }
    for (const b of bufs) b.destroy();
  });
});

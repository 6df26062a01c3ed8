import { describe, expect, it } from 'vitest';
import { readF32 } from '../../gpu/buffers';
import { submitDispatches } from '../../gpu/pipelines';
import { Rng } from '../../util/rng';
import { gpuFor, weightPaths } from '../../../tests/support/gpu';
import { f32Buffer, relMaxErr, u32Buffer } from '../common/testing';
import { rope } from './rope';
import { ropeRef } from './rope.ref';
import { HALF_PI_C1, HALF_PI_C2, HALF_PI_C3 } from './rope.wgsl';

describe('rope kernel', async () => {
  it('Cody-Waite constants sum to pi/2', () => {
    expect(Math.abs(HALF_PI_C1 + HALF_PI_C2 + HALF_PI_C3 - Math.PI / 2)).toBeLessThan(3e-12);
    expect(Math.fround(HALF_PI_C2)).toBe(HALF_PI_C2);
  });
  const paths = await weightPaths();
  for (const path of paths) {
    for (const [N, nH, nKV, hd, maxPos] of [[1, 1, 1, 2, 3], [5, 4, 2, 8, 100], [7, 3, 1, 64, 32768], [3, 2, 2, 128, 131071]] as const) {
      it(`${path}: N=${N} nH=${nH} nKV=${nKV} hd=${hd} positions up to ${maxPos}`, async () => {
        const ctx = await gpuFor(path);
        const rng = new Rng(N * 13 + hd);
        const theta = 1e6;
        const q = rng.fill(N * nH * hd);
        const k = rng.fill(N * nKV * hd);
        const pos = Array.from({ length: N }, (_, i) => (i === N - 1 ? maxPos : rng.int(maxPos + 1)));
        const qb = f32Buffer(ctx, 'q', q);
        const kb = f32Buffer(ctx, 'k', k);
        const pb = u32Buffer(ctx, 'pos', pos);
        submitDispatches(ctx, [await rope(ctx, { q: qb, k: kb, pos: pb, n: N, nHeads: nH, nKvHeads: nKV, headDim: hd, theta })]);
        const gq = await readF32(ctx, qb, N * nH * hd);
        const gk = await readF32(ctx, kb, N * nKV * hd);
        // Against the same f32 angle (HF semantics): only the reduction, the polynomial sin/cos (~1 ulp)
        // and the rotation's f32 rounding remain, ~1e-6 of |x|; 1e-5 relative leaves margin.
        expect(relMaxErr(gq, ropeRef(q, pos, nH, hd, theta, true))).toBeLessThan(1e-5);
        expect(relMaxErr(gk, ropeRef(k, pos, nKV, hd, theta, true))).toBeLessThan(1e-5);
        // Against the exact float64 angle: the f32 angle rounding dominates, <= ulp(pos)/2 + pos*2^-24
        // rad, i.e. ~4e-3 rad at 32k and ~1.6e-2 at 131k; the output error is that times |x|.
        const angleErr = maxPos * 2 ** -23 + 1e-5;
        expect(relMaxErr(gq, ropeRef(q, pos, nH, hd, theta))).toBeLessThan(2 * angleErr);
        expect(relMaxErr(gk, ropeRef(k, pos, nKV, hd, theta))).toBeLessThan(2 * angleErr);
        for (const b of [qb, kb, pb]) b.destroy();
      });
    }
  }
});

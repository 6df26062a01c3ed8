import { describe, expect, it } from 'vitest';
import { readF32 } from '../../gpu/buffers';
import { submitDispatches } from '../../gpu/pipelines';
import { Rng } from '../../util/rng';
import { gpuFor, weightPaths } from '../../../tests/support/gpu';
import { emptyF32, f32Buffer, relMaxErr } from '../common/testing';
import { lora } from './lora';
import { loraRef } from './lora.ref';

describe('lora kernels', async () => {
  const paths = await weightPaths();
  for (const path of paths) {
    for (const [N, IN, OUT, R] of [[1, 1, 1, 1], [3, 17, 9, 2], [7, 130, 67, 8], [2, 64, 33, 64]] as const) {
      it(`${path}: N=${N} in=${IN} out=${OUT} r=${R} matches float64 (t and y)`, async () => {
        const ctx = await gpuFor(path);
        const rng = new Rng(N + IN * 3 + OUT * 5 + R * 7);
        const x = rng.fill(N * IN);
        const A = rng.fill(R * IN);
        const B = rng.fill(OUT * R);
        const y0 = rng.fill(N * OUT);
        const scale = 16 / R;
        const bufs = [f32Buffer(ctx, 'x', x), f32Buffer(ctx, 'A', A), f32Buffer(ctx, 'B', B), f32Buffer(ctx, 'y', y0), emptyF32(ctx, 't', N * R)];
        const [xb, Ab, Bb, y, t] = bufs;
        submitDispatches(ctx, await lora(ctx, { x: xb, A: Ab, B: Bb, t, y, n: N, inDim: IN, outDim: OUT, rank: R, scale }));
        const want = loraRef(x, A, B, y0, N, IN, OUT, R, scale);
        // f32 sums over <= 130 (then <= 64) O(1) products: relative error well under 1e-5.
        expect(relMaxErr(await readF32(ctx, t, N * R), want.t)).toBeLessThan(1e-5);
        expect(relMaxErr(await readF32(ctx, y, N * OUT), want.y)).toBeLessThan(1e-5);
        for (const b of bufs) b.destroy();
      });
    }
  }
});

import { describe, expect, it } from 'vitest';
import { readF32, createStorage, uploadStorage } from '../../gpu/buffers';
import { submitDispatches } from '../../gpu/pipelines';
import { Rng } from '../../util/rng';
import { fromF16Array, toF16Array } from '../../util/half';
import { gpuFor, weightPaths } from '../../../tests/support/gpu';
import { maxAbsDiff } from '../../../tests/support/compare';
import { matvec } from './matvec';
import { matvecRef } from './matvec.ref';

describe('matvec kernel (f16 weights, f32 accumulate)', async () => {
  const paths = await weightPaths();
  for (const path of paths) {
    for (const [rows, cols] of [[1, 1], [7, 33], [130, 257], [64, 1000]] as const) {
      it(`${path}: ${rows}x${cols} matches the float64 CPU reference`, async () => {
        const ctx = await gpuFor(path);
        expect(ctx.caps.f16).toBe(path === 'native');
        const rng = new Rng(rows * 1000 + cols);
        const Wbits = toF16Array(rng.fill(rows * cols));
        const x = rng.fill(cols);
        const W = uploadStorage(ctx, 'W', Wbits);
        const xb = uploadStorage(ctx, 'x', x);
        const y = createStorage(ctx, 'y', rows * 4);
        submitDispatches(ctx, [await matvec(ctx, { W, x: xb, y, rows, cols })]);
        const got = await readF32(ctx, y, rows);
        const want = matvecRef(fromF16Array(Wbits), x, rows, cols);
        expect(maxAbsDiff(got, want)).toBeLessThan(1e-4 * Math.sqrt(cols) + 1e-6);
        // The kernel must actually have written something nonzero (guards against an unbound output).
        expect(got.some((v) => v !== 0)).toBe(true);
        W.destroy();
        xb.destroy();
        y.destroy();
      });
    }
  }
});

import { describe, expect, it } from 'vitest';
import { readF32, createStorage } from '../../gpu/buffers';
import { submitDispatches } from '../../gpu/pipelines';
import { Rng } from '../../util/rng';
import { gpuFor } from '../../../tests/support/gpu';
import { f32Buffer, relMaxErr } from '../common/testing';
import { centralDiff, dot } from '../finite-diff.ref';
import { loraBackward } from './lora.backward';
import { loraBackwardRef, loraForwardRef, loraTRef } from './lora.backward.ref';

describe('LoRA backward (dA, dB, dx accumulate)', () => {
  // Shapes cover: a partial column tile (out, in not multiples of 8), fewer rows than row slices, n not a
  // multiple of the slices or of the dt row tile, several rank chunks (r = 24: two of 12),
  // and a trainer-like row count (520 rows over 16 ranks). Every buffer is f32 and no kernel reads halves, so
  // one context without shader-f16 (as on NVIDIA under Dawn) covers both weight paths.
  const shapes = [[1, 3, 2, 1], [6, 19, 23, 4], [70, 33, 130, 8], [37, 20, 9, 24], [520, 41, 24, 16]] as const;
  for (const [n, inDim, outDim, r] of shapes) {
    it(`n=${n} in=${inDim} out=${outDim} r=${r}`, async () => {
      const ctx = await gpuFor('packed');
      const rng = new Rng(n + inDim * 3);
      const s = 2;
      const x = rng.fill(n * inDim), A = rng.fill(r * inDim, 0.3), B = rng.fill(outDim * r, 0.3), dy = rng.fill(n * outDim);
      const want = loraBackwardRef(x, A, B, dy, n, inDim, outDim, r, s);
      if (n * inDim <= 200) {
        const L = (xx: Float64Array, AA: ArrayLike<number>, BB: ArrayLike<number>) => dot(loraForwardRef(xx, AA, BB, n, inDim, outDim, r, s), dy);
        expect(relMaxErr(want.dx, centralDiff((xx) => L(xx, A, B), x))).toBeLessThan(1e-7);
        expect(relMaxErr(want.dA, centralDiff((AA) => L(Float64Array.from(x), AA, B), A))).toBeLessThan(1e-7);
        expect(relMaxErr(want.dB, centralDiff((BB) => L(Float64Array.from(x), A, BB), B))).toBeLessThan(1e-7);
      }
      // Accumulation: start from nonzero dA, dB, dx and apply the backward twice (two micro-batches).
      const dA0 = rng.fill(r * inDim), dB0 = rng.fill(outDim * r), dx0 = rng.fill(n * inDim);
      const bufs = {
        x: f32Buffer(ctx, 'x', x), t: f32Buffer(ctx, 't', loraTRef(x, A, n, inDim, r)), A: f32Buffer(ctx, 'A', A), B: f32Buffer(ctx, 'B', B),
        dy: f32Buffer(ctx, 'dy', dy), dA: f32Buffer(ctx, 'dA', dA0), dB: f32Buffer(ctx, 'dB', dB0), dx: f32Buffer(ctx, 'dx', dx0),
        dt: createStorage(ctx, 'dt', n * r * 4),
      };
      const ds = await loraBackward(ctx, { ...bufs, n, inDim, outDim, rank: r, scale: s });
      submitDispatches(ctx, [...ds, ...ds]);
      const twice = (base: Float32Array, g: Float64Array) => Array.from(base, (v, i) => v + 2 * g[i]);
      expect(relMaxErr(await readF32(ctx, bufs.dA, r * inDim), twice(dA0, want.dA))).toBeLessThan(1e-5);
      expect(relMaxErr(await readF32(ctx, bufs.dB, outDim * r), twice(dB0, want.dB))).toBeLessThan(1e-5);
      expect(relMaxErr(await readF32(ctx, bufs.dx, n * inDim), twice(dx0, want.dx))).toBeLessThan(1e-5);
      expect(relMaxErr(await readF32(ctx, bufs.dt, n * r), want.dt)).toBeLessThan(1e-5);
      for (const b of Object.values(bufs)) b.destroy();
    });
  }
});

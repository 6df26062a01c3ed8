import { describe, expect, it } from 'vitest';
import { readF32 } from '../../gpu/buffers';
import { submitDispatches } from '../../gpu/pipelines';
import { Rng } from '../../util/rng';
import { gpuFor, weightPaths } from '../../../tests/support/gpu';
import { f32Buffer, relMaxErr } from '../common/testing';
import { residual } from './residual';
import { residualRef } from './residual.ref';

describe('residual kernel', async () => {
  const paths = await weightPaths();
  for (const path of paths) {
    for (const count of [1, 255, 257, 4099]) {
      it(`${path}: x += y over ${count} elements`, async () => {
        const ctx = await gpuFor(path);
        const rng = new Rng(count);
        const x = rng.fill(count);
        const y = rng.fill(count);
        const xb = f32Buffer(ctx, 'x', x);
        const yb = f32Buffer(ctx, 'y', y);
        submitDispatches(ctx, [await residual(ctx, { x: xb, y: yb, count })]);
        // One f32 add: half an ulp of the result.
        expect(relMaxErr(await readF32(ctx, xb, count), residualRef(x, y))).toBeLessThan(1e-7);
        xb.destroy();
        yb.destroy();
      });
    }
  }
});

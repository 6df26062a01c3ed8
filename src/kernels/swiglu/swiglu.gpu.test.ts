import { describe, expect, it } from 'vitest';
import { readF32 } from '../../gpu/buffers';
import { submitDispatches } from '../../gpu/pipelines';
import { Rng } from '../../util/rng';
import { gpuFor, weightPaths } from '../../../tests/support/gpu';
import { emptyF32, f32Buffer, relMaxErr } from '../common/testing';
import { swiglu } from './swiglu';
import { swigluRef } from './swiglu.ref';

describe('swiglu kernel', async () => {
  const paths = await weightPaths();
  for (const path of paths) {
    for (const [N, I] of [[1, 1], [3, 37], [5, 300]] as const) {
      it(`${path}: N=${N} I=${I} matches float64, incl. saturated gates`, async () => {
        const ctx = await gpuFor(path);
        const rng = new Rng(N * 3 + I);
        const gate = rng.fill(N * I, 4);
        gate[0] = -200; // exp overflow: must give -0 * up, not NaN
        if (gate.length > 1) gate[1] = 90;
        const up = rng.fill(N * I);
        const bufs = [f32Buffer(ctx, 'gate', gate), f32Buffer(ctx, 'up', up), emptyF32(ctx, 'act', N * I)];
        submitDispatches(ctx, [await swiglu(ctx, { gate: bufs[0], up: bufs[1], act: bufs[2], n: N, intermediate: I })]);
        // Elementwise: a few ulp from exp and the divide; 1e-6 relative to max |act| (>= 1).
        expect(relMaxErr(await readF32(ctx, bufs[2], N * I), swigluRef(gate, up))).toBeLessThan(1e-6);
        for (const b of bufs) b.destroy();
      });
    }
  }
});

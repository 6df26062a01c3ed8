import { describe, expect, it } from 'vitest';
import { createStorage, readF32 } from '../../gpu/buffers';
import { submitDispatches } from '../../gpu/pipelines';
import { Rng } from '../../util/rng';
import { gpuFor } from '../../../tests/support/gpu';
import { f32Buffer, relMaxErr } from '../common/testing';
import { centralDiff, dot } from '../finite-diff.ref';
import { swigluBackward } from './swiglu.backward';
import { swigluBackwardRef, swigluForwardRef } from './swiglu.backward.ref';

describe('SwiGLU backward', () => {
  for (const count of [1, 300, 5000]) {
    it(`${count} elements (including |gate| > 90)`, async () => {
      const ctx = await gpuFor('packed');
      const rng = new Rng(count);
      const gate = rng.fill(count, 3), up = rng.fill(count), dact = rng.fill(count);
      if (count > 2) {
        gate[0] = -95;
        gate[1] = 95;
      }
      const want = swigluBackwardRef(dact, gate, up);
      if (count <= 300) {
        expect(relMaxErr(want.dgate, centralDiff((g) => dot(swigluForwardRef(g, up), dact), gate))).toBeLessThan(1e-7);
        expect(relMaxErr(want.dup, centralDiff((u) => dot(swigluForwardRef(gate, u), dact), up))).toBeLessThan(1e-7);
      }
      const [db, gb, ub] = [f32Buffer(ctx, 'dact', dact), f32Buffer(ctx, 'gate', gate), f32Buffer(ctx, 'up', up)];
      const dgate = createStorage(ctx, 'dgate', count * 4), dup = createStorage(ctx, 'dup', count * 4);
      submitDispatches(ctx, [await swigluBackward(ctx, { dact: db, gate: gb, up: ub, dgate, dup, n: 1, intermediate: count })]);
      const gotG = await readF32(ctx, dgate, count), gotU = await readF32(ctx, dup, count);
      expect(gotG.every(Number.isFinite)).toBe(true);
      expect(relMaxErr(gotG, want.dgate)).toBeLessThan(1e-5);
      expect(relMaxErr(gotU, want.dup)).toBeLessThan(1e-5);
      for (const b of [db, gb, ub, dgate, dup]) b.destroy();
    });
  }
});

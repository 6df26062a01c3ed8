// A comlink call into a real module worker that computes on its own WebGPU device.
import { describe, expect, it } from 'vitest';
import { startGpuProbe } from '../../src/gpu/probe-client';
import { Rng } from '../../src/util/rng';
import { fromF16Array, toF16Array } from '../../src/util/half';
import { matvecRef } from '../../src/kernels/matvec/matvec.ref';
import { maxAbsDiff } from '../support/compare';

describe('module worker over comlink', () => {
  it('returns a value computed on the GPU inside the worker', async () => {
    const probe = startGpuProbe();
    try {
      const caps = await probe.api.capabilities();
      expect(caps.runtime).toBe('browser');
      const rng = new Rng(7);
      const rows = 17;
      const cols = 45;
      const Wbits = toF16Array(rng.fill(rows * cols));
      const x = rng.fill(cols);
      const got = await probe.api.matvec(Wbits, x, rows, cols);
      const want = matvecRef(fromF16Array(Wbits), x, rows, cols);
      expect(got.length).toBe(rows);
      expect(maxAbsDiff(got, want)).toBeLessThan(1e-3);
    } finally {
      probe.terminate();
    }
  });
});

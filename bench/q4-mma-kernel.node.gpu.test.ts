// The kernel comparison of the f16-check part, on this machine's adapter (no subgroup matrices here): the
// tiled kernel is checked against float64 and timed; the tensor-core column stays empty.
import { describe, expect, it } from 'vitest';
import { requestGpu } from '../src/gpu/device';
import { compareBackwardKernels, compareQ4Kernels } from './q4-mma-kernel';

describe('compareQ4Kernels', () => {
  it('checks and times the tiled kernel; without subgroup matrices no tensor-core run or speed-up', async () => {
    const ctx = await requestGpu();
    expect(ctx.caps.subgroupMatrix).toBeNull();
    const rows = await compareQ4Kernels(ctx, [{ name: 't', m: 70, k: 64, n: 80 }], { reps: 2, samples: 16 });
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({ shape: 't 70x64x80', mma: null, speedup: null, f16mma: [] });
    expect(rows[0].tiled.label).toMatch(/^q4_matmul_tiled/);
    expect(rows[0].tiled.check).toMatchObject({ entries: 16, nonFinite: 0 });
    expect(rows[0].tiled.check.maxErrorOverAbsSum).toBeLessThan(1e-5);
    expect(rows[0].tiled.ms).toBeGreaterThan(0);
    ctx.device.destroy();
  });

  it('checks and times the tiled input gradient (split-K with its scratch); no tensor-core run here', async () => {
    const ctx = await requestGpu();
    const rows = await compareBackwardKernels(ctx, [{ name: 'g dx', m: 40, k: 96, n: 64 }], { reps: 2, samples: 16 });
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({ shape: 'g dx 40x96x64', mma: null, speedup: null });
    expect(rows[0].tiled.label).toMatch(/^q4_matmul_backward/);
    expect(rows[0].tiled.check).toMatchObject({ entries: 16, nonFinite: 0 });
    expect(rows[0].tiled.check.maxErrorOverAbsSum).toBeLessThan(1e-5);
    ctx.device.destroy();
  });
});

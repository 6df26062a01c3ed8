// The diagnostic emulation of subgroup matrices (GpuRequestOptions.emulateSubgroupMatrix): a device without the
// feature claims it, marked emulated, only where it has shader-f16 (lavapipe here; not SwiftShader).
import { describe, expect, it } from 'vitest';
import { requestGpu } from './device';

describe('emulated subgroup matrices (diagnostics)', () => {
  it('are claimed, marked emulated, only with shader-f16 and never asked of the adapter', async () => {
    const shape = { M: 16, N: 16, K: 16, subgroupSize: 32 };
    const ctx = await requestGpu({ emulateSubgroupMatrix: shape });
    expect(ctx.caps.features).not.toContain('chromium-experimental-subgroup-matrix');
    expect(ctx.caps.subgroupMatrix).toEqual(ctx.caps.f16 ? { ...shape, emulated: true } : null);
    ctx.device.destroy();
    const plain = await requestGpu();
    expect(plain.caps.subgroupMatrix).toBeNull();
    plain.device.destroy();
  });
});

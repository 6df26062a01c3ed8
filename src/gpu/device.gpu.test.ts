// Proves each GPU tier runs on the adapter it claims: Node/Dawn on lavapipe must offer shader-f16 and
// subgroups (the native f16 path); Chromium's SwiftShader must not offer shader-f16 (the packed path).
import { describe, expect, it } from 'vitest';
import { formatCapabilities, requestGpu } from './device';

describe('GPU device', () => {
  it('reports capabilities and the features each tier must have', async () => {
    const ctx = await requestGpu();
    const caps = ctx.caps;
    console.info(`[gpu tier] ${formatCapabilities(caps)}`);
    expect(caps.limits.maxStorageBufferBindingSize).toBeGreaterThanOrEqual(128 * 2 ** 20);
    const desc = `${caps.vendor} ${caps.architecture} ${caps.description}`.toLowerCase();
    if (caps.runtime === 'node' && /llvmpipe|lavapipe/.test(desc)) {
      expect(caps.f16).toBe(true);
      expect(caps.subgroups).toBe(true);
    }
    if (caps.runtime === 'browser' && /swiftshader/.test(desc)) {
      expect(caps.f16).toBe(false);
    }
    // In CI each tier must be on its software adapter, so a silent switch of adapter fails the run.
    if (import.meta.env?.VITE_EXPECT_ADAPTER) {
      expect(desc).toContain(String(import.meta.env.VITE_EXPECT_ADAPTER).toLowerCase());
    }
    ctx.device.destroy();
  });

  it('asks for f16 only when allowed', async () => {
    const ctx = await requestGpu({ f16: false });
    expect(ctx.caps.f16).toBe(false);
    expect(ctx.device.features.has('shader-f16')).toBe(false);
    ctx.device.destroy();
  });

  it('never gets subgroup matrices on the software adapters, even when asked for', async () => {
    // Neither lavapipe nor SwiftShader has cooperative matrices, so the tensor-core kernel never runs in CI.
    const ctx = await requestGpu({ subgroupMatrix: true });
    if (ctx.caps.isSoftware) {
      expect(ctx.caps.subgroupMatrix).toBeNull();
      expect(ctx.caps.features).not.toContain('chromium-experimental-subgroup-matrix');
    }
    const off = await requestGpu({ subgroupMatrix: false });
    expect(off.caps.subgroupMatrix).toBeNull();
    for (const c of [ctx, off]) c.device.destroy();
  });

  it('signals a lost device', async () => {
    const ctx = await requestGpu();
    expect(ctx.isLost()).toBe(false);
    ctx.device.destroy();
    const info = await ctx.lost;
    expect(info.reason).toBe('destroyed');
    expect(ctx.isLost()).toBe(true);
  });
});

// Failure modes of the runtime that must surface as clear errors rather than hangs or garbage: a lost
// device, an allocation over the adapter's limits, and bad arguments.
import { describe, expect, it } from 'vitest';
import { GpuDeviceLostError, requestGpu } from '../gpu/device';
import { GpuOutOfMemoryError } from '../gpu/buffers';
import { gpuFor } from '../../tests/support/gpu';
import { randomQwen2, toQwen2Config, toWeightSource } from '../../tests/support/random-qwen2';
import { Qwen2Runtime } from './runtime';

describe('runtime errors', () => {
  it('a lost device fails later calls with GpuDeviceLostError', async () => {
    // Its own device: destroying the shared one would break the other tests in this file.
    const ctx = await requestGpu();
    const { config, weights } = randomQwen2(1);
    const rt = await Qwen2Runtime.create(ctx, toQwen2Config(config), toWeightSource(config, weights), { maxContext: 32 });
    expect((await rt.score([[1, 2, 3]]))[0].length).toBe(2);
    ctx.device.destroy();
    await ctx.lost;
    await expect(rt.score([[1, 2, 3]])).rejects.toThrow(GpuDeviceLostError);
    await expect(rt.generate([1, 2], { maxNewTokens: 2 })).rejects.toThrow(/device was lost.*Reload the model/);
  });

  it('a device lost while steps are in flight ahead of the tokens read back fails the generate, no hang', async () => {
    const ctx = await requestGpu();
    const { config, weights } = randomQwen2(4);
    const rt = await Qwen2Runtime.create(ctx, toQwen2Config(config), toWeightSource(config, weights), { maxContext: 64 });
    let seen = 0;
    const run = rt.generate([1, 2, 3], {
      maxNewTokens: 30,
      temperature: 1,
      seed: 1,
      // Lost after the second token: later steps are submitted, their read-backs pending.
      onToken: () => void (++seen === 2 && ctx.device.destroy()),
    });
    await expect(run).rejects.toThrow(GpuDeviceLostError);
    expect(seen).toBe(2);
    await expect(rt.generate([1, 2], { maxNewTokens: 2 })).rejects.toThrow(/device was lost/);
  });

  it('a KV cache beyond the adapter limits is a GpuOutOfMemoryError naming the buffer', async () => {
    const ctx = await gpuFor('packed');
    const { config, weights } = randomQwen2(2);
    // 2^30 positions x 2 KV heads x 8 dims x 4 bytes = 64 GiB for one layer's keys.
    const rt = await Qwen2Runtime.create(ctx, toQwen2Config(config), toWeightSource(config, weights), { maxContext: 2 ** 30 });
    try {
      const err = await rt.generate([1, 2], { maxNewTokens: 2 }).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(GpuOutOfMemoryError);
      expect((err as Error).message).toMatch(/kv\.k\.0/);
      // Scoring does not need the cache and still works.
      expect((await rt.score([[1, 2, 3]]))[0].length).toBe(2);
    } finally {
      rt.destroy();
    }
  });

  it('rejects bad generation arguments with the setting named', async () => {
    const ctx = await gpuFor('packed');
    const { config, weights } = randomQwen2(3);
    const rt = await Qwen2Runtime.create(ctx, toQwen2Config(config), toWeightSource(config, weights), { maxContext: 16 });
    try {
      await expect(rt.generate([1, 2], { maxNewTokens: 20 })).rejects.toThrow(/exceeds the context limit 16/);
      await expect(rt.generate([1, 2], { temperature: -1 })).rejects.toThrow(/temperature/);
      await expect(rt.generate([1, 2], { topP: 0 })).rejects.toThrow(/topP/);
      await expect(rt.generate([], {})).rejects.toThrow(/prompt is empty/);
      await expect(rt.logitsLast([1, 50])).rejects.toThrow(/id 50.*\[0, 50\)/);
      expect(() => rt.setActiveAdapter('x')).toThrow(/no adapter 'x'/);
    } finally {
      rt.destroy();
    }
  });
});

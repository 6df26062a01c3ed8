import { describe, expect, it } from 'vitest';
import { GpuDeviceLostError, requestGpu } from './device';
import { createStorage, createStorageChecked, GpuOutOfMemoryError, readBuffer, readF32, uploadStorage, writeBuffer } from './buffers';

describe('GPU buffers', () => {
  it('rejects a buffer over maxBufferSize by name and leaves no error scope behind', async () => {
    const ctx = await requestGpu();
    const tooBig = ctx.caps.limits.maxBufferSize + 4;
    await expect(createStorageChecked(ctx, 'huge-activations', tooBig)).rejects.toThrow(GpuOutOfMemoryError);
    await expect(createStorageChecked(ctx, 'huge-activations', tooBig)).rejects.toThrow(/huge-activations/);
    // With nothing pushed, popping must fail: a dangling scope from the rejected calls would be popped instead.
    await expect(ctx.device.popErrorScope()).rejects.toThrow();
    ctx.device.destroy();
  });

  it('round-trips data, padding odd byte lengths', async () => {
    const ctx = await requestGpu();
    const buf = uploadStorage(ctx, 'roundtrip', new Float32Array([1.5, -2, 3.25]));
    expect([...(await readF32(ctx, buf, 3))]).toEqual([1.5, -2, 3.25]);
    writeBuffer(ctx, buf, new Uint16Array([0x3c00, 0x4000, 0x4200]));
    const words = new Uint16Array((await readF32(ctx, buf, 2)).buffer);
    expect([...words.slice(0, 3)]).toEqual([0x3c00, 0x4000, 0x4200]);
    ctx.device.destroy();
  });
});

describe('readBuffer on a lost device', () => {
  it('rejects with a GpuDeviceLostError naming the buffer, not the map\'s abort', async () => {
    const ctx = await requestGpu();
    const buf = createStorage(ctx, 'doomed', 16);
    // Lose the device while the read's map is pending.
    const read = readBuffer(ctx, buf, 16);
    ctx.device.destroy();
    const err = await read.then(() => null, (e: unknown) => e);
    expect(err).toBeInstanceOf(GpuDeviceLostError);
    expect((err as Error).message).toMatch(/lost while reading 'doomed' back/);
    await ctx.lost;
    await expect(readBuffer(ctx, buf, 16)).rejects.toThrow(GpuDeviceLostError);
  });
});

import { describe, expect, it } from 'vitest';
import { requestGpu } from './device';
import { createStorageChecked, GpuOutOfMemoryError, readF32, uploadStorage, writeBuffer } from './buffers';

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

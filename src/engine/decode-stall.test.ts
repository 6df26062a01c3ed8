import { afterEach, describe, expect, it, vi } from 'vitest';
import { errorCategory } from '../errors';
import { checkStallMs, DEFAULT_STALL_MS, GpuStallError, unlessStalled } from './decode-stall';

describe('unlessStalled: a GPU read the decode waits on settles or fails', () => {
  afterEach(() => vi.useRealTimers());

  it('a read still pending after the bound fails with a GpuStallError naming it; one that settles passes and clears its timer', async () => {
    vi.useFakeTimers();
    const never = unlessStalled(new Promise<number>(() => undefined), 1000, () => 'the draw log of step 3 (rows 0, 2)', 'decoding a batch');
    const caught = never.catch((e: unknown) => e);
    await vi.advanceTimersByTimeAsync(999);
    expect(vi.getTimerCount()).toBe(1);
    await vi.advanceTimersByTimeAsync(1);
    const e = await caught;
    expect(e).toBeInstanceOf(GpuStallError);
    expect(errorCategory(e)).toBe('gpu-stalled');
    expect((e as GpuStallError).waitedFor).toBe('the draw log of step 3 (rows 0, 2)');
    expect((e as Error).message).toMatch(/did not return the draw log of step 3 \(rows 0, 2\) within 1 s while decoding a batch/);

    await expect(unlessStalled(Promise.resolve(7), 1000, () => 'x', 'decoding')).resolves.toBe(7);
    await expect(unlessStalled(Promise.reject(new Error('map failed')), 1000, () => 'x', 'decoding')).rejects.toThrow('map failed');
    expect(vi.getTimerCount(), 'settled reads leave no timer armed').toBe(0);
  });

  it('Infinity means no bound; the option must be a positive number', () => {
    vi.useFakeTimers();
    void unlessStalled(new Promise(() => undefined), Infinity, () => 'x', 'decoding');
    expect(vi.getTimerCount()).toBe(0);
    expect(checkStallMs(undefined)).toBe(DEFAULT_STALL_MS);
    expect(checkStallMs(Infinity)).toBe(Infinity);
    for (const bad of [0, -5, NaN]) expect(() => checkStallMs(bad)).toThrow(/stallTimeoutMs must be a positive number/);
  });
});

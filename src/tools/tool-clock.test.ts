import { afterEach, describe, expect, it, vi } from 'vitest';
import { startToolClock } from './tool-clock';

describe('startToolClock', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it('fires at the limit from the call, or from started() after a queued() pause', async () => {
    vi.useFakeTimers();
    const fired: string[] = [];
    startToolClock(100, () => fired.push('plain'));
    const q = startToolClock(100, () => fired.push('queued'));
    q.queued();
    await vi.advanceTimersByTimeAsync(500);
    expect(fired).toEqual(['plain']);
    q.started();
    await vi.advanceTimersByTimeAsync(99);
    expect(fired).toEqual(['plain']);
    await vi.advanceTimersByTimeAsync(1);
    expect(fired).toEqual(['plain', 'queued']);
  });

  it('ignores queued() once started, a second started(), and anything after stop()', async () => {
    vi.useFakeTimers();
    const fired: string[] = [];
    const a = startToolClock(100, () => fired.push('a'));
    a.started();
    await vi.advanceTimersByTimeAsync(60);
    a.queued();
    a.started();
    await vi.advanceTimersByTimeAsync(40);
    expect(fired).toEqual(['a']);
    const b = startToolClock(100, () => fired.push('b'));
    b.queued();
    b.stop();
    b.started();
    expect(vi.getTimerCount()).toBe(0);
  });

  it('has no limit for a limit that is not a positive finite number', () => {
    vi.useFakeTimers();
    for (const ms of [0, -1, Number.POSITIVE_INFINITY, Number.NaN]) startToolClock(ms, () => undefined).started();
    expect(vi.getTimerCount()).toBe(0);
  });
});

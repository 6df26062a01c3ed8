import { afterEach, describe, expect, it, vi } from 'vitest';
import { QUEUE_LIMIT_PER_TIME_LIMIT, startToolClock } from './tool-clock';

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

  it('limits the wait of a call that is queued and never started, separately and 8 x longer by default', async () => {
    vi.useFakeTimers();
    const fired: string[] = [];
    const note = (name: string) => (kind: string, ms: number) => void fired.push(`${name} ${kind} ${ms}`);
    expect(QUEUE_LIMIT_PER_TIME_LIMIT).toBe(8);
    const stuck = startToolClock(100, note('stuck'));
    expect(stuck.queueLimitMs).toBe(800);
    await vi.advanceTimersByTimeAsync(30);
    stuck.queued();
    // The run limit (100 ms from the call) no longer applies; the queue limit counts from queued().
    await vi.advanceTimersByTimeAsync(799);
    expect(fired).toEqual([]);
    stuck.queued(); // a second notice does not restart the queue limit
    await vi.advanceTimersByTimeAsync(1);
    expect(fired).toEqual(['stuck queue 800']);
    expect(vi.getTimerCount()).toBe(0);

    // Started just before its queue limit: the full run limit counts from then, the queue limit no more.
    const late = startToolClock(100, note('late'));
    late.queued();
    await vi.advanceTimersByTimeAsync(799);
    late.started();
    await vi.advanceTimersByTimeAsync(99);
    expect(fired).toEqual(['stuck queue 800']);
    await vi.advanceTimersByTimeAsync(1);
    expect(fired).toEqual(['stuck queue 800', 'late run 100']);
  });

  it('takes a queue limit of its own, and has none when either limit is not a positive finite number', async () => {
    vi.useFakeTimers();
    const fired: string[] = [];
    const given = startToolClock(100, (kind, ms) => void fired.push(`${kind} ${ms}`), 250);
    given.queued();
    await vi.advanceTimersByTimeAsync(250);
    expect(fired).toEqual(['queue 250']);
    for (const [run, queue] of [
      [100, Number.POSITIVE_INFINITY],
      [100, 0],
      [Number.POSITIVE_INFINITY, 500],
      [0, undefined],
      [2 ** 31, undefined],
      [2 ** 28, undefined], // 8 x 2^28 ms is more than a timer holds
    ] as Array<[number, number | undefined]>) {
      const c = startToolClock(run, () => fired.push('unexpected'), queue);
      expect(c.queueLimitMs).toBe(Number.POSITIVE_INFINITY);
      c.queued();
    }
    expect(vi.getTimerCount()).toBe(0);
    // A run limit over 2^31 - 1 ms is none either (a timer would fire at once); 2^31 - 1 ms is kept.
    startToolClock(2 ** 31, () => fired.push('unexpected'));
    expect(vi.getTimerCount()).toBe(0);
    const longest = startToolClock(2 ** 31 - 1, () => fired.push('longest'));
    expect(vi.getTimerCount()).toBe(1);
    longest.stop();
    expect(vi.getTimerCount()).toBe(0);
    await vi.advanceTimersByTimeAsync(10_000);
    expect(fired).toEqual(['queue 250']);
  });
});

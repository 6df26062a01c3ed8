import { describe, expect, it, vi } from 'vitest';
import { anySignal } from './abort';

describe('anySignal fallback', () => {
  it('aborts with the reason of whichever input aborts first, also without AbortSignal.any', () => {
    const native = AbortSignal.any;
    try {
      (AbortSignal as unknown as { any?: unknown }).any = undefined;
      const a = new AbortController();
      const b = new AbortController();
      const s = anySignal([a.signal, b.signal]);
      expect(s.aborted).toBe(false);
      b.abort('second');
      a.abort('first');
      expect(s.aborted).toBe(true);
      expect(s.reason).toBe('second');
      const pre = new AbortController();
      pre.abort('already');
      expect(anySignal([a.signal, pre.signal]).reason).toBe('first');
    } finally {
      (AbortSignal as unknown as { any: typeof native }).any = native;
    }
  });
});

/** An engine whose calls never settle and ignore their signal: a dead worker's client, as seen from the loop. */

import { describe, expect, it } from 'vitest';
import { InFlight } from './in-flight';

function deferred<T = void>() {
  let resolve!: (v: T) => void;
  let reject!: (e: unknown) => void;
  const promise = new Promise<T>((res, rej) => ((resolve = res), (reject = rej)));
  return { promise, resolve, reject };
}

describe('InFlight', () => {
  it('holds the tracked work until it settles, and the promise it returns settles as the work does', async () => {
    const f = new InFlight<number>();
    expect(f.current).toBeNull();
    const d = deferred<number>();
    const t = f.track(d.promise);
    expect(f.current).toBe(t);
    d.resolve(7);
    expect(await t).toBe(7);
    expect(f.current).toBeNull();

    const e = deferred<number>();
    const failing = f.track(e.promise);
    e.reject(new Error('boom'));
    await expect(failing).rejects.toThrow('boom');
    expect(f.current).toBeNull();
  });

  it('does not forget newer work when older work settles', async () => {
    const f = new InFlight();
    const older = deferred();
    const newer = deferred();
    const a = f.track(older.promise);
    const b = f.track(newer.promise);
    older.resolve();
    await a;
    expect(f.current).toBe(b);
    newer.resolve();
    await b;
    expect(f.current).toBeNull();
  });

  it('idle() waits for work tracked while it waits, and ignores failures', async () => {
    const f = new InFlight();
    const first = deferred();
    const second = deferred();
    f.track(first.promise).catch(() => undefined);
    let idle = false;
    const waiting = f.idle().then(() => (idle = true));
    // Work that starts as the first ends (a resume right after a pause) is waited for too.
    void first.promise.catch(() => f.track(second.promise));
    first.reject(new Error('stopped'));
    await new Promise((r) => setTimeout(r, 0));
    expect(idle).toBe(false);
    second.resolve();
    await waiting;
    expect(idle).toBe(true);
    expect(f.current).toBeNull();
  });
});

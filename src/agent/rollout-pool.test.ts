// runRollouts with tasks the test finishes by hand, in an order unlike the start order.
import { describe, expect, it } from 'vitest';
import { checkConcurrency, runRollouts } from './rollout-pool';

/** Tasks that wait until the test settles them; records which started, and how many ran at once. */
function manualTasks() {
  const started: number[] = [];
  const settle = new Map<number, { ok: (v: string) => void; fail: (e: Error) => void }>();
  let running = 0;
  let maxRunning = 0;
  const run = (i: number) =>
    new Promise<string>((ok, fail) => {
      started.push(i);
      maxRunning = Math.max(maxRunning, ++running);
      settle.set(i, {
        ok: (v) => {
          running--;
          ok(v);
        },
        fail: (e) => {
          running--;
          fail(e);
        },
      });
    });
  const tick = () => new Promise((r) => setTimeout(r, 0));
  return { started, settle, run, tick, max: () => maxRunning };
}

describe('runRollouts', () => {
  it('keeps at most `concurrency` running, starts them in order and returns outcomes by index', async () => {
    const t = manualTasks();
    const all = runRollouts(5, 2, t.run);
    await t.tick();
    expect(t.started).toEqual([0, 1]);
    t.settle.get(1)!.ok('one');
    await t.tick();
    expect(t.started).toEqual([0, 1, 2]);
    t.settle.get(2)!.ok('two');
    await t.tick();
    t.settle.get(3)!.ok('three');
    await t.tick();
    t.settle.get(0)!.ok('zero');
    await t.tick();
    t.settle.get(4)!.ok('four');
    expect(await all).toEqual(['zero', 'one', 'two', 'three', 'four'].map((value) => ({ ok: true, value })));
    expect(t.max()).toBe(2);
  });

  it('starts nothing after a failure or an abort, and waits for the running ones', async () => {
    const t = manualTasks();
    const all = runRollouts(5, 3, t.run);
    await t.tick();
    const boom = new Error('boom');
    t.settle.get(1)!.fail(boom);
    await t.tick();
    expect(t.started).toEqual([0, 1, 2]);
    let done = false;
    void all.then(() => (done = true));
    await t.tick();
    expect(done).toBe(false); // rollouts 0 and 2 are still running
    t.settle.get(2)!.ok('two');
    t.settle.get(0)!.ok('zero');
    expect(await all).toEqual([{ ok: true, value: 'zero' }, { ok: false, error: boom }, { ok: true, value: 'two' }]);

    const a = manualTasks();
    const ctl = new AbortController();
    const aborted = runRollouts(4, 2, a.run, ctl.signal);
    await a.tick();
    ctl.abort();
    a.settle.get(0)!.ok('zero');
    a.settle.get(1)!.ok('one');
    expect(await aborted).toEqual([{ ok: true, value: 'zero' }, { ok: true, value: 'one' }]);
    expect(a.started).toEqual([0, 1]);
  });

  it('names the setting of a concurrency that is not a positive integer', async () => {
    expect(checkConcurrency(3, 'x')).toBe(3);
    expect(() => checkConcurrency(0, 'budget.lanes')).toThrow('budget.lanes must be a positive integer, got 0');
    await expect(runRollouts(2, 1.5, async () => 1)).rejects.toThrow('rollout concurrency must be a positive integer, got 1.5');
  });

  it('tells how many rollouts run as the last ones finish, and 1 at the end', async () => {
    const t = manualTasks();
    const seen: number[] = [];
    const all = runRollouts(4, 3, t.run, undefined, (n) => void seen.push(n));
    await t.tick();
    expect(seen).toEqual([3]);
    // Rollout 3 takes the lane rollout 0 leaves: still 3 running.
    t.settle.get(0)!.ok('a');
    await t.tick();
    expect(seen).toEqual([3]);
    t.settle.get(2)!.ok('c');
    await t.tick();
    expect(seen).toEqual([3, 2]);
    t.settle.get(3)!.ok('d');
    await t.tick();
    t.settle.get(1)!.ok('b');
    await all;
    expect(seen).toEqual([3, 2, 1, 1]);
  });
});

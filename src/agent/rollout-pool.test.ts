// runRollouts with tasks the test finishes by hand, in an order unlike the start order.
import { describe, expect, it } from 'vitest';
import { CHAT_DEFAULTS } from './loop';
import type { ChatEngine } from '../engine/chat-engine';
import { chatStream } from '../engine/chat-stream';
import { checkConcurrency, concurrentRolloutConfig, runPlannerRollouts, runRollouts } from './rollout-pool';

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

/** A planner engine that only records what it is told about concurrent calls. */
function announcedPlanner(): ChatEngine & { announced: number[] } {
  const announced: number[] = [];
  return {
    id: 'planner',
    announced,
    stream: () => chatStream(() => Promise.reject(new Error('not called in this test'))),
    expectConcurrentCalls: (n) => void announced.push(n),
  };
}

describe('runPlannerRollouts', () => {
  it('tells the planner how many running rollouts may still call it, as they finish planning, finish, and start', async () => {
    const t = manualTasks();
    const done = new Map<number, () => void>();
    const planner = announcedPlanner();
    const all = runPlannerRollouts(5, 3, planner, (i, presence) => (done.set(i, presence.done), t.run(i)));
    await t.tick();
    expect(t.started).toEqual([0, 1, 2]);
    expect(planner.announced).toEqual([3]);
    // Rollout 1 is only answering now: two may still call the planner. A second notice changes nothing.
    done.get(1)!();
    done.get(1)!();
    expect(planner.announced).toEqual([3, 2]);
    // It ends; rollout 3 takes its lane and will plan: three again.
    t.settle.get(1)!.ok('b');
    await t.tick();
    expect(t.started).toEqual([0, 1, 2, 3]);
    expect(planner.announced).toEqual([3, 2, 3]);
    // Rollout 0 ends without saying it was done (an error, say): rollout 4 takes its lane, still three.
    t.settle.get(0)!.ok('a');
    await t.tick();
    expect(t.started).toEqual([0, 1, 2, 3, 4]);
    expect(planner.announced).toEqual([3, 2, 3]);
    done.get(2)!();
    done.get(3)!();
    expect(planner.announced).toEqual([3, 2, 3, 2, 1]);
    // No rollout left to start: the count follows the running ones, never below 1.
    done.get(4)!();
    t.settle.get(3)!.ok('d');
    await t.tick();
    t.settle.get(4)!.ok('e');
    await t.tick();
    expect(planner.announced).toEqual([3, 2, 3, 2, 1]);
    t.settle.get(2)!.ok('c');
    expect((await all).map((o) => (o.ok ? o.value : null))).toEqual(['a', 'b', 'c', 'd', 'e']);
    expect(planner.announced).toEqual([3, 2, 3, 2, 1]);
  });

  it('tells the planner 1 at the end when rollouts stop without saying they were done', async () => {
    const t = manualTasks();
    const planner = announcedPlanner();
    const all = runPlannerRollouts(2, 2, planner, (i) => t.run(i));
    await t.tick();
    t.settle.get(0)!.fail(new Error('store full'));
    await t.tick();
    expect(planner.announced).toEqual([2, 1]);
    t.settle.get(1)!.ok('b');
    await all;
    expect(planner.announced).toEqual([2, 1]);

    // Running them one at a time tells it nothing: there is nothing to wait for.
    const one = announcedPlanner();
    const s = manualTasks();
    const seq = runPlannerRollouts(2, 1, one, (i, presence) => (presence.done(), presence.waiting(true), s.run(i)));
    await s.tick();
    s.settle.get(0)!.ok('a');
    await s.tick();
    s.settle.get(1)!.ok('b');
    await seq;
    expect(one.announced).toEqual([]);
  });
});

describe('runPlannerRollouts: rollouts waiting for another one’s call', () => {
  it('does not count them while they wait, so the call they wait for is not held for them', async () => {
    const t = manualTasks();
    const presence = new Map<number, import('./rollout-pool').PlannerPresence>();
    const planner = announcedPlanner();
    const all = runPlannerRollouts(3, 3, planner, (i, p) => (presence.set(i, p), t.run(i)));
    await t.tick();
    expect(planner.announced).toEqual([3]);
    // Rollouts 1 and 2 wait for rollout 0's shared analysis: only rollout 0 may call now.
    presence.get(1)!.waiting(true);
    presence.get(2)!.waiting(true);
    presence.get(2)!.waiting(true);
    expect(planner.announced).toEqual([3, 2, 1]);
    // The shared call returns: all three plan again.
    presence.get(1)!.waiting(false);
    presence.get(2)!.waiting(false);
    expect(planner.announced).toEqual([3, 2, 1, 2, 3]);
    // A rollout done while waiting counts once, as done.
    presence.get(2)!.waiting(true);
    presence.get(2)!.done();
    expect(planner.announced).toEqual([3, 2, 1, 2, 3, 2]);
    t.settle.get(0)!.ok('a');
    t.settle.get(1)!.ok('b');
    t.settle.get(2)!.ok('c');
    await all;
    expect(planner.announced.at(-1)).toBe(1);
  });
});

describe('concurrentRolloutConfig', () => {
  it('multiplies the time budget by the rollouts that run at once, and leaves everything else', () => {
    const config = { maxTurns: 3, timeBudgetMs: 1000, generation: { planner: { seed: 7 } } };
    expect(concurrentRolloutConfig(config, 8, 8)).toEqual({ maxTurns: 3, timeBudgetMs: 8000, generation: { planner: { seed: 7 } } });
    expect(config.timeBudgetMs).toBe(1000);
    // A group of 3 never has more than 3 running, whatever the concurrency allows.
    expect(concurrentRolloutConfig(config, 3, 8)?.timeBudgetMs).toBe(3000);
    expect(concurrentRolloutConfig(config, 8, 2)?.timeBudgetMs).toBe(2000);
    // Without a budget of its own, the default one: 10 minutes, 40 for 4 at once.
    expect(CHAT_DEFAULTS.timeBudgetMs).toBe(600_000);
    expect(concurrentRolloutConfig(undefined, 4, 4)).toEqual({ timeBudgetMs: 2_400_000 });
    expect(concurrentRolloutConfig({ maxTurns: 2 }, 4, 4)).toEqual({ maxTurns: 2, timeBudgetMs: 2_400_000 });
  });

  it('gives the config as it is when rollouts run one at a time, or when its budget is bad (for resolveConfig to name)', () => {
    const config = { timeBudgetMs: 1000 };
    expect(concurrentRolloutConfig(config, 8, 1)).toBe(config);
    expect(concurrentRolloutConfig(config, 1, 8)).toBe(config);
    expect(concurrentRolloutConfig(undefined, 8, 1)).toBeUndefined();
    for (const bad of [0, -5, Number.NaN]) expect(concurrentRolloutConfig({ timeBudgetMs: bad }, 4, 4)).toEqual({ timeBudgetMs: bad });
  });
});

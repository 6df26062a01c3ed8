// runTool: a tool call under its time limit and the caller's signal, alone and on a tool shared by
// concurrent calls (its queue time does not count against a call's limit).
import { afterEach, describe, expect, it, vi } from 'vitest';
import { toolsFromRegistry } from '../agent/registry-tools';
import { ToolRegistry } from './registry';
import { runTool } from './run-tool';
import type { Tool, ToolContext, ToolResult } from './tool';
import { adderTool as adder, testCard as card } from '../../tests/support/test-tools';

describe('runTool', () => {
  it('passes the timeout to the tool and returns its result', async () => {
    let seen: ToolContext | undefined;
    const t: Tool = { card: adder.card, run: async (a, ctx) => ((seen = ctx), { ok: true, output: String(a.a) }) };
    const r = await runTool(t, { a: 5, b: 0 }, 1234, new AbortController().signal);
    expect(r).toEqual({ result: { ok: true, output: '5' }, timedOut: false });
    expect(seen?.timeoutMs).toBe(1234);
  });
});

/**
 * Runs one call at a time, like the Python tool's single worker: each call reports queued() at once and
 * started() when its turn comes, then works for args.ms ms (fake timers) without heeding its signal.
 * With notices: false it queues the same way but reports nothing, like a tool written before the notices.
 */
function serialTool(log: string[], notices = true): Tool {
  let queue: Promise<unknown> = Promise.resolve();
  return {
    card: {
      ...card('Serial_Tool', { id: { type: 'string', description: 'call name' }, ms: { type: 'number', description: 'work time' } }, ['id', 'ms']),
      examples: [{ goal: 'g', args: { id: 'x', ms: 1 } }],
    },
    run(args, ctx) {
      if (notices) ctx.queued?.();
      const p = queue.then(async (): Promise<ToolResult> => {
        if (notices) ctx.started?.();
        log.push(`${args.id} started`);
        await new Promise((r) => setTimeout(r, args.ms as number));
        log.push(`${args.id} done`);
        return { ok: true, output: `${args.id} ran` };
      });
      queue = p;
      return p;
    },
  };
}

/** Tracks whether a promise has settled, so a test can say a call is still pending at a given time. */
function track<T>(p: Promise<T>): { settled: () => boolean; p: Promise<T> } {
  let done = false;
  p.then(() => (done = true), () => (done = true));
  return { settled: () => done, p };
}

describe('runTool on a tool shared by concurrent calls', () => {
  afterEach(() => {
    vi.useRealTimers();
  });
  const never = () => new AbortController().signal;
  const timedOut = { result: { ok: false, output: '', error: 'Serial_Tool timed out after 100 ms' }, timedOut: true };

  it('does not count the time a call waits behind another call', async () => {
    vi.useFakeTimers();
    const log: string[] = [];
    const tool = serialTool(log);
    const a = runTool(tool, { id: 'A', ms: 90 }, 100, never());
    const b = runTool(tool, { id: 'B', ms: 50 }, 100, never());
    // B finishes 140 ms after its call, 50 ms after its turn came: within its limit of 100 ms.
    await vi.advanceTimersByTimeAsync(140);
    expect(await a).toEqual({ result: { ok: true, output: 'A ran' }, timedOut: false });
    expect(await b).toEqual({ result: { ok: true, output: 'B ran' }, timedOut: false });
    expect(log).toEqual(['A started', 'A done', 'B started', 'B done']);
    expect(vi.getTimerCount()).toBe(0);
  });

  it('times a call out when its own work exceeds the limit, counted from its turn', async () => {
    vi.useFakeTimers();
    const tool = serialTool([]);
    void runTool(tool, { id: 'A', ms: 90 }, 100, never());
    const b = track(runTool(tool, { id: 'B', ms: 150 }, 100, never()));
    await vi.advanceTimersByTimeAsync(189);
    expect(b.settled()).toBe(false);
    await vi.advanceTimersByTimeAsync(1);
    expect(b.settled()).toBe(true);
    expect(await b.p).toEqual(timedOut);
  });

  it('times a tool that gives no notices from the call, as before', async () => {
    vi.useFakeTimers();
    const tool = serialTool([], false);
    void runTool(tool, { id: 'A', ms: 90 }, 100, never());
    const b = track(runTool(tool, { id: 'B', ms: 50 }, 100, never()));
    await vi.advanceTimersByTimeAsync(99);
    expect(b.settled()).toBe(false);
    await vi.advanceTimersByTimeAsync(1);
    expect(await b.p).toEqual(timedOut);
  });

  it('times out a call whose turn never comes at its queue limit, 8 x its time limit, and says so', async () => {
    vi.useFakeTimers();
    const log: string[] = [];
    const tool = serialTool(log);
    // A never ends: B reports queued() and waits behind it for good.
    void runTool(tool, { id: 'A', ms: 1e9 }, Number.POSITIVE_INFINITY, never());
    const b = track(runTool(tool, { id: 'B', ms: 1 }, 100, never()));
    await vi.advanceTimersByTimeAsync(799);
    expect(b.settled()).toBe(false);
    await vi.advanceTimersByTimeAsync(1);
    expect(await b.p).toEqual({
      result: { ok: false, output: '', error: 'Serial_Tool timed out waiting for its turn behind other calls: queue limit of 800 ms (8 x its 100 ms time limit)' },
      timedOut: true,
    });
    expect(log).toEqual(['A started']);
  });

  it("cancels a queued call at once on the loop's abort, and ignores the tool's late started()", async () => {
    vi.useFakeTimers();
    const log: string[] = [];
    const tool = serialTool(log);
    const a = runTool(tool, { id: 'A', ms: 90 }, 100, never());
    const ac = new AbortController();
    const b = runTool(tool, { id: 'B', ms: 50 }, 100, ac.signal);
    await vi.advanceTimersByTimeAsync(10);
    const reason = new Error('user stopped the run');
    ac.abort(reason);
    await expect(b).rejects.toBe(reason);
    expect(log).toEqual(['A started']);
    // This tool does not heed the abort: B still gets its turn and calls started() after runTool is done.
    await vi.advanceTimersByTimeAsync(130);
    expect((await a).result.ok).toBe(true);
    expect(log).toEqual(['A started', 'A done', 'B started', 'B done']);
    // A timer armed by B's late started() would still be pending here.
    expect(vi.getTimerCount()).toBe(0);
  });

  it('keeps the same timing through the registry, whose own time limit also waits for the turn', async () => {
    vi.useFakeTimers();
    const registry = new ToolRegistry();
    registry.register(serialTool([]));
    const [tool] = toolsFromRegistry(registry);
    const a = runTool(tool, { id: 'A', ms: 90 }, 100, never());
    const b = runTool(tool, { id: 'B', ms: 50 }, 100, never());
    const c = track(runTool(tool, { id: 'C', ms: 150 }, 100, never()));
    await vi.advanceTimersByTimeAsync(140);
    expect(await a).toEqual({ result: { ok: true, output: 'A ran' }, timedOut: false });
    expect(await b).toEqual({ result: { ok: true, output: 'B ran' }, timedOut: false });
    // C's turn comes at 140 ms: runTool's limit fires first at 240 ms.
    await vi.advanceTimersByTimeAsync(99);
    expect(c.settled()).toBe(false);
    await vi.advanceTimersByTimeAsync(1);
    expect(await c.p).toEqual(timedOut);
  });
});

import { afterEach, describe, expect, it, vi } from 'vitest';
import { ToolRegistry } from './registry';
import type { Tool, ToolCard, ToolContext } from './tool';

function card(name: string, usesNetwork = false): ToolCard {
  return {
    name,
    description: `The ${name} tool.`,
    input: { type: 'object', properties: { n: { type: 'number', description: 'a number' } }, required: ['n'] },
    output: 'the number doubled',
    limitations: [],
    examples: [{ goal: 'double 2', args: { n: 2 } }],
    usesNetwork,
  };
}

/** Doubles n; records the arguments it saw. */
function doubler(name: string, usesNetwork = false): Tool & { seen: unknown[]; disposed: number } {
  const t = {
    card: card(name, usesNetwork),
    seen: [] as unknown[],
    disposed: 0,
    async run(args: Record<string, unknown>) {
      t.seen.push(args);
      return { ok: true, output: String((args.n as number) * 2) };
    },
    dispose() {
      t.disposed++;
    },
  };
  return t;
}

const ctx = (timeoutMs = 1000, signal = new AbortController().signal): ToolContext => ({ signal, timeoutMs });

describe('ToolRegistry', () => {
  it('runs a tool with validated, coerced arguments', async () => {
    const reg = new ToolRegistry();
    const t = doubler('double');
    reg.register(t);
    const r = await reg.run('double', { n: '21', junk: true }, ctx());
    expect(r).toEqual({ ok: true, output: '42' });
    expect(t.seen).toEqual([{ n: 21 }]);
  });

  it('returns a tool error naming the field for bad arguments, without running the tool', async () => {
    const reg = new ToolRegistry();
    const t = doubler('double');
    reg.register(t);
    const r = await reg.run('double', { n: 'many' }, ctx());
    expect(r.ok).toBe(false);
    expect(r.error).toMatch(/field 'n' must be a number/);
    expect(t.seen).toEqual([]);
  });

  it('keeps network tools off until the user allows them, and reports them', async () => {
    const reg = new ToolRegistry();
    reg.register(doubler('local'));
    const net = doubler('net', true);
    reg.register(net);
    expect(reg.networkTools()).toEqual(['net']);
    expect(reg.cards().map((c) => c.name)).toEqual(['local']);
    expect(reg.list().find((s) => s.name === 'net')).toMatchObject({ enabled: true, usesNetwork: true, networkAllowed: false, available: false });
    const refused = await reg.run('net', { n: 1 }, ctx());
    expect(refused.ok).toBe(false);
    expect(refused.error).toMatch(/uses the network.*not allowed/);
    expect(net.seen).toEqual([]);

    reg.allowNetwork('net');
    expect(reg.cards().map((c) => c.name)).toEqual(['local', 'net']);
    expect(await reg.run('net', { n: 1 }, ctx())).toEqual({ ok: true, output: '2' });

    reg.revokeNetwork('net');
    expect(reg.isAvailable('net')).toBe(false);
  });

  it('enables and disables tools; a disabled tool is not offered and refuses to run', async () => {
    const reg = new ToolRegistry();
    reg.register(doubler('a'));
    reg.register(doubler('b'), { enabled: false });
    expect(reg.cards().map((c) => c.name)).toEqual(['a']);
    expect((await reg.run('b', { n: 1 }, ctx())).error).toMatch(/switched off/);
    reg.setEnabled('b', true);
    reg.setEnabled('a', false);
    expect(reg.cards().map((c) => c.name)).toEqual(['b']);
  });

  it('registers a page-supplied tool, refuses duplicates and invalid cards, disposes on unregister', () => {
    const reg = new ToolRegistry();
    const t = doubler('custom');
    let changes = 0;
    reg.subscribe(() => changes++);
    reg.register(t);
    expect(() => reg.register(doubler('custom'))).toThrow(/already registered/);
    const bad = doubler('bad');
    bad.card.examples = [{ goal: 'no n', args: {} }];
    expect(() => reg.register(bad)).toThrow(/tool card "bad" is invalid: example 0/);
    const replacement = doubler('custom');
    reg.register(replacement, { replace: true });
    expect(t.disposed).toBe(1);
    expect(reg.unregister('custom')).toBe(true);
    expect(replacement.disposed).toBe(1);
    expect(reg.unregister('custom')).toBe(false);
    expect(changes).toBe(3);
  });

  it('names the available tools when asked for an unknown one', async () => {
    const reg = new ToolRegistry();
    reg.register(doubler('a'));
    reg.register(doubler('n', true));
    const r = await reg.run('python', { n: 1 }, ctx());
    expect(r.error).toBe("no tool named 'python'; available tools: a");
    expect(() => reg.setEnabled('python', true)).toThrow(/no tool named 'python'/);
  });

  it('turns a throw into a tool error and stops waiting at the time limit, aborting the tool', async () => {
    const reg = new ToolRegistry();
    reg.register({ card: card('thrower'), run: async () => { throw new Error('disk on fire'); } });
    expect(await reg.run('thrower', { n: 1 }, ctx())).toEqual({ ok: false, output: '', error: "tool 'thrower' failed: disk on fire" });

    let sawAbort = false;
    reg.register({
      card: card('hang'),
      run: (_args, c) =>
        new Promise(() => {
          c.signal.addEventListener('abort', () => (sawAbort = true));
        }),
    });
    const r = await reg.run('hang', { n: 1 }, ctx(20));
    expect(r.ok).toBe(false);
    expect(r.error).toMatch(/time limit of 20 ms/);
    expect(sawAbort).toBe(true);
  });

  it("returns when the caller aborts, and passes the abort to the tool", async () => {
    const reg = new ToolRegistry();
    let sawAbort = false;
    reg.register({
      card: card('hang'),
      run: (_args, c) => new Promise(() => c.signal.addEventListener('abort', () => (sawAbort = true))),
    });
    const ac = new AbortController();
    const p = reg.run('hang', { n: 1 }, ctx(0, ac.signal));
    ac.abort();
    const r = await p;
    expect(r.error).toMatch(/cancelled/);
    expect(sawAbort).toBe(true);
    const ac2 = new AbortController();
    ac2.abort();
    expect((await reg.run('hang', { n: 1 }, ctx(0, ac2.signal))).error).toMatch(/cancelled before it started/);
  });

  describe('a tool that runs one call at a time', () => {
    afterEach(() => {
      vi.useRealTimers();
    });

    /** Doubles n after n ms (fake timers), one call at a time, reporting queued() and started() like the Python tool. */
    function serialDoubler(): Tool {
      let queue: Promise<unknown> = Promise.resolve();
      return {
        card: card('serial'),
        run(args, c) {
          c.queued?.();
          const p = queue.then(async () => {
            c.started?.();
            await new Promise((r) => setTimeout(r, args.n as number));
            return { ok: true, output: String((args.n as number) * 2) };
          });
          queue = p;
          return p;
        },
      };
    }

    it('times each call from its turn, and passes the notices on to the caller', async () => {
      vi.useFakeTimers();
      const reg = new ToolRegistry();
      reg.register(serialDoubler());
      const notices: string[] = [];
      const noted = (name: string): ToolContext => ({ ...ctx(100), queued: () => notices.push(`${name} queued`), started: () => notices.push(`${name} started`) });
      const a = reg.run('serial', { n: 90 }, noted('A'));
      const b = reg.run('serial', { n: 60 }, noted('B'));
      let cDone = false;
      const c = reg.run('serial', { n: 101 }, ctx(100)).finally(() => (cDone = true));
      expect(notices).toEqual(['A queued', 'B queued']);
      // B ends 150 ms after the call but 60 ms into its turn.
      await vi.advanceTimersByTimeAsync(150);
      expect(await a).toEqual({ ok: true, output: '180' });
      expect(await b).toEqual({ ok: true, output: '120' });
      expect(notices).toEqual(['A queued', 'B queued', 'A started', 'B started']);
      // C's turn came at 150 ms; it would need 101 ms of its 100.
      await vi.advanceTimersByTimeAsync(99);
      expect(cDone).toBe(false);
      await vi.advanceTimersByTimeAsync(1);
      expect(await c).toEqual({ ok: false, output: '', error: "tool 'serial' took longer than its time limit of 100 ms and was stopped" });
    });

    it("passes a tool's notes on to the caller", async () => {
      const reg = new ToolRegistry();
      reg.register({ card: card('noting'), run: async (_args, c) => (c.note?.('warming up'), c.note?.(null), { ok: true, output: 'done' }) });
      const notes: Array<string | null> = [];
      expect(await reg.run('noting', { n: 1 }, { ...ctx(), note: (n) => notes.push(n) })).toEqual({ ok: true, output: 'done' });
      expect(notes).toEqual(['warming up', null]);
    });

    it('stops a call whose turn never comes at its queue limit, 8 x its time limit, naming it', async () => {
      vi.useFakeTimers();
      const reg = new ToolRegistry();
      reg.register(serialDoubler());
      void reg.run('serial', { n: 1e9 }, ctx(Number.POSITIVE_INFINITY));
      let bDone = false;
      const b = reg.run('serial', { n: 1 }, ctx(100)).finally(() => (bDone = true));
      await vi.advanceTimersByTimeAsync(799);
      expect(bDone).toBe(false);
      await vi.advanceTimersByTimeAsync(1);
      expect(await b).toEqual({ ok: false, output: '', error: "tool 'serial' waited longer than its queue limit of 800 ms for its turn behind other calls and was stopped" });
    });

    it('still times a tool that gives no notices from the call', async () => {
      vi.useFakeTimers();
      const reg = new ToolRegistry();
      const quiet = serialDoubler();
      reg.register({ card: quiet.card, run: (args, c) => quiet.run(args, { signal: c.signal, timeoutMs: c.timeoutMs }) });
      void reg.run('serial', { n: 90 }, ctx(100));
      const b = reg.run('serial', { n: 60 }, ctx(100));
      await vi.advanceTimersByTimeAsync(100);
      expect(await b).toEqual({ ok: false, output: '', error: "tool 'serial' took longer than its time limit of 100 ms and was stopped" });
    });
  });

  it('exports and restores the user switches, including network consent', () => {
    const make = () => {
      const reg = new ToolRegistry();
      reg.register(doubler('local'));
      reg.register(doubler('net', true));
      return reg;
    };
    const a = make();
    a.setEnabled('local', false);
    a.allowNetwork('net');
    const saved = JSON.parse(JSON.stringify(a.exportSwitches()));
    expect(saved).toEqual({ local: { enabled: false, networkAllowed: false }, net: { enabled: true, networkAllowed: true } });
    const b = make();
    expect(b.isAvailable('net')).toBe(false);
    b.applySwitches({ ...saved, gone: { enabled: true }, local: { ...saved.local, networkAllowed: true } });
    expect(b.list().map((s) => [s.name, s.enabled, s.available])).toEqual([
      ['local', false, false],
      ['net', true, true],
    ]);
    expect(b.exportSwitches()).toEqual(saved);
  });
});

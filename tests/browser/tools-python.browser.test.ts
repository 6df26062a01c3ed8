// The Python tool end to end in Chromium: Pyodide from node_modules in a real module worker.
import { afterAll, describe, expect, it } from 'vitest';
import { PythonTool } from '../../src/tools/python';
import type { ToolContext } from '../../src/tools/tool';
import { AFTER_FORGE, FORGE, LEAVE_BUSY_WORK } from '../support/python-hostile';
import { aloneBlocked, ALONE_ESCAPES, ASYNCIO_OUTPUT, ESCAPES, escapedAttempts, escapeProgram, ORDINARY_OUTPUT } from '../support/python-escapes';

const ctx = (timeoutMs = 20_000): ToolContext => ({ signal: new AbortController().signal, timeoutMs });

describe('python tool (Pyodide in a module worker)', () => {
  const tool = new PythonTool();
  afterAll(() => tool.dispose());

  it('prints, and returns the last expression value', async () => {
    expect(await tool.warmUp()).toMatch(/^3\.\d+\.\d+/);
    expect(await tool.run({ code: 'print(1+1)' }, ctx())).toEqual({ ok: true, output: '2' });
    const r = await tool.run({ code: 'x = [i*i for i in range(5)]\nprint(sum(x))\nx' }, ctx());
    expect(r).toEqual({ ok: true, output: '30\n[0, 1, 4, 9, 16]' });
  });

  it('computes with the standard library exactly', async () => {
    const r = await tool.run({ code: 'from datetime import date\nfrom fractions import Fraction\nprint((date(2024,3,1)-date(2024,1,15)).days, Fraction(1,3)+Fraction(1,6))' }, ctx());
    expect(r).toEqual({ ok: true, output: '46 1/2' });
  });

  it("returns an exception's traceback as a tool error, with the user's line and nothing of Pyodide's", async () => {
    const r = await tool.run({ code: 'print("before")\ndef f(a):\n    return a / 0\nf(3)' }, ctx());
    expect(r.ok).toBe(false);
    expect(r.output).toBe('before');
    expect(r.error).toMatch(/^Traceback \(most recent call last\):/);
    expect(r.error).toContain('File "<code>", line 4');
    expect(r.error).toContain('File "<code>", line 3, in f');
    expect(r.error).toMatch(/ZeroDivisionError: division by zero\n?$/);
    expect(r.error).not.toMatch(/_pyodide|eval_code|_agentflow_run/);
    const s = await tool.run({ code: 'print(1' }, ctx());
    expect(s.ok).toBe(false);
    expect(s.error).toMatch(/SyntaxError/);
  });

  it('keeps calls independent and captures stderr', async () => {
    await tool.run({ code: 'secret = 5' }, ctx());
    const r = await tool.run({ code: 'import sys\nprint("warn", file=sys.stderr)\nprint(globals().get("secret"))' }, ctx());
    expect(r).toEqual({ ok: true, output: 'None\n[stderr]\nwarn' });
  });

  it('gives Python no way to the network or the page', async () => {
    const r = await tool.run(
      {
        code: [
          // A JS function's constructor, which would compile code in the worker's scope (where
          // `import("https://…")` reaches the network), refuses to.
          'from pyodide.ffi import to_js',
          'try:',
          '    to_js([]).constructor.constructor("return typeof fetch")()',
          'except Exception as e:',
          '    print("EvalError" in str(e))',
        ].join('\n'),
      },
      ctx(),
    );
    expect(r).toEqual({ ok: true, output: 'True' });
  });

  it('stops a runaway loop at the time limit, and the next call works in a fresh worker', async () => {
    const before = tool.workersStarted;
    const r = await tool.run({ code: 'while True: pass' }, ctx(1500));
    expect(r.ok).toBe(false);
    expect(r.error).toMatch(/time limit of 1500 ms and was stopped/);
    const next = await tool.run({ code: 'print(6*7)' }, ctx());
    expect(next).toEqual({ ok: true, output: '42' });
    expect(tool.workersStarted).toBeGreaterThan(before);
  });

  it('gives no run a way to forge what a later run reports (each run has a fresh worker)', async () => {
    expect((await tool.run({ code: FORGE }, ctx())).ok).toBe(true);
    expect(await tool.run({ code: AFTER_FORGE }, ctx())).toEqual({ ok: true, output: '42 4.0' });
  });

  it('lets nothing a run scheduled run after it, so a later run is not blamed for its time', async () => {
    expect(await tool.run({ code: LEAVE_BUSY_WORK }, ctx())).toEqual({ ok: true, output: 'scheduled' });
    await new Promise((r) => setTimeout(r, 200));
    expect(await tool.run({ code: 'print(6*7)' }, ctx(5000))).toEqual({ ok: true, output: '42' });
  });

  it('keeps what a program printed before os._exit(n) and says it exited with code n (#25.7)', async () => {
    const r = await tool.run({ code: 'import os\nprint("before")\nos._exit(3)' }, ctx());
    expect(r).toEqual({ ok: false, output: 'before', error: 'the program exited with code 3 (os._exit)' });
  });

  // The same attempts as the Node worker thread's (src/tools/python-node.test.ts); there is no host folder or
  // port to aim at here, so they aim at names that would exist on a host.
  for (const snapshots of [true, false]) {
    it(`blocks all ${ESCAPES.length} escape attempts and leaves ordinary Python working (${snapshots ? 'snapshot-restored' : 'freshly loaded'} worker)`, async () => {
      const own = snapshots ? tool : new PythonTool({ snapshots: false });
      try {
        const r = await own.run({ code: escapeProgram({ dir: '/tmp', file: '/etc/hostname', port: 9 }) }, ctx(120_000));
        expect(escapedAttempts(r.output)).toEqual([]);
        expect(r.output.split('\n')).toContain(ORDINARY_OUTPUT);
        expect(r.output).toMatch(ASYNCIO_OUTPUT);
      } finally {
        if (own !== tool) own.dispose();
      }
    });
  }

  for (const attempt of ALONE_ESCAPES) {
    it(`blocks, alone in its run: ${attempt.name}`, async () => {
      const r = await tool.run({ code: escapeProgram({ dir: '/tmp', file: '/etc/hostname', port: 9 }, [attempt]) }, ctx(60_000));
      expect(aloneBlocked(attempt, r), JSON.stringify(r)).toBe(true);
    });
  }
});

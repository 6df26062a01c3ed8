// The Python tool in Node worker threads (cli train --tools python): real Pyodide from the npm package.
// The hostile-program cases are the ones #18 found in the browser; the same sandbox core runs in both.
import { afterAll, describe, expect, it } from 'vitest';
import { createNodePythonTool } from './python-node';
import type { ToolContext } from './types';
import { AFTER_FORGE, FORGE, LEAVE_BUSY_WORK } from '../../tests/support/python-hostile';

const ctx = (timeoutMs = 20_000): ToolContext => ({ signal: new AbortController().signal, timeoutMs });

describe('python tool in Node worker threads', () => {
  const tool = createNodePythonTool();
  afterAll(() => tool.dispose());

  it('runs a program and returns its output and last value', async () => {
    expect(await tool.warmUp()).toMatch(/^3\.\d+\.\d+/);
    expect(await tool.run({ code: 'x = [i*i for i in range(5)]\nprint(sum(x))\nx' }, ctx())).toEqual({ ok: true, output: '30\n[0, 1, 4, 9, 16]' });
  }, 60_000);

  it('gives no run a way to forge what a later run reports', async () => {
    expect((await tool.run({ code: FORGE }, ctx())).ok).toBe(true);
    expect(await tool.run({ code: AFTER_FORGE }, ctx())).toEqual({ ok: true, output: '42 4.0' });
  }, 60_000);

  it('lets nothing a run scheduled run after it, so a later run is not blamed for its time', async () => {
    // Also a task that never yields, which only this (Node) test adds.
    const leave = `${LEAVE_BUSY_WORK}\nasync def forever():\n    while True: pass\ntask = asyncio.ensure_future(forever())`;
    expect(await tool.run({ code: leave }, ctx())).toEqual({ ok: true, output: 'scheduled' });
    // Long enough to see the spin hold the next run, short enough that a shared worker would be killed.
    await new Promise((r) => setTimeout(r, 200));
    expect(await tool.run({ code: 'print(6*7)' }, ctx(3000))).toEqual({ ok: true, output: '42' });
  }, 60_000);

  it('gives Python no way to the network or to compiling JavaScript', async () => {
    const r = await tool.run(
      {
        code: [
          'import js, pyodide_js',
          'print(hasattr(js, "fetch"), hasattr(js, "process"))',
          'try:',
          '    pyodide_js.setStdout.constructor("return typeof process")()',
          'except Exception as e:',
          '    print("EvalError" in str(e))',
          'import socket',
          'try:',
          '    socket.create_connection(("127.0.0.1", 9), timeout=1)',
          '    print("connected")',
          'except Exception as e:',
          '    print("no socket")',
        ].join('\n'),
      },
      ctx(),
    );
    expect(r).toEqual({ ok: true, output: 'False False\nTrue\nno socket' });
  }, 60_000);

  it('stops a runaway loop at the time limit and runs the next program', async () => {
    const r = await tool.run({ code: 'while True: pass' }, ctx(1000));
    expect(r.error).toMatch(/time limit of 1000 ms and was stopped/);
    expect(await tool.run({ code: 'print(6*7)' }, ctx())).toEqual({ ok: true, output: '42' });
  }, 60_000);
});

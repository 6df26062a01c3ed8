// The Python tool in Node worker threads (cli train --tools python): real Pyodide from the npm package.
// The hostile-program cases are the ones #18 found in the browser; the same sandbox core runs in both.
import { afterAll, describe, expect, it } from 'vitest';
import { createNodePythonTool } from './python-node';
import type { ToolContext } from './tool';
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { AFTER_FORGE, FORGE, LEAVE_BUSY_WORK } from '../../tests/support/python-hostile';
import { aloneBlocked, ALONE_ESCAPES, ASYNCIO_OUTPUT, ESCAPES, escapedAttempts, escapeProgram, ORDINARY_OUTPUT } from '../../tests/support/python-escapes';

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
          'from pyodide.ffi import to_js',
          'try:',
          '    to_js([]).constructor.constructor("return typeof process")()',
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
    expect(r).toEqual({ ok: true, output: 'True\nno socket' });
  }, 60_000);

  it('keeps what a program printed before os._exit(n) and says it exited with code n (#25.7)', async () => {
    const code = 'import os, sys\nprint("before")\nprint("warned", file=sys.stderr)\nos._exit(3)';
    expect(await tool.run({ code }, ctx())).toEqual({ ok: false, output: 'before\n[stderr]\nwarned', error: 'the program exited with code 3 (os._exit)' });
    expect(await tool.run({ code: 'import os\nprint("done")\nos._exit(0)' }, ctx())).toEqual({ ok: true, output: 'done\n[the program exited with code 0]' });
  }, 60_000);

  it('stops a runaway loop at the time limit and runs the next program', async () => {
    const r = await tool.run({ code: 'while True: pass' }, ctx(1000));
    expect(r.error).toMatch(/time limit of 1000 ms and was stopped/);
    expect(await tool.run({ code: 'print(6*7)' }, ctx())).toEqual({ ok: true, output: '42' });
  }, 60_000);
});

describe('python tool in Node: no way out of the sandbox (#25.1)', () => {
  // A host folder with a file to steal, and a port that counts connections: the attempts aim at both.
  const dir = mkdtempSync(join(tmpdir(), 'agentflow-escape-'));
  const file = join(dir, 'secret.txt');
  writeFileSync(file, 'host secret');
  let connections = 0;
  let server: Server;
  let port = 0;
  const tools: ReturnType<typeof createNodePythonTool>[] = [];
  afterAll(() => {
    for (const t of tools) t.dispose();
    server?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('control: the attempts marked so escape a Pyodide loaded without the sandbox, so they are real ways out', async () => {
    const { loadPyodide } = await import('pyodide');
    const raw = await loadPyodide();
    let out = '';
    const decoder = new TextDecoder();
    raw.setStdout({ write: (b: Uint8Array) => ((out += decoder.decode(b, { stream: true })), b.length) });
    const controls = [...ESCAPES, ...ALONE_ESCAPES].filter((a) => a.control);
    const controlDir = mkdtempSync(join(tmpdir(), 'agentflow-control-'));
    try {
      raw.runPython(escapeProgram({ dir: controlDir, file: join(controlDir, 'none'), port: 9 }, controls));
      // Every control attempt printed an ESCAPED line (a blocked one would be missing from this list).
      const lines = escapedAttempts(out, controls);
      expect(lines.filter((l) => !l.includes(': ESCAPED '))).toEqual([]);
      expect(lines).toHaveLength(controls.length);
    } finally {
      rmSync(controlDir, { recursive: true, force: true });
    }
  }, 120_000);

  // A worker restored from the memory snapshot (every run after the first) and one that loaded Pyodide afresh.
  for (const snapshots of [true, false]) {
    it(`blocks all ${ESCAPES.length} escape attempts and leaves ordinary Python working (${snapshots ? 'snapshot-restored' : 'freshly loaded'} worker)`, async () => {
      server ??= await new Promise<Server>((resolve) => {
        const s = createServer((c) => (connections++, c.destroy())).listen(0, '127.0.0.1', () => resolve(s));
      });
      port = (server.address() as { port: number }).port;
      const tool = createNodePythonTool({ snapshots });
      tools.push(tool);
      // The first run makes the snapshot; the second runs in a worker restored from it.
      if (snapshots) expect(await tool.run({ code: 'print(1)' }, ctx(60_000))).toEqual({ ok: true, output: '1' });
      const r = await tool.run({ code: escapeProgram({ dir, file, port }) }, ctx(120_000));
      expect(escapedAttempts(r.output)).toEqual([]);
      expect(r.output.split('\n')).toContain(ORDINARY_OUTPUT);
      expect(r.output).toMatch(ASYNCIO_OUTPUT);
      expect(readdirSync(dir)).toEqual(['secret.txt']);
      expect(connections).toBe(0);
    }, 240_000);
  }

  for (const attempt of ALONE_ESCAPES) {
    it(`blocks, alone in its run: ${attempt.name}`, async () => {
      const tool = createNodePythonTool();
      tools.push(tool);
      const r = await tool.run({ code: escapeProgram({ dir, file, port }, [attempt]) }, ctx(60_000));
      expect(aloneBlocked(attempt, r), JSON.stringify(r)).toBe(true);
      expect(readdirSync(dir)).toEqual(['secret.txt']);
    }, 120_000);
  }
});

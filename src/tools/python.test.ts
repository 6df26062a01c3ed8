// The Python tool's queue, on a stand-in worker: a MessageChannel port serving a fake worker API through
// Comlink, as the real worker does. Pyodide itself is tested in Chromium (tests/browser/tools-python).
import * as Comlink from 'comlink';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { PythonRunResult } from './python-sandbox';
import { PythonTool } from './python';
import type { ToolContext } from './tool';

interface Gate {
  promise: Promise<void>;
  open: () => void;
}

function gate(): Gate {
  let open!: () => void;
  const promise = new Promise<void>((resolve) => (open = resolve));
  return { promise, open };
}

/**
 * A worker whose init() and run(code) append to `log`; run(code) waits for gates[code] (if any) and then
 * "prints" the code back, so each result names the program that produced it.
 */
function fakeWorker(log: string[], gates: Record<string, Gate>): () => Worker {
  return () => {
    const { port1, port2 } = new MessageChannel();
    Comlink.expose(
      {
        async init(indexURL: string) {
          log.push(`init ${indexURL}`);
          await gates[INIT]?.promise;
          if (gates[BROKEN]) throw new Error('Failed to fetch dynamically imported module: http://pyodide.test/pyodide.mjs');
          return { version: '3.12.7' };
        },
        async run(code: string): Promise<PythonRunResult> {
          log.push(`run ${code}`);
          await gates[code]?.promise;
          log.push(`done ${code}`);
          return { ok: true, stdout: `${code}\n`, stderr: '', value: null, error: null };
        },
      },
      port2,
    );
    const worker = Object.assign(port1, {
      terminate: () => {
        port1.close();
        port2.close();
      },
    });
    return worker as unknown as Worker;
  };
}

/** The key in `gates` that holds back every worker's init() (Pyodide loading). */
const INIT = '<init>';
/** Present in `gates`: every worker's init() fails, as when Pyodide's files are missing. */
const BROKEN = '<broken>';

/** The log without the workers' start-ups (a spare worker loads in the background after every run). */
const calls = (log: string[]) => log.filter((l) => !l.startsWith('init '));

/** A caller's context that records the tool's queued/started notices in the shared log. */
function ctx(name: string, log: string[], signal = new AbortController().signal): ToolContext {
  return { signal, timeoutMs: 10_000, queued: () => log.push(`${name} queued`), started: () => log.push(`${name} started`) };
}

describe('python tool queue notices', () => {
  let tool: PythonTool | undefined;
  afterEach(() => tool?.dispose());

  it('reports each call queued at once and started only when its turn comes, before Pyodide loads', async () => {
    const log: string[] = [];
    const gates = { a: gate(), b: gate() };
    tool = new PythonTool({ indexURL: 'http://pyodide.test/', createWorker: fakeWorker(log, gates) });
    const a = tool.run({ code: 'a' }, ctx('A', log));
    const b = tool.run({ code: 'b' }, ctx('B', log));
    expect(log).toEqual(['A queued', 'B queued']);
    await vi.waitFor(() => expect(log).toContain('run a'));
    // A's program is running: B is still waiting for its turn and has not been started.
    expect(log).toEqual(['A queued', 'B queued', 'A started', 'init http://pyodide.test/', 'run a']);
    expect(tool.workersStarted).toBe(1);
    gates.a.open();
    expect(await a).toEqual({ ok: true, output: 'a' });
    await vi.waitFor(() => expect(log).toContain('run b'));
    gates.b.open();
    expect(await b).toEqual({ ok: true, output: 'b' });
    expect(calls(log)).toEqual(['A queued', 'B queued', 'A started', 'run a', 'done a', 'B started', 'run b', 'done b']);
    // Each program ran in a worker of its own, and a spare is loading for the next.
    expect(tool.workersStarted).toBe(3);
  });

  it('never starts a call that was aborted while queued, and runs the next one', async () => {
    const log: string[] = [];
    const gates = { a: gate() };
    tool = new PythonTool({ indexURL: 'http://pyodide.test/', createWorker: fakeWorker(log, gates) });
    const a = tool.run({ code: 'a' }, ctx('A', log));
    const ac = new AbortController();
    const b = tool.run({ code: 'b' }, ctx('B', log, ac.signal));
    const c = tool.run({ code: 'c' }, ctx('C', log));
    await vi.waitFor(() => expect(log).toContain('run a'));
    ac.abort();
    gates.a.open();
    expect(await a).toEqual({ ok: true, output: 'a' });
    expect(await b).toEqual({ ok: false, output: '', error: 'python: cancelled' });
    expect(await c).toEqual({ ok: true, output: 'c' });
    expect(calls(log)).toEqual(['A queued', 'B queued', 'C queued', 'A started', 'run a', 'done a', 'C started', 'run c', 'done c']);
  });

  it('notes that Python is starting only while a call really waits for its worker to load', async () => {
    const log: string[] = [];
    const gates: Record<string, Gate> = { [INIT]: gate() };
    tool = new PythonTool({ indexURL: 'http://pyodide.test/', createWorker: fakeWorker(log, gates) });
    const notes: Array<string | null> = [];
    const a = tool.run({ code: 'a' }, { ...ctx('A', log), note: (n) => notes.push(n) });
    await vi.waitFor(() => expect(notes).toEqual(['starting Python (first use)']));
    gates[INIT].open();
    expect(await a).toEqual({ ok: true, output: 'a' });
    expect(notes).toEqual(['starting Python (first use)', null]);
    // The spare loaded behind the first run: the next call does not wait, and says nothing.
    await vi.waitFor(() => expect(log.filter((l) => l.startsWith('init ')).length).toBe(2));
    await tool.warmUp();
    notes.length = 0;
    expect(await tool.run({ code: 'b' }, { ...ctx('B', log), note: (n) => notes.push(n) })).toEqual({ ok: true, output: 'b' });
    expect(notes).toEqual([]);
  });

  it('answers a Stop while Pyodide loads at once, and the next call takes that worker rather than loading again', async () => {
    const log: string[] = [];
    const gates: Record<string, Gate> = { [INIT]: gate() };
    tool = new PythonTool({ indexURL: 'http://pyodide.test/', createWorker: fakeWorker(log, gates) });
    const stop = new AbortController();
    const a = tool.run({ code: 'a' }, ctx('A', log, stop.signal));
    await vi.waitFor(() => expect(log).toContain('init http://pyodide.test/'));
    stop.abort();
    // Still loading (the gate is shut), yet the call has its answer.
    expect(await a).toEqual({ ok: false, output: '', error: 'python: cancelled' });
    expect(tool.workersStarted).toBe(1);
    const b = tool.run({ code: 'b' }, ctx('B', log));
    gates[INIT].open();
    expect(await b).toEqual({ ok: true, output: 'b' });
    // b ran in the first worker; the second is the spare started after b.
    await vi.waitFor(() => expect(tool?.workersStarted).toBe(2));
    expect(calls(log)).toEqual(['A queued', 'A started', 'B queued', 'B started', 'run b', 'done b']);
  });

  it("says where Pyodide was to load from when it cannot, with the browser's reason", async () => {
    const log: string[] = [];
    tool = new PythonTool({ indexURL: 'http://pyodide.test/', createWorker: fakeWorker(log, { [BROKEN]: gate() }) });
    expect(await tool.run({ code: 'a' }, ctx('A', log))).toEqual({
      ok: false,
      output: '',
      error: 'python: Pyodide could not load from http://pyodide.test/: Failed to fetch dynamically imported module: http://pyodide.test/pyodide.mjs',
    });
  });

  it('gives no notices for a call it refuses without running', async () => {
    const log: string[] = [];
    tool = new PythonTool({ indexURL: 'http://pyodide.test/', createWorker: fakeWorker(log, {}) });
    const r = await tool.run({ code: '  ' }, ctx('A', log));
    expect(r).toEqual({ ok: false, output: '', error: "python: field 'code' must be non-empty Python code" });
    expect(log).toEqual([]);
    expect(tool.workersStarted).toBe(0);
  });
});

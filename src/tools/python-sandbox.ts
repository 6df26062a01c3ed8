// The Python tool's sandbox core, shared by the browser worker (workers/python.worker.ts) and the Node worker
// thread (workers/python.node-worker.ts): loads Pyodide, captures output, runs one program, and takes away
// every way from Python to the network, to Pyodide's JS API (python-bridges.ts) and to compiling JavaScript.
// Each worker runs ONE program and is then thrown away by the client (src/tools/python.ts): code can rebind
// anything in the interpreter (the function that evaluates code, builtins, sys.stdout, modules) and schedule
// asyncio work that outlives it, so no later run may share an interpreter, or even a JavaScript realm, with it.
import type { PyodideAPI } from 'pyodide';
import { cutPythonBridges } from './python-bridges';

export interface PythonRunResult {
  ok: boolean;
  stdout: string;
  stderr: string;
  /** repr() of the last expression's value, or null when there is none or it is None. */
  value: string | null;
  /** The traceback (only the user's frames) when ok is false. */
  error: string | null;
  /** Set when the program ended the interpreter itself (os._exit(n)): its exit status. */
  exitCode?: number;
}

export interface PythonInitResult {
  /** Python's version, e.g. "3.12.7". */
  version: string;
  /**
   * The interpreter's memory right after start-up, before any program ran, when the caller asked for it:
   * later workers start from it in a fraction of the time (see PythonSandbox.init).
   */
  snapshot?: Uint8Array;
}

/**
 * What a Python worker answers over comlink: the browser's module worker and the Node worker thread both
 * serve it around a PythonSandbox; the tool (src/tools/python.ts) calls it.
 */
export interface PythonWorkerApi {
  /**
   * Loads Pyodide from `url` (a folder URL ending in '/'; the Node worker finds it beside its npm module),
   * from `snapshot` when given; with makeSnapshot the result carries a start-up image for the next workers
   * (transferred, not copied).
   */
  init(url: string, options?: { snapshot?: Uint8Array; makeSnapshot?: boolean }): Promise<PythonInitResult>;
  /** Runs one program; the worker is thrown away afterwards. */
  run(code: string): PythonRunResult;
}

export type LoadPyodide = (options: Record<string, unknown>) => Promise<PyodideAPI>;

// Formats exceptions with only the user's frames, so a small model sees its own mistake rather than
// Pyodide's internals. Imported before any snapshot is taken, so a restored interpreter has it ready.
const RUNNER = `
import sys, traceback, asyncio
from pyodide.code import eval_code

def _agentflow_run(code):
    ns = {'__name__': '__main__'}
    try:
        value = eval_code(code, ns, filename='<code>')
    except BaseException as e:
        te = traceback.TracebackException(type(e), e, e.__traceback__)
        te.stack = traceback.StackSummary.from_list([f for f in te.stack if f.filename == '<code>'])
        return [False, None, ''.join(te.format())]
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
    if value is None:
        return [True, None, None]
    try:
        return [True, repr(value), None]
    except BaseException as e:
        return [True, '<unrepresentable %s: %s>' % (type(value).__name__, e), None]
`;

/**
 * Ways to turn a string into running JavaScript. Python can always reach some JS function (to_js makes JS
 * objects, asyncio holds scheduleCallback), and any function's `constructor` compiles code in the worker's scope, where `import('https://…')` (or, in
 * Node, `import('node:net')`) would still reach the network although every network global is gone: so no
 * code may be compiled from strings once Pyodide has loaded. (pyodide.code.run_js goes through eval and
 * stops working, as intended.)
 */
const CODE_FROM_STRINGS = ['Function', 'AsyncFunction', 'GeneratorFunction', 'AsyncGeneratorFunction'] as const;

/** One worker's interpreter: init once, run one program. */
export class PythonSandbox {
  private pyodide: PyodideAPI | undefined;
  private runner: ((code: string) => { toJs(): unknown; destroy(): void }) | undefined;
  private out: string[] = [];
  private err: string[] = [];
  private ran = false;

  constructor(
    private readonly load: LoadPyodide,
    /** Globals of this kind of worker that lead to the network, storage or other threads. */
    private readonly blockedGlobals: readonly string[],
  ) {}

  /**
   * Loads Pyodide (from `snapshot` when given: a memory image another worker made with `makeSnapshot`), then
   * locks the worker down. With makeSnapshot the result carries such an image, taken before any program ran.
   */
  async init(options: { indexURL?: string; snapshot?: Uint8Array; makeSnapshot?: boolean }): Promise<PythonInitResult> {
    if (this.pyodide) throw new Error('python worker: init() was called twice');
    const pyodide = await this.load({
      ...(options.indexURL ? { indexURL: options.indexURL } : {}),
      // The `js` module sees an empty object instead of the worker's globals.
      jsglobals: Object.create(null),
      checkAPIVersion: true,
      ...(options.snapshot ? { _loadSnapshot: options.snapshot } : options.makeSnapshot ? { _makeSnapshot: true } : {}),
    });
    if (!options.snapshot) pyodide.runPython(RUNNER);
    // Taken before any JS object is handed to Python (a snapshot may not hold references into JS).
    const snapshot = !options.snapshot && options.makeSnapshot ? (pyodide as unknown as { makeMemorySnapshot(): Uint8Array }).makeMemorySnapshot() : undefined;
    const decoderOut = new TextDecoder();
    const decoderErr = new TextDecoder();
    pyodide.setStdout({ write: (buf: Uint8Array) => (this.out.push(decoderOut.decode(buf, { stream: true })), buf.length) });
    pyodide.setStderr({ write: (buf: Uint8Array) => (this.err.push(decoderErr.decode(buf, { stream: true })), buf.length) });
    this.runner = pyodide.globals.get('_agentflow_run');
    this.pyodide = pyodide;
    const version = pyodide.runPython('import sys; sys.version.split()[0]') as string;
    // After the snapshot, on every load: a restored interpreter comes back with its JS modules registered.
    cutPythonBridges(pyodide);
    lockDown(this.blockedGlobals);
    return snapshot ? { version, snapshot } : { version };
  }

  /** Runs `code` in a fresh namespace. A sandbox runs one program: the client starts a new worker for the next. */
  run(code: string): PythonRunResult {
    if (!this.pyodide || !this.runner) throw new Error('python worker: init() was not called');
    if (this.ran) throw new Error('python worker: this worker already ran a program; each run needs a fresh worker');
    this.ran = true;
    this.out = [];
    this.err = [];
    let proxy: { toJs(): unknown; destroy(): void };
    try {
      proxy = this.runner(code);
    } catch (e) {
      // The interpreter ended under the program (os._exit, or a fatal error); what it printed until then stays.
      const stdout = this.out.join('');
      const stderr = this.err.join('');
      const status = exitStatus(e);
      if (status !== undefined) return { ok: status === 0, stdout, stderr, value: null, error: status === 0 ? null : `the program exited with code ${status} (os._exit)`, exitCode: status };
      return { ok: false, stdout, stderr, value: null, error: `the Python interpreter failed: ${e instanceof Error ? e.message.split('\n')[0] : String(e)}` };
    }
    const [ok, value, error] = proxy.toJs() as [boolean, string | null, string | null];
    proxy.destroy();
    return { ok, stdout: this.out.join(''), stderr: this.err.join(''), value: value ?? null, error: error ?? null };
  }
}

/** The status of Emscripten's exit (what os._exit(n) throws through runPython), or undefined for other errors. */
function exitStatus(e: unknown): number | undefined {
  const x = e as { name?: unknown; status?: unknown } | null;
  return x && typeof x === 'object' && (x.name === 'Exit' || x.name === 'ExitStatus') && typeof x.status === 'number' ? x.status : undefined;
}

/** Removes `blocked` from the global scope and makes string-to-code compilation throw, for good. */
export function lockDown(blocked: readonly string[]): void {
  const scope = globalThis as unknown as Record<string, unknown>;
  for (const name of blocked) {
    try {
      Object.defineProperty(scope, name, { value: undefined, configurable: false, writable: false });
    } catch {
      // Some names do not exist in every runtime; nothing to remove then.
    }
  }
  // Stand-ins keep each constructor's prototype, so `f instanceof Function` and `f.constructor === Function`
  // (which Pyodide relies on) still hold; only calling them is refused.
  const refuse = (what: string, prototype: object) => {
    const stand = function () {
      throw new EvalError(`${what} is disabled in the Python tool's sandbox`);
    };
    Object.defineProperty(stand, 'prototype', { value: prototype, writable: false });
    return stand;
  };
  const protos: Record<(typeof CODE_FROM_STRINGS)[number], object> = {
    Function: Function.prototype,
    AsyncFunction: Object.getPrototypeOf(async function () {}),
    GeneratorFunction: Object.getPrototypeOf(function* () {}),
    AsyncGeneratorFunction: Object.getPrototypeOf(async function* () {}),
  };
  for (const name of CODE_FROM_STRINGS) {
    const stand = refuse(`the ${name} constructor`, protos[name]);
    Object.defineProperty(protos[name], 'constructor', { value: stand, configurable: false, writable: false });
    if (name === 'Function') Object.defineProperty(scope, 'Function', { value: stand, configurable: false, writable: false });
  }
  Object.defineProperty(scope, 'eval', { value: refuse('eval', Function.prototype), configurable: false, writable: false });
  // Timers compile a string handler as code (in browsers); only functions may be scheduled.
  for (const name of ['setTimeout', 'setInterval'] as const) {
    const timer = globalThis[name] as unknown as (handler: unknown, ...rest: unknown[]) => unknown;
    Object.defineProperty(scope, name, {
      value: (handler: unknown, ...rest: unknown[]) => {
        if (typeof handler !== 'function') throw new EvalError(`${name} with a string is disabled in the Python tool's sandbox`);
        return timer.call(globalThis, handler, ...rest);
      },
      configurable: false,
      writable: false,
    });
  }
}

/** What an init result can hand over without a copy: the snapshot's buffer, when the snapshot owns all of it. */
export function initTransferables(r: PythonInitResult): ArrayBuffer[] {
  return r.snapshot && r.snapshot.byteLength === r.snapshot.buffer.byteLength ? [r.snapshot.buffer as ArrayBuffer] : [];
}

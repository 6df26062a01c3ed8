// A module worker that runs untrusted Python (model-written code) in Pyodide. Being a worker it has no
// DOM; after Pyodide has loaded, the worker also drops its own network and storage entry points, so that
// code which escapes through Pyodide's JS bridge still cannot send data anywhere. Runaway code is
// handled by the page, which terminates this worker (Python cannot be interrupted without
// SharedArrayBuffer, which needs cross-origin isolation the app does not require).
import * as Comlink from 'comlink';
import type { PyodideAPI } from 'pyodide';

export interface PythonRunResult {
  ok: boolean;
  stdout: string;
  stderr: string;
  /** repr() of the last expression's value, or null when there is none or it is None. */
  value: string | null;
  /** The traceback (only the user's frames) when ok is false. */
  error: string | null;
}

type LoadPyodide = (options: Record<string, unknown>) => Promise<PyodideAPI>;

// Runs user code in a fresh namespace each call, and formats exceptions with only the user's frames so a
// small model sees its own mistake rather than Pyodide's internals.
const RUNNER = `
import sys, traceback
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

// Entry points to the network, storage and other threads that Python must not reach.
const BLOCKED_GLOBALS = [
  'fetch',
  'XMLHttpRequest',
  'WebSocket',
  'WebTransport',
  'EventSource',
  'importScripts',
  'indexedDB',
  'caches',
  'BroadcastChannel',
  'Worker',
  'SharedWorker',
  'navigator',
  // A font face with a url() source downloads it.
  'FontFace',
  'fonts',
  'WebSocketStream',
];

/**
 * Ways to turn a string into running JavaScript. Pyodide hands Python JS functions (pyodide_js, proxies),
 * and any function's `constructor` compiles code in this worker's scope, where `import('https://…')` would
 * still reach the network although every network global is gone: so no code may be compiled from strings
 * once Pyodide has loaded. (pyodide.code.run_js goes through eval and stops working, as intended.)
 */
const CODE_FROM_STRINGS = ['Function', 'AsyncFunction', 'GeneratorFunction', 'AsyncGeneratorFunction'] as const;

let pyodide: PyodideAPI | undefined;
let run: ((code: string) => { toJs(): unknown; destroy(): void }) | undefined;
let out: string[] = [];
let err: string[] = [];

const api = {
  /** Loads Pyodide from `indexURL` (a folder URL ending in '/'); resolves with Python's version. */
  async init(indexURL: string): Promise<string> {
    if (pyodide) return pyodide.version;
    const mod = (await import(/* @vite-ignore */ `${indexURL}pyodide.mjs`)) as { loadPyodide: LoadPyodide };
    const decoderOut = new TextDecoder();
    const decoderErr = new TextDecoder();
    pyodide = await mod.loadPyodide({
      indexURL,
      // The `js` module sees an empty object instead of the worker's globals.
      jsglobals: Object.create(null),
      checkAPIVersion: true,
    });
    pyodide.setStdout({ write: (buf: Uint8Array) => (out.push(decoderOut.decode(buf, { stream: true })), buf.length) });
    pyodide.setStderr({ write: (buf: Uint8Array) => (err.push(decoderErr.decode(buf, { stream: true })), buf.length) });
    pyodide.runPython(RUNNER);
    run = pyodide.globals.get('_agentflow_run');
    lockDown();
    return pyodide.runPython('import sys; sys.version.split()[0]') as string;
  },

  run(code: string): PythonRunResult {
    if (!pyodide || !run) throw new Error('python worker: init() was not called');
    out = [];
    err = [];
    const proxy = run(code);
    const [ok, value, error] = proxy.toJs() as [boolean, string | null, string | null];
    proxy.destroy();
    return { ok, stdout: out.join(''), stderr: err.join(''), value: value ?? null, error: error ?? null };
  },
};

function lockDown(): void {
  const scope = globalThis as unknown as Record<string, unknown>;
  for (const name of BLOCKED_GLOBALS) {
    try {
      Object.defineProperty(scope, name, { value: undefined, configurable: false, writable: false });
    } catch {
      // Some names do not exist in every browser; nothing to remove then.
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
  // Timers compile a string handler as code; only functions may be scheduled.
  for (const name of ['setTimeout', 'setInterval'] as const) {
    const timer = globalThis[name] as (handler: unknown, ...rest: unknown[]) => number;
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

export type PythonWorkerApi = typeof api;
Comlink.expose(api);

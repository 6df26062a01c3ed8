// A module worker that runs ONE untrusted Python program (model-written code) in Pyodide, then is thrown
// away (see src/tools/python-sandbox.ts). Being a worker it has no DOM; after Pyodide has loaded it also
// drops its own network and storage entry points. Runaway code is handled by the page, which terminates
// this worker (Python cannot be interrupted without SharedArrayBuffer, which needs cross-origin isolation the
// app does not require).
import * as Comlink from 'comlink';
import { initTransferables, PythonSandbox, type LoadPyodide, type PythonInitResult, type PythonWorkerApi } from '../src/tools/python-sandbox';

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

let indexURL = '';
const sandbox = new PythonSandbox(async (options) => {
  const mod = (await import(/* @vite-ignore */ `${indexURL}pyodide.mjs`)) as { loadPyodide: LoadPyodide };
  return mod.loadPyodide(options);
}, BLOCKED_GLOBALS);

const api: PythonWorkerApi = {
  async init(url: string, options: { snapshot?: Uint8Array; makeSnapshot?: boolean } = {}): Promise<PythonInitResult> {
    indexURL = url;
    const r = await sandbox.init({ indexURL: url, ...options });
    return Comlink.transfer(r, initTransferables(r));
  },
  run: (code: string) => sandbox.run(code),
};

Comlink.expose(api);

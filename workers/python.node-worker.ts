// The Node side's Python worker thread (`cli train --tools python`): the same sandbox as the browser's
// module worker (src/tools/python-sandbox.ts), with Pyodide from the npm package (no download) and Node's
// own ways out taken away after it has loaded: fetch and friends, `process`, and this thread's Node modules
// that reach files, processes and sockets (src/tools/python-node-lockdown.ts).
import * as Comlink from 'comlink';
import nodeEndpoint from 'comlink/dist/esm/node-adapter.mjs';
import { parentPort } from 'node:worker_threads';
import { lockNodeHost } from '../src/tools/python-node-lockdown';
import { initTransferables, PythonSandbox, type LoadPyodide, type PythonInitResult, type PythonWorkerApi } from '../src/tools/python-sandbox';

// `process` is not removed but replaced, by lockNodeHost.
const BLOCKED_GLOBALS = ['fetch', 'WebSocket', 'EventSource', 'XMLHttpRequest', 'BroadcastChannel', 'navigator', 'WebSocketStream', 'require', 'module'];

const sandbox = new PythonSandbox(async (options) => {
  const { loadPyodide } = (await import('pyodide')) as unknown as { loadPyodide: LoadPyodide };
  return loadPyodide(options);
}, BLOCKED_GLOBALS);

const api: PythonWorkerApi = {
  async init(_url: string, options: { snapshot?: Uint8Array; makeSnapshot?: boolean } = {}): Promise<PythonInitResult> {
    // Pyodide finds its files beside its own module in node_modules.
    const r = await sandbox.init(options);
    lockNodeHost(import.meta.url);
    return Comlink.transfer(r, initTransferables(r));
  },
  run: (code: string) => sandbox.run(code),
};

if (!parentPort) throw new Error('python.node-worker: must run in a worker thread');
Comlink.expose(api, nodeEndpoint(parentPort));

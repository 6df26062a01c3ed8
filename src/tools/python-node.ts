// The Python tool in Node (`cli train --tools python`): the same PythonTool, time limit and one-worker-per-run
// rule as in the browser, on worker threads running workers/python.node-worker.ts with Pyodide from the npm
// package. Model code reaches no host file, command or socket and no JavaScript beyond what the tool hands it:
// Python's bridges to JS are cut (src/tools/python-bridges.ts), the thread's Node modules that reach the host
// are emptied and `process` replaced (src/tools/python-node-lockdown.ts), and JavaScript cannot be compiled
// from strings (src/tools/python-sandbox.ts).
import * as Comlink from 'comlink';
import nodeEndpoint from 'comlink/dist/esm/node-adapter.mjs';
import { Worker } from 'node:worker_threads';
import type { PythonWorkerApi } from './python-sandbox';
import { watchEnd } from '../util/worker-watch';
import { PythonTool, type PythonToolOptions, type PythonWorkerHandle } from './python';

const WORKER_URL = new URL('../../workers/python.node-boot.mjs', import.meta.url);

/** Starts one Python worker thread. Its entry loads the TypeScript worker through tsx. */
export function nodePythonWorker(): PythonWorkerHandle {
  // An empty environment of its own: model code must not find the host's secrets (tokens, paths) even in memory.
  const worker = new Worker(WORKER_URL, { name: 'python', stdout: false, stderr: false, env: {} });
  const watch = watchEnd('python', () => void worker.terminate(), (end) => {
    worker.on('error', (e: Error) => end(`an error: ${e.message}`));
    worker.on('exit', (code: number) => end(`it exited with code ${code}`));
  });
  return { api: Comlink.wrap<PythonWorkerApi>(nodeEndpoint(worker)), watch };
}

export function createNodePythonTool(options: Omit<PythonToolOptions, 'createWorker' | 'spawn' | 'indexURL'> = {}): PythonTool {
  // indexURL is only checked for its form: the worker thread finds Pyodide beside its npm module.
  return new PythonTool({ ...options, indexURL: 'node:pyodide/', spawn: nodePythonWorker });
}

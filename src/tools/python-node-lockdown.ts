// Takes the host away from a Node worker thread that runs model-written Python (#25.1), once Pyodide has
// loaded. Pyodide's runtime keeps Node's modules in closures Python can reach through libc: os.system() runs
// child_process.spawnSync, NODEFS calls fs, Node sockets use net. Removing globals cannot reach those closures,
// so the modules themselves are emptied: every function of this thread's fs, child_process, net, vm, ... (a
// worker thread has its own instances; the main thread's are untouched) throws. Nothing in the worker needs
// them after loading: Python's files are in memory, and comlink talks over the already-open parentPort.
import { createRequire, syncBuiltinESMExports } from 'node:module';

/**
 * Node modules that reach host files, processes, the network, native code or compile JavaScript. (Modules
 * nothing in the worker has loaded, like wasi or repl, are left alone: only a require could reach them.)
 */
const HOST_MODULES = [
  'fs',
  'fs/promises',
  'child_process',
  'net',
  'tls',
  'dgram',
  'dns',
  'dns/promises',
  'http',
  'https',
  'http2',
  'vm',
  'worker_threads',
  'cluster',
  'inspector',
  'os',
  'v8',
] as const;

/** process members that load native code, reach internal bindings, signal other processes or change the host. */
const PROCESS_REFUSED = ['binding', '_linkedBinding', 'dlopen', 'kill', 'chdir', 'setuid', 'setgid', 'seteuid', 'setegid', 'setgroups', 'initgroups', 'openStdin', 'setSourceMapsEnabled'] as const;

/**
 * A function that throws whatever it is called for. It keeps `original`'s prototype, so that Node's own lazy
 * `class … extends` of a module class still evaluates; constructing one throws.
 */
function refuser(what: string, original?: unknown): () => never {
  const stand = function () {
    throw new Error(`${what} is disabled in the Python tool's sandbox`);
  } as unknown as () => never;
  const prototype = typeof original === 'function' ? (original as { prototype?: unknown }).prototype : undefined;
  if (prototype && typeof prototype === 'object') Object.defineProperty(stand, 'prototype', { value: prototype, writable: false });
  return stand;
}

/** Makes every function exported by `mod` throw (its other members are data, not a way out). */
function empty(mod: Record<string, unknown>, name: string): void {
  for (const key of Object.getOwnPropertyNames(mod)) {
    const d = Object.getOwnPropertyDescriptor(mod, key);
    if (!d || typeof d.value !== 'function') continue;
    const stand = refuser(`node:${name}.${key}`, d.value);
    if (d.configurable) Object.defineProperty(mod, key, { value: stand, configurable: true, writable: false, enumerable: d.enumerable });
    else if (d.writable) mod[key] = stand;
  }
}

/**
 * Locks this worker thread's Node modules (and the `ws` package Pyodide uses for sockets) and the real
 * `process`, then puts `stand` in place of the global `process`. Call after Pyodide has loaded and before any
 * program runs; `fromUrl` is a module URL from which `ws` resolves as Pyodide resolves it.
 */
export function lockNodeHost(fromUrl: string): void {
  const require = createRequire(fromUrl);
  // Kept before node:module itself is emptied.
  const syncESMExports = syncBuiltinESMExports;
  let ws: Record<string, unknown> | undefined;
  try {
    ws = require('ws') as Record<string, unknown>;
  } catch {
    // Not installed: Pyodide has no WebSocket sockets in Node then.
  }
  const realProcess = require('node:process') as unknown as Record<string, unknown>;
  // All looked up before any is emptied: require itself goes through node:module.
  const modules: [string, Record<string, unknown>][] = [];
  for (const name of HOST_MODULES) {
    try {
      modules.push([name, require(`node:${name}`) as Record<string, unknown>]);
    } catch {
      // Not offered to worker threads: nothing to take away.
    }
  }
  for (const [name, mod] of modules) empty(mod, name);
  // node:module keeps require working (Emscripten's system() requires child_process, now empty, at each call);
  // what makes new loaders or hooks goes.
  const nodeModule = require('node:module') as Record<string, unknown>;
  for (const key of ['createRequire', 'register', 'registerHooks', 'runMain', 'enableCompileCache', 'syncBuiltinESMExports']) {
    if (typeof nodeModule[key] === 'function') Object.defineProperty(nodeModule, key, { value: refuser(`node:module.${key}`), configurable: true, writable: false });
  }
  // Emscripten's system() (Python's os.system) turns a throw into a fatal error that ends the interpreter and
  // the rest of the program's output; a failed spawn's answer makes it return 127 (command not found) instead.
  const childProcess = modules.find(([name]) => name === 'child_process')?.[1];
  if (childProcess) {
    const failed = () => ({ pid: 0, output: null, stdout: null, stderr: null, status: 127, signal: null, error: new Error("node:child_process.spawnSync is disabled in the Python tool's sandbox") });
    Object.defineProperty(childProcess, 'spawnSync', { value: failed, configurable: false, writable: false });
  }
  if (ws) empty(ws, 'ws');
  for (const key of PROCESS_REFUSED) {
    if (typeof realProcess[key] === 'function') Object.defineProperty(realProcess, key, { value: refuser(`process.${key}`), configurable: false, writable: false });
  }
  // `import { x } from 'node:fs'` bindings are copies; this makes them the refusing functions too.
  syncESMExports();
  // Emscripten's exit (Python's os._exit) sets `process.exitCode` on whatever the global is then; a stand-in
  // that takes the write keeps that from failing (#25.7), and offers nothing else.
  const stand = Object.freeze(Object.defineProperty(Object.create(null), 'exitCode', { get: () => undefined, set: () => undefined }));
  Object.defineProperty(globalThis, 'process', { value: stand, configurable: false, writable: false });
}

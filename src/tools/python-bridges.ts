// Cuts Python's bridges to JavaScript in a Python worker (browser module worker and Node worker thread alike),
// after Pyodide has loaded and before any model-written code runs (#25.1). Two layers, because Python can get
// around anything done in Python alone (sys.modules, importlib, gc, __subclasses__, ctypes):
//  1. Python holds no JS object that leads anywhere: the `js` and `pyodide_js` modules are unregistered and
//     dropped from sys.modules, so `import pyodide_js` (Pyodide's API: _module, _api, FS, mountNodeFS, ...)
//     and `import js` fail, and no module keeps them. What is left in Python's heap is webloop's
//     scheduleCallback (asyncio needs it), and whatever JS objects Python makes itself (to_js, create_proxy):
//     from those only JS built-ins are reachable, and compiling JS from strings is refused (python-sandbox.ts).
//  2. Pyodide's own JS objects lose what reaches the host, for whatever reaches them anyway (ctypes can call
//     into the runtime): mounting host folders (NODEFS, the native file system), Node sockets, loading
//     packages, scripts and shared libraries, running Python from JS. In Node, the worker's Node modules
//     themselves are locked too (python-node-lockdown.ts).
import type { PyodideAPI } from 'pyodide';

/** Python side of layer 1: no module, import hook or loaded module keeps a JsProxy that leads to JS. */
const DROP_JS_MODULES = `
import sys, gc, builtins, types, asyncio
import pyodide.webloop as _wl
from _pyodide._importhook import JsLoader
# asyncio.run and run_until_complete read one flag with \`from pyodide_js._api import config\` at each call.
# They get a plain Python copy of it through an import of their own, so that they keep working without the
# module (which would hand its caller Pyodide's whole API).
from pyodide_js._api import config as _config
_api_copy = types.SimpleNamespace(config=types.SimpleNamespace(enableRunUntilComplete=bool(_config.enableRunUntilComplete)))
def _import(name, globals=None, locals=None, fromlist=(), level=0, _real=builtins.__import__, _copy=_api_copy):
    return _copy if name == 'pyodide_js._api' else _real(name, globals, locals, fromlist, level)
_builtins = dict(builtins.__dict__, __import__=_import)
def _rebind(f):
    g = dict(f.__globals__, __builtins__=_builtins)
    n = types.FunctionType(f.__code__, g, f.__name__, f.__defaults__, f.__closure__)
    n.__kwdefaults__, n.__qualname__, n.__doc__, n.__wrapped__ = f.__kwdefaults__, f.__qualname__, f.__doc__, getattr(f, '__wrapped__', None)
    return n
_wl.WebLoop.run_until_complete = _rebind(_wl.WebLoop.run_until_complete)
if asyncio.run is _wl._run:
    asyncio.run = _wl._run = _rebind(_wl._run)
for _name in [n for n in sys.modules if n.split('.')[0] in ('js', 'pyodide_js')]:
    del sys.modules[_name]
# A JS module's attribute dict holds its spec, whose loader holds the module: a cycle through an object gc
# does not track, so it is never freed and gc.get_objects() would hand it back. Emptying them breaks it.
for _o in gc.get_objects():
    if isinstance(_o, dict) and isinstance(_o.get('__loader__'), JsLoader):
        _o.clear()
    elif type(_o).__name__ == 'ModuleSpec' and isinstance(_o.loader, JsLoader):
        _o.loader = None
import pyodide._package_loader as _loader
# A plain object of package names, but a JsProxy all the same: nothing in Python keeps one it does not need.
_loader.__dict__.pop('loadedPackages', None)
del _name, _o, _loader, JsLoader, _config, _api_copy, _import, _builtins, _rebind, _wl
gc.collect()
`;

/** Public API (pyodide_js) members that reach the host, load code, or run Python/JS on request. */
const PUBLIC_REFUSED = [
  'loadPackage',
  'loadPackagesFromImports',
  'runPython',
  'runPythonAsync',
  'registerJsModule',
  'unregisterJsModule',
  'registerComlink',
  'pyimport',
  'toPy',
  'unpackArchive',
  'mountNativeFS',
  'mountNodeFS',
  'useNodeSockFS',
  'makeMemorySnapshot',
  'setStdin',
  'setStdout',
  'setStderr',
  'setInterruptBuffer',
  'setDebug',
] as const;

/** Internal API (pyodide_js._api) members of the same kind. */
const INTERNAL_REFUSED = [
  'initializeNodeSockFS',
  'loadBinaryFile',
  'loadDynlib',
  'install',
  'rawRun',
  'runPythonInternal',
  'makeSnapshot',
  'restoreSnapshot',
  'saveState',
  'restoreState',
  'flushPackageManagerBuffers',
] as const;

/** Emscripten file systems other than the in-memory one: each reaches host files, IndexedDB or other workers. */
const HOST_FILESYSTEMS = ['NODEFS', 'NODERAWFS', 'IDBFS', 'WORKERFS', 'PROXYFS', 'NATIVEFS_ASYNC', 'OPFS'] as const;

/** The Emscripten FS calls that attach or sync such a file system, or fetch a file lazily over the network. */
const FS_REFUSED = ['mount', 'unmount', 'syncfs', 'createLazyFile', 'createPreloadedFile'] as const;

/** Module (Emscripten) members that load code or files from outside: shared libraries, scripts, packages. */
const MODULE_REFUSED = ['loadDynamicLibrary', 'loadWebAssemblyModule', 'FS_createPreloadedFile', 'FS_createLazyFile', 'FS_createDataFile', 'locateFile', 'instantiateWasm'] as const;

interface PyodideInternals {
  _api: Record<string, unknown> & { public_api?: Record<string, unknown> };
  _module: Record<string, unknown> & { FS: Record<string, unknown> & { filesystems: Record<string, unknown> } };
}

function refuser(what: string): () => never {
  return () => {
    throw new Error(`${what} is disabled in the Python tool's sandbox`);
  };
}

/** Replaces each member of `obj` named in `names` with a function that refuses, for good. */
function refuse(obj: Record<string, unknown>, names: readonly string[], where: string): void {
  for (const name of names) {
    if (!(name in obj)) continue;
    // Configurable: Pyodide's fatal-error handler redefines the public API's members; the original is gone anyway.
    Object.defineProperty(obj, name, { value: refuser(`${where}.${name}`), configurable: true, writable: false, enumerable: false });
  }
}

/** Deletes each member named in `names` (a value that is gone cannot be handed on, unlike a refusing stand-in). */
function remove(obj: Record<string, unknown>, names: readonly string[]): void {
  for (const name of names) {
    if (!(name in obj)) continue;
    if (!delete obj[name]) Object.defineProperty(obj, name, { value: undefined, configurable: false, writable: false });
  }
}

/**
 * Cuts Python's ways to JavaScript and, through Pyodide's runtime, to the host. Call once, after everything
 * the sandbox itself needs from Pyodide's API (stdout hooks, the runner, the version) is in hand: the API is
 * unusable afterwards.
 */
export function cutPythonBridges(pyodide: PyodideAPI): void {
  for (const name of ['js', 'pyodide_js']) {
    try {
      pyodide.unregisterJsModule(name);
    } catch {
      // Not registered (a Pyodide without it): nothing to cut.
    }
  }
  pyodide.runPython(DROP_JS_MODULES);
  const { _api: api, _module: module } = pyodide as unknown as PyodideInternals;
  refuse(pyodide as unknown as Record<string, unknown>, PUBLIC_REFUSED, 'pyodide');
  if (api.public_api && api.public_api !== (pyodide as unknown)) refuse(api.public_api, PUBLIC_REFUSED, 'pyodide');
  refuse(api, INTERNAL_REFUSED, 'pyodide._api');
  remove(api, ['_nodeSock', 'packageManager']);
  remove(module.FS.filesystems, HOST_FILESYSTEMS);
  remove(module, HOST_FILESYSTEMS);
  refuse(module.FS, FS_REFUSED, 'FS');
  refuse(module, MODULE_REFUSED, 'Module');
}

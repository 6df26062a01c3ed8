// The Python tool in a production build served from a sub-path: the pyodide-assets plugin must ship
// Pyodide's files where the built tool looks for them, and nothing may be fetched from outside the build.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { existsSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser } from 'playwright-core';
import { buildApp } from '../support/build-app';
import { launchChromium } from '../support/chromium';
import { serveStatic, type StaticServer } from '../support/static-server';
import { PYODIDE_FILES } from '../../build/pyodide-assets';

let server: StaticServer;
let browser: Browser;
const outDir = mkdtempSync(join(tmpdir(), 'agentflow-tools-dist-'));

beforeAll(async () => {
  // vite.config.ts brings the pyodide-assets plugin; only the page differs.
  await buildApp(outDir, 'vite.config.ts', { build: { rollupOptions: { input: { tools: 'tests/e2e/pages/tools-python.html' } } } });
  server = await serveStatic({ '/sub/path/': outDir });
  browser = await launchChromium();
});

afterAll(async () => {
  await browser?.close();
  await server?.close();
});

describe('python tool in the production build', () => {
  it('loads Pyodide from the copied files under the sub-path and runs code', async () => {
    for (const f of PYODIDE_FILES) expect(existsSync(join(outDir, 'pyodide', f)), f).toBe(true);
    const page = await browser.newPage();
    const errors: string[] = [];
    page.on('pageerror', (e) => errors.push(String(e)));
    await page.goto(`${server.url}/sub/path/tests/e2e/pages/tools-python.html`);
    await page.waitForFunction(() => (window as unknown as { pageReady?: boolean }).pageReady === true);
    const out = await page.evaluate(async () => {
      const tool = new (window as any).agentflow.PythonTool();
      const ctx = { signal: new AbortController().signal, timeoutMs: 20_000 };
      const r = await tool.run({ code: 'import math\nprint(math.factorial(20))' }, ctx);
      tool.dispose();
      return r;
    });
    expect(out).toEqual({ ok: true, output: '2432902008176640000' });
    expect(server.requests.filter((r) => r.startsWith('/sub/path/pyodide/')).sort()).toEqual(
      PYODIDE_FILES.map((f) => `/sub/path/pyodide/${f}`).sort(),
    );
    expect(server.requests.filter((r) => !r.startsWith('/sub/path/'))).toEqual([]);
    expect(errors).toEqual([]);
    await page.close();
  });
});

// The production build, served by a plain static server under a sub-path, loads in Chromium and shows
// the WebGPU capability report computed in a module worker.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser } from 'playwright-core';
import { launchChromium } from '../support/chromium';
import { serveStatic, type StaticServer } from '../support/static-server';
import { buildApp } from '../support/build-app';

let server: StaticServer;
let browser: Browser;
const outDir = mkdtempSync(join(tmpdir(), 'agentflow-dist-'));

beforeAll(async () => {
  await buildApp(outDir);
  server = await serveStatic({ '/some/sub/path/': outDir });
  browser = await launchChromium();
});

afterAll(async () => {
  await browser?.close();
  await server?.close();
});

describe('production build', () => {
  it('serves statically from a sub-path and shows the WebGPU report', async () => {
    const page = await browser.newPage();
    const errors: string[] = [];
    page.on('pageerror', (e) => errors.push(String(e)));
    await page.goto(`${server.url}/some/sub/path/#models`);
    const report = page.locator('agentflow-app gpu-capabilities [data-testid="gpu-report"]');
    await report.waitFor({ timeout: 60_000 });
    expect(await page.locator('gpu-capabilities [data-testid="f16"]').textContent()).toContain('no');
    expect(await report.textContent()).toMatch(/swiftshader/i);
    // Every asset came from under the sub-path: nothing asked the server's root.
    expect(server.requests.filter((r) => !r.startsWith('/some/sub/path/'))).toEqual([]);
    // The static assets in public/ ship with the build: the icon and the web app manifest, relative to the page.
    const manifest = await page.evaluate(async () => {
      const href = document.querySelector('link[rel="manifest"]')!.getAttribute('href')!;
      const m = (await (await fetch(href)).json()) as { icons: Array<{ src: string }> };
      const icon = await fetch(new URL(m.icons[0].src, new URL(href, location.href)));
      return { name: (m as { name?: string }).name, icon: icon.status, type: icon.headers.get('content-type') };
    });
    expect(manifest).toMatchObject({ name: 'AgentFlow in the browser', icon: 200 });
    expect(errors).toEqual([]);
    await page.screenshot({ path: join(outDir, 'home.png') });
    await page.close();
  });

  it('is built as production is: the shipped code has no dev-server path, and Pyodide ships beside it', () => {
    // A build made with import.meta.env.DEV = true looks for Pyodide under node_modules/, where no static host has it.
    const shipped = readdirSync(join(outDir, 'assets'), { recursive: true, encoding: 'utf8' }).filter((f) => f.endsWith('.js'));
    expect(shipped.length).toBeGreaterThan(0);
    expect(shipped.filter((f) => readFileSync(join(outDir, 'assets', f), 'utf8').includes('node_modules/'))).toEqual([]);
    expect(readdirSync(join(outDir, 'pyodide'))).toContain('pyodide.mjs');
  });

  it('tells a user without WebGPU what to do', async () => {
    const noGpu = await launchChromium({ webgpu: false });
    try {
      const page = await noGpu.newPage();
      await page.goto(`${server.url}/some/sub/path/#models`);
      const alert = page.locator('gpu-capabilities [role="alert"]');
      await alert.waitFor({ timeout: 60_000 });
      const text = (await alert.textContent()) ?? '';
      expect(text).toMatch(/WebGPU is not available/);
      expect(text).toMatch(/Chrome or Edge 113/);
    } finally {
      await noGpu.close();
    }
  });
});

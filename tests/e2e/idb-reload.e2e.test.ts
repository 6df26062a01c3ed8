// IndexedDB data written through the app's store (idb) survives a page reload in real Chromium.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createServer, type ViteDevServer } from 'vite';
import type { Browser } from 'playwright-core';
import { launchChromium } from '../support/chromium';

let vite: ViteDevServer;
let browser: Browser;
let base: string;

beforeAll(async () => {
  vite = await createServer({ configFile: 'vite.config.ts', server: { port: 0, host: '127.0.0.1' }, logLevel: 'error' });
  await vite.listen();
  const addr = vite.httpServer?.address();
  if (!addr || typeof addr === 'string') throw new Error('vite has no port');
  base = `http://127.0.0.1:${addr.port}`;
  browser = await launchChromium();
});

afterAll(async () => {
  await browser?.close();
  await vite?.close();
});

describe('IndexedDB persistence', () => {
  it('keeps a value written with idb across a reload', async () => {
    const page = await browser.newPage();
    await page.goto(`${base}/tests/e2e/pages/idb.html`);
    await page.waitForFunction(() => (window as unknown as { storeReady?: boolean }).storeReady === true);
    const value = { nonce: Math.random(), nested: [1, 2, 3], when: Date.now() };
    await page.evaluate(async (v) => {
      await (window as any).store.putSetting('e2e-reload', v);
    }, value);
    await page.reload();
    await page.waitForFunction(() => (window as unknown as { storeReady?: boolean }).storeReady === true);
    const got = await page.evaluate(() => (window as any).store.getSetting('e2e-reload'));
    expect(got).toEqual(value);
    const missing = await page.evaluate(() => (window as any).store.getSetting('never-written'));
    expect(missing).toBeUndefined();
    await page.close();
  });
});

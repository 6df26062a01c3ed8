// IndexedDB data written through the app's store (idb) survives a page reload in real Chromium.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser } from 'playwright-core';
import { launchChromium } from '../support/chromium';
import { startDevServer, type DevServer } from '../support/vite-server';

let vite: DevServer;
let browser: Browser;
let base: string;

beforeAll(async () => {
  vite = await startDevServer();
  base = vite.base;
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

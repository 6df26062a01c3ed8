// IndexedDB data written through the app's store (idb) survives a page reload in real Chromium.
import { describe, expect, it } from 'vitest';
import { devServerAndChromium } from '../support/dev-browser';

const dev = devServerAndChromium();

describe('IndexedDB persistence', () => {
  it('keeps a value written with idb across a reload', async () => {
    const page = await dev.browser.newPage();
    await page.goto(`${dev.base}/tests/e2e/pages/idb.html`);
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

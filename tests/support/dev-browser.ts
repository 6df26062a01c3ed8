// The Vite dev server and a headless Chromium for an e2e file that loads pages from the source tree:
// started before the file's tests and closed after them.
import { afterAll, beforeAll } from 'vitest';
import type { Browser } from 'playwright-core';
import { launchChromium } from './chromium';
import { startDevServer, type DevServer } from './vite-server';

export interface DevBrowser {
  /** The dev server's origin, e.g. http://127.0.0.1:41234. */
  readonly base: string;
  readonly browser: Browser;
}

/**
 * Call at the top of a test file, before any beforeAll that uses them: `base` and `browser` are set once the
 * hooks it registers have run. `launch` goes to launchChromium (`{webgpu: false}`: a browser without WebGPU).
 */
export function devServerAndChromium(launch: Parameters<typeof launchChromium>[0] = {}): DevBrowser {
  let vite: DevServer | undefined;
  const dev = {} as { base: string; browser: Browser | undefined };
  beforeAll(async () => {
    vite = await startDevServer();
    dev.base = vite.base;
    dev.browser = await launchChromium(launch);
  });
  afterAll(async () => {
    await dev.browser?.close();
    await vite?.close();
  });
  return dev as DevBrowser;
}

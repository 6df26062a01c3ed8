// Launches Debian's Chromium through playwright-core: never a downloaded browser.
import { chromium, type Browser } from 'playwright-core';

export const CHROMIUM_PATH = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
export const CHROMIUM_ARGS = [
  '--enable-unsafe-webgpu',
  '--enable-features=Vulkan',
  '--no-sandbox',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--disable-quic',
  '--no-first-run',
  '--disable-dev-shm-usage',
];

/** `webgpu: false` starts Chromium with WebGPU switched off, to test what a user without it sees. */
export function launchChromium(opts: { webgpu?: boolean } = {}): Promise<Browser> {
  const args =
    opts.webgpu === false
      ? [...CHROMIUM_ARGS.filter((a) => a !== '--enable-unsafe-webgpu' && a !== '--enable-features=Vulkan'), '--disable-features=WebGPU,Vulkan', '--disable-gpu']
      : CHROMIUM_ARGS;
  return chromium.launch({ executablePath: CHROMIUM_PATH, headless: true, args });
}

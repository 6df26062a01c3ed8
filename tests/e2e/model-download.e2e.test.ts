// Loading a checkpoint from a hub-style URL in real Chromium: streamed with progress, stored in Cache
// Storage so a reload downloads no weights, and failed or interrupted downloads leave nothing cached.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { statSync } from 'node:fs';
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { devServerAndChromium } from '../support/dev-browser';
import { serveHub, type HubServer } from '../support/hub-server';
import { loadCheckpoint } from '../../src/engine/load-checkpoint';
import { directorySource } from '../../src/io/sources';
import { TINY } from '../../src/io/test-fixtures';

const dev = devServerAndChromium({ webgpu: false });
let hub: HubServer;
let page: Page;

beforeAll(async () => {
  hub = await serveHub({ 'test-org/qwen2-tiny': TINY, 'test-org/cut': TINY });
  page = await dev.browser.newPage();
  await page.goto(`${dev.base}/tests/e2e/pages/model-source.html`);
  await page.waitForFunction(() => (window as unknown as { hubReady?: boolean }).hubReady === true);
});

afterAll(async () => {
  await hub?.close();
});

type LoadResult = { config: { hiddenSize: number }; count: number; sum: number; events: Array<{ file: string; bytesDone: number; bytesTotal: number; fromCache: boolean }> };
const load = (base: string) => page.evaluate((b) => (window as any).hub.load(b), base) as Promise<LoadResult>;

function nodeChecksum(ck: Awaited<ReturnType<typeof loadCheckpoint>>): number {
  let sum = 0;
  for (const name of [...ck.tensors.keys()].sort()) {
    const f = ck.tensors.get(name)!.f32();
    for (let i = 0; i < f.length; i++) sum += f[i] * ((i % 7) + 1);
  }
  return sum;
}

describe('urlSource in Chromium', () => {
  it('downloads with progress, then loads from Cache Storage with zero weight requests', async () => {
    const base = `${hub.url}/test-org/qwen2-tiny/resolve/main/`;
    const size = statSync(join(TINY, 'model.safetensors')).size;
    const local = await loadCheckpoint(directorySource(TINY));
    const expected = nodeChecksum(local);

    const first = await load(base);
    expect(first.count).toBe(local.tensors.size);
    expect(first.config.hiddenSize).toBe(64);
    expect(first.sum).toBe(expected);
    const w1 = first.events.filter((e) => e.file === 'model.safetensors');
    expect(w1.at(-1)).toEqual({ file: 'model.safetensors', bytesDone: size, bytesTotal: size, fromCache: false });
    expect(hub.requests.filter((r) => r.endsWith('/model.safetensors'))).toHaveLength(1);

    // A reload keeps Cache Storage: the second load must not ask the server for config or weights.
    await page.reload();
    await page.waitForFunction(() => (window as unknown as { hubReady?: boolean }).hubReady === true);
    hub.requests.length = 0;
    const second = await load(base);
    expect(second.sum).toBe(expected);
    // Absent optional files (tokenizer.json, ...) are remembered too: no request at all.
    expect(hub.requests).toEqual([]);
    const w2 = second.events.filter((e) => e.file === 'model.safetensors');
    expect(w2.at(-1)).toEqual({ file: 'model.safetensors', bytesDone: size, bytesTotal: size, fromCache: true });
  });

  it('leaves no cache entry after an interrupted download or an HTTP error, and names URL and status', async () => {
    const base = `${hub.url}/test-org/cut/resolve/main/`;
    const path = '/test-org/cut/resolve/main/model.safetensors';
    hub.faults.set(path, { cutAfter: 50_000 });
    const cut = (await page.evaluate(([b]) => (window as any).hub.read(b, 'model.safetensors'), [base])) as { ok: boolean; error?: string };
    expect(cut.ok).toBe(false);
    expect(cut.error).toContain(`${base}model.safetensors`);
    expect(cut.error).toMatch(/interrupted|cut short/);
    expect(await page.evaluate(() => (window as any).hub.cachedUrls())).not.toContain(`${base}model.safetensors`);

    hub.faults.set(path, { status: 503 });
    const err = (await page.evaluate(([b]) => (window as any).hub.read(b, 'model.safetensors'), [base])) as { ok: boolean; error?: string };
    expect(err).toEqual({ ok: false, error: `download of ${base}model.safetensors failed: HTTP 503 Service Unavailable` });
    expect(await page.evaluate(() => (window as any).hub.cachedUrls())).not.toContain(`${base}model.safetensors`);

    // Once the server recovers the same file downloads whole and is cached.
    hub.faults.delete(path);
    const ok = (await page.evaluate(([b]) => (window as any).hub.read(b, 'model.safetensors'), [base])) as { ok: boolean; n?: number };
    expect(ok).toEqual({ ok: true, n: statSync(join(TINY, 'model.safetensors')).size });
    expect(await page.evaluate(() => (window as any).hub.cachedUrls())).toContain(`${base}model.safetensors`);
  });
});

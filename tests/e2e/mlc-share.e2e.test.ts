// One download for both engines, in real Chromium: the planner reads a web-llm (MLC) model from
// web-llm's Cache Storage when web-llm has it (no request at all), and otherwise downloads it once into
// web-llm's caches under web-llm's keys, where web-llm's own lookup (hasModelInCache) finds it. The
// scores are the fixture's float64 expected.json logprobs, so the cached bytes are the model's.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { devServerAndChromium } from '../support/dev-browser';
import { serveHub, type HubServer } from '../support/hub-server';
import { maxAbsDiff } from '../support/compare';
import { TINY_MLC, type MlcFixtureExpected } from '../support/qwen2-fixture';

const dev = devServerAndChromium();
let hub: HubServer;
let page: Page;

const expected = JSON.parse(readFileSync(join(TINY_MLC, 'expected.json'), 'utf8')) as MlcFixtureExpected;
const seqs = expected.forward.map((f) => f.tokens);
type LoadResult = { logprobs: number[][]; events: Array<{ file: string; bytesDone: number; bytesTotal: number; fromCache: boolean }>; q4: boolean };
const load = (base: string, backend = 'cache') => page.evaluate(([b, s, k]) => (window as any).mlc.load(b, s, k), [base, seqs, backend] as const) as Promise<LoadResult>;
const keys = (scope: string) => page.evaluate((s) => (window as any).mlc.keys(s), scope) as Promise<string[]>;

function expectFixtureScores(r: LoadResult): void {
  expect(r.q4).toBe(true);
  expected.forward.forEach((f, i) => expect(maxAbsDiff(r.logprobs[i], f.logprobs_base)).toBeLessThan(2e-3));
}

beforeAll(async () => {
  hub = await serveHub({ 'mlc-ai/tiny-q4f16_1-MLC': TINY_MLC, 'mlc-ai/idb-q4f16_1-MLC': TINY_MLC, 'mlc-ai/corrupt-q4f16_1-MLC': TINY_MLC });
  page = await dev.browser.newPage();
  await page.goto(`${dev.base}/tests/e2e/pages/mlc-share.html`);
  await page.waitForFunction(() => (window as unknown as { mlcReady?: boolean }).mlcReady === true);
}, 120_000);

afterAll(async () => {
  await hub?.close();
});

describe('planner and web-llm share the MLC download', () => {
  it('loads from what web-llm cached, with zero requests', async () => {
    // 'gone' is not served: every request to it is a 404, so only the cache can supply it.
    const gone = `${hub.url}/mlc-ai/gone-q4f16_1-MLC/resolve/main/`;
    await page.evaluate(([from, to]) => (window as any).mlc.prepopulate(from, to), [`${hub.url}/mlc-ai/tiny-q4f16_1-MLC/resolve/main/`, gone]);
    hub.requests.length = 0;
    const r = await load(gone);
    expect(hub.requests).toEqual([]);
    expectFixtureScores(r);
    expect(r.events.filter((e) => e.file === 'params_shard_0.bin').every((e) => e.fromCache)).toBe(true);
  }, 120_000);

  it('downloads once into web-llm caches under web-llm keys, then loads again with no request', async () => {
    const repo = `${hub.url}/mlc-ai/tiny-q4f16_1-MLC`;
    const base = `${repo}/resolve/main/`;
    expect(await page.evaluate((m) => (window as any).mlc.webllmHas(m), repo)).toBe(false);
    hub.requests.length = 0;
    // The repo URL as web-llm's model records give it (no /resolve/main/): the same keys come out.
    const first = await load(repo);
    expectFixtureScores(first);
    const shard = '/mlc-ai/tiny-q4f16_1-MLC/resolve/main/params_shard_0.bin';
    expect(hub.requests.filter((p) => p === shard)).toHaveLength(1);
    const size = statSync(join(TINY_MLC, 'params_shard_0.bin')).size;
    expect(first.events.filter((e) => e.file === 'params_shard_0.bin').at(-1)).toEqual({ file: 'params_shard_0.bin', bytesDone: size, bytesTotal: size, fromCache: false });
    expect(await keys('webllm/model')).toEqual(expect.arrayContaining([`${base}tensor-cache.json`, `${base}params_shard_0.bin`]));
    expect(await keys('webllm/config')).toContain(`${base}mlc-chat-config.json`);
    // web-llm's own lookup now finds the model.
    expect(await page.evaluate((m) => (window as any).mlc.webllmHas(m), repo)).toBe(true);

    await page.reload();
    await page.waitForFunction(() => (window as unknown as { mlcReady?: boolean }).mlcReady === true);
    hub.requests.length = 0;
    expectFixtureScores(await load(base));
    expect(hub.requests).toEqual([]);
  }, 120_000);

  it("shares web-llm's IndexedDB backend (cacheBackend 'indexeddb') the same way", async () => {
    // A repo path of its own, so nothing the Cache Storage tests stored can answer for it.
    const repo = `${hub.url}/mlc-ai/idb-q4f16_1-MLC`;
    const base = `${repo}/resolve/main/`;
    expect(await page.evaluate((m) => (window as any).mlc.webllmHas(m, 'indexeddb'), repo)).toBe(false);
    hub.requests.length = 0;
    expectFixtureScores(await load(repo, 'indexeddb'));
    expect(hub.requests.filter((p) => p.endsWith('/params_shard_0.bin'))).toHaveLength(1);
    expect(await page.evaluate((s) => (window as any).mlc.idbKeys(s), 'webllm/model')).toEqual(expect.arrayContaining([`${base}tensor-cache.json`, `${base}params_shard_0.bin`]));
    // web-llm's own lookup, on its IndexedDB backend, finds every shard; its Cache Storage one does not.
    expect(await page.evaluate((m) => (window as any).mlc.webllmHas(m, 'indexeddb'), repo)).toBe(true);
    expect(await page.evaluate((m) => (window as any).mlc.webllmHas(m, 'cache'), repo)).toBe(false);

    await page.reload();
    await page.waitForFunction(() => (window as unknown as { mlcReady?: boolean }).mlcReady === true);
    hub.requests.length = 0;
    expectFixtureScores(await load(base, 'indexeddb'));
    expect(hub.requests).toEqual([]);
  }, 120_000);

  it("a shard in web-llm's cache that does not match its md5sum fails the load naming it, and is downloaded again next time", async () => {
    const repo = `${hub.url}/mlc-ai/corrupt-q4f16_1-MLC`;
    const base = `${repo}/resolve/main/`;
    expectFixtureScores(await load(repo));
    await page.evaluate((b) => (window as any).mlc.corruptShard(b), base);
    hub.requests.length = 0;
    await expect(load(repo)).rejects.toThrow(/params_shard_0\.bin in .* is corrupt: it has MD5 [0-9a-f]{32} but tensor-cache\.json lists [0-9a-f]{32}\. The stored copy was deleted: load the model again to download it afresh/);
    expect(hub.requests).toEqual([]);
    expect(await keys('webllm/model')).not.toContain(`${base}params_shard_0.bin`);
    expectFixtureScores(await load(repo));
    expect(hub.requests).toEqual(['/mlc-ai/corrupt-q4f16_1-MLC/resolve/main/params_shard_0.bin']);
  }, 120_000);
});


// sharedUrlSource's routing with a stubbed fetch and an in-memory Cache Storage (Node has none; the real
// one, and web-llm's own lookup over it, are covered in Chromium by tests/e2e/mlc-share.e2e.test.ts).
import { afterEach, describe, expect, it, vi } from 'vitest';
import 'fake-indexeddb/auto';
import { IDBFactory } from 'fake-indexeddb';
import { openDB } from 'idb';
import { MissingFileError } from './sources.ts';
import { memoryCaches } from '../../tests/support/memory-caches.ts';
import { sharedUrlSource, webllmCacheFor, webllmModelUrl, modelUrlSource } from './webllm-cache.ts';

const REPO = 'https://hub.example/mlc-ai/Tiny-q4f16_1-MLC';
const BASE = `${REPO}/resolve/main/`;
const TENSOR_CACHE = { metadata: { ParamSize: 1 }, records: [{ dataPath: 'params_shard_0.bin', nbytes: 300, records: [] }] };
const FILES: Record<string, Uint8Array> = {
  'tensor-cache.json': new TextEncoder().encode(JSON.stringify(TENSOR_CACHE)),
  'mlc-chat-config.json': new TextEncoder().encode('{"model_type":"qwen2"}'),
  'params_shard_0.bin': new Uint8Array(300).map((_, i) => i & 255),
};

function hub() {
  const urls: string[] = [];
  const fetch = async (u: RequestInfo | URL) => {
    const url = String(u);
    urls.push(url);
    const f = FILES[url.slice(BASE.length)];
    return f ? new Response(f.slice(), { headers: { 'content-length': String(f.byteLength) } }) : new Response('no', { status: 404 });
  };
  return { urls, fetch: fetch as typeof globalThis.fetch };
}

afterEach(() => vi.unstubAllGlobals());

describe('web-llm cache keys', () => {
  it('makes the model URL as web-llm does (cleanModelUrl)', () => {
    expect(webllmModelUrl(REPO)).toBe(BASE);
    expect(webllmModelUrl(`${REPO}/`)).toBe(BASE);
    expect(webllmModelUrl(`${REPO}/resolve/v2/`)).toBe(`${REPO}/resolve/v2/`);
  });

  it('routes the files web-llm loads to its caches and nothing else', () => {
    expect(webllmCacheFor('mlc-chat-config.json')).toBe('webllm/config');
    for (const f of ['tensor-cache.json', 'params_shard_0.bin', 'params_shard_41.bin', 'tokenizer.json', 'tokenizer.model']) expect(webllmCacheFor(f)).toBe('webllm/model');
    for (const f of ['config.json', 'tokenizer_config.json', 'ndarray-cache.json', 'model.safetensors', 'params_shard_x.bin']) expect(webllmCacheFor(f)).toBeNull();
  });
});

describe('sharedUrlSource', () => {
  it("downloads into web-llm's caches once, remembers missing files only in its own cache", async () => {
    const caches = memoryCaches();
    vi.stubGlobal('caches', caches);
    const h = hub();
    const src = sharedUrlSource(REPO, { fetch: h.fetch });
    expect(await src.knownFormat()).toBeNull();
    expect(await src.readBytes('params_shard_0.bin')).toEqual(FILES['params_shard_0.bin']);
    expect(await src.readJson('mlc-chat-config.json')).toEqual({ model_type: 'qwen2' });
    await expect(src.readBytes('tokenizer.json')).rejects.toBeInstanceOf(MissingFileError);
    await expect(src.readBytes('config.json')).rejects.toBeInstanceOf(MissingFileError);
    expect(h.urls).toEqual([`${BASE}params_shard_0.bin`, `${BASE}mlc-chat-config.json`, `${BASE}tokenizer.json`, `${BASE}config.json`]);
    expect(caches.dump()).toEqual({
      'webllm/model': [`${BASE}params_shard_0.bin`],
      'webllm/config': [`${BASE}mlc-chat-config.json`],
      'agentflow-models': [`${BASE}config.json`, `${BASE}tokenizer.json`],
    });
    // Everything again: no request, and the format is known without one.
    h.urls.length = 0;
    const again = sharedUrlSource(`${REPO}/`, { fetch: h.fetch });
    expect(await again.knownFormat()).toBe('mlc');
    const events: Array<{ fromCache: boolean }> = [];
    expect(await again.readBytes('params_shard_0.bin', (p) => events.push(p))).toEqual(FILES['params_shard_0.bin']);
    expect(events.length).toBeGreaterThan(0);
    expect(events.every((e) => e.fromCache)).toBe(true);
    await expect(again.readBytes('tokenizer.json')).rejects.toBeInstanceOf(MissingFileError);
    expect(h.urls).toEqual([]);
  });

  it('replaces a damaged web-llm entry (body shorter than its Content-Length)', async () => {
    const caches = memoryCaches();
    vi.stubGlobal('caches', caches);
    await (await caches.open('webllm/model')).put(`${BASE}params_shard_0.bin`, new Response(new Uint8Array(10), { headers: { 'content-length': '300' } }));
    const h = hub();
    expect(await sharedUrlSource(REPO, { fetch: h.fetch }).readBytes('params_shard_0.bin')).toEqual(FILES['params_shard_0.bin']);
    expect(h.urls).toEqual([`${BASE}params_shard_0.bin`]);
    const stored = await (await caches.open('webllm/model')).match(`${BASE}params_shard_0.bin`);
    expect(new Uint8Array(await stored!.arrayBuffer())).toEqual(FILES['params_shard_0.bin']);
  });
});

/** web-llm's ArtifactIndexedDBCache records: database = scope, store 'urls', { url, data }. */
async function idbRecords(factory: IDBFactory, scope: string): Promise<Array<{ url: string; data: unknown }>> {
  vi.stubGlobal('indexedDB', factory);
  const db = await openDB(scope, 1);
  try {
    return (await db.getAll('urls')) as Array<{ url: string; data: unknown }>;
  } finally {
    db.close();
  }
}

describe("sharedUrlSource over web-llm's IndexedDB backend", () => {
  it('stores files as web-llm does (JSON parsed, the rest as ArrayBuffer) and reads them back with no request', async () => {
    const factory = new IDBFactory();
    vi.stubGlobal('indexedDB', factory);
    vi.stubGlobal('caches', memoryCaches());
    const h = hub();
    const src = sharedUrlSource(REPO, { fetch: h.fetch, webllmCache: 'indexeddb' });
    expect(await src.knownFormat()).toBeNull();
    expect(await src.readJson('tensor-cache.json')).toEqual(TENSOR_CACHE);
    expect(await src.readBytes('params_shard_0.bin')).toEqual(FILES['params_shard_0.bin']);
    expect(await src.readJson('mlc-chat-config.json')).toEqual({ model_type: 'qwen2' });
    expect(h.urls).toHaveLength(3);

    const model = await idbRecords(factory, 'webllm/model');
    expect(model.map((r) => r.url).sort()).toEqual([`${BASE}params_shard_0.bin`, `${BASE}tensor-cache.json`]);
    const byUrl = new Map(model.map((r) => [r.url, r.data]));
    // fetchWithCache(url, "json") keeps the parsed object; "arraybuffer" keeps the bytes.
    expect(byUrl.get(`${BASE}tensor-cache.json`)).toEqual(TENSOR_CACHE);
    expect(byUrl.get(`${BASE}params_shard_0.bin`)).toBeInstanceOf(ArrayBuffer);
    expect(new Uint8Array(byUrl.get(`${BASE}params_shard_0.bin`) as ArrayBuffer)).toEqual(FILES['params_shard_0.bin']);
    const config = await idbRecords(factory, 'webllm/config');
    expect(config.map((r) => r.url)).toEqual([`${BASE}mlc-chat-config.json`]);

    h.urls.length = 0;
    const again = sharedUrlSource(`${REPO}/`, { fetch: h.fetch, webllmCache: 'indexeddb' });
    expect(await again.knownFormat()).toBe('mlc');
    const events: Array<{ fromCache: boolean }> = [];
    expect(await again.readBytes('params_shard_0.bin', (p) => events.push(p))).toEqual(FILES['params_shard_0.bin']);
    expect(await again.readJson('tensor-cache.json')).toEqual(TENSOR_CACHE);
    expect(events.length).toBeGreaterThan(0);
    expect(events.every((e) => e.fromCache)).toBe(true);
    expect(h.urls).toEqual([]);
  });

  it('reads records web-llm wrote, and refetches one it left with null data', async () => {
    const factory = new IDBFactory();
    vi.stubGlobal('indexedDB', factory);
    vi.stubGlobal('caches', memoryCaches());
    // What ArtifactIndexedDBCache.addToIndexedDB leaves: the database made by its onupgradeneeded.
    const db = await openDB('webllm/model', 1, { upgrade: (d) => void d.createObjectStore('urls', { keyPath: 'url' }) });
    await db.add('urls', { url: `${BASE}tensor-cache.json`, data: TENSOR_CACHE });
    await db.add('urls', { url: `${BASE}params_shard_0.bin`, data: null });
    db.close();
    const h = hub();
    const src = sharedUrlSource(REPO, { fetch: h.fetch, webllmCache: 'indexeddb' });
    expect(await src.readJson('tensor-cache.json')).toEqual(TENSOR_CACHE);
    expect(await src.readBytes('params_shard_0.bin')).toEqual(FILES['params_shard_0.bin']);
    expect(h.urls).toEqual([`${BASE}params_shard_0.bin`]);
    const shard = (await idbRecords(factory, 'webllm/model')).find((r) => r.url === `${BASE}params_shard_0.bin`);
    expect(new Uint8Array(shard!.data as ArrayBuffer)).toEqual(FILES['params_shard_0.bin']);
  });

  it("leaves web-llm's caches alone with webllmCache 'none'", async () => {
    const factory = new IDBFactory();
    vi.stubGlobal('indexedDB', factory);
    const caches = memoryCaches();
    vi.stubGlobal('caches', caches);
    const h = hub();
    const src = sharedUrlSource(REPO, { fetch: h.fetch, webllmCache: 'none' });
    expect(await src.readBytes('params_shard_0.bin')).toEqual(FILES['params_shard_0.bin']);
    expect(await src.knownFormat()).toBeNull();
    expect(caches.dump()).toEqual({ 'agentflow-models': [`${BASE}params_shard_0.bin`] });
    expect(await factory.databases()).toEqual([]);
  });
});

describe('modelUrlSource', () => {
  it('reads a plain folder URL as it is, and a hub URL through the shared source', async () => {
    vi.stubGlobal('caches', memoryCaches());
    const urls: string[] = [];
    const fetch = (async (u: RequestInfo | URL) => (urls.push(String(u)), new Response('{"a":1}'))) as typeof globalThis.fetch;
    expect(await modelUrlSource('https://site.example/models/tiny', { fetch }).readJson('config.json')).toEqual({ a: 1 });
    expect(await modelUrlSource(BASE, { fetch }).readJson('config.json')).toEqual({ a: 1 });
    expect(urls).toEqual(['https://site.example/models/tiny/config.json', `${BASE}config.json`]);
  });
});

// MLC shards are checked against tensor-cache.json's md5sum as they are read: from a folder, and from
// web-llm's caches (Cache Storage and IndexedDB, stubbed here; Node has neither), where a corrupt entry is
// deleted so that the next load downloads the shard again.
import { afterEach, describe, expect, it, vi } from 'vitest';
import 'fake-indexeddb/auto';
import { IDBFactory } from 'fake-indexeddb';
import { openDB } from 'idb';
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { memoryCaches } from '../../tests/support/memory-caches.ts';
import { copyFixture, flipByte } from '../../tests/support/damaged-models.ts';
import { loadCheckpoint } from '../engine/load-checkpoint.ts';
import { CorruptShardError, loadMlcCheckpoint, parseTensorCache } from './mlc.ts';
import { directorySource } from './sources.ts';
import { sharedUrlSource } from './webllm-cache.ts';
import { TINY_MLC } from './test-fixtures.ts';

const REPO = 'https://hub.example/mlc-ai/Tiny-q4f16_1-MLC';
const BASE = `${REPO}/resolve/main/`;
const SHARD = `${BASE}params_shard_0.bin`;
const LISTED_MD5 = JSON.parse(readFileSync(join(TINY_MLC, 'tensor-cache.json'), 'utf8')).records[0].md5sum as string;

/** The tiny MLC fixture served at BASE; records the URLs fetched. */
function hub() {
  const files = new Map(readdirSync(TINY_MLC, { withFileTypes: true }).filter((f) => f.isFile()).map((f) => [f.name, readFileSync(join(TINY_MLC, f.name))]));
  const urls: string[] = [];
  const fetch = async (u: RequestInfo | URL) => {
    const url = String(u);
    urls.push(url);
    const f = files.get(url.slice(BASE.length));
    return f ? new Response(new Uint8Array(f), { headers: { 'content-length': String(f.byteLength) } }) : new Response('no', { status: 404 });
  };
  return { urls, fetch: fetch as typeof globalThis.fetch };
}

const corrupted = () => {
  const b = new Uint8Array(readFileSync(join(TINY_MLC, 'params_shard_0.bin')));
  b[1000] ^= 0x10;
  return b;
};

afterEach(() => vi.unstubAllGlobals());

describe("MLC shards against tensor-cache.json's md5sum", () => {
  it('a folder: a flipped byte fails the load naming the shard, both digests and what to do', async () => {
    const dir = copyFixture(TINY_MLC);
    flipByte(join(dir, 'params_shard_0.bin'), 1000);
    const err = await loadMlcCheckpoint(directorySource(dir)).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(CorruptShardError);
    expect((err as CorruptShardError).file).toBe('params_shard_0.bin');
    expect((err as Error).message).toMatch(
      new RegExp(`^params_shard_0\\.bin in .*model is corrupt: it has MD5 [0-9a-f]{32} but tensor-cache\\.json lists ${LISTED_MD5}\\. Replace it with a fresh download of the build\\.$`),
    );
    await expect(loadCheckpoint(directorySource(dir))).rejects.toThrow(CorruptShardError);
  });

  it("web-llm's Cache Storage: a corrupt cached shard fails naming it, is deleted, and the next load downloads it and loads", async () => {
    const caches = memoryCaches();
    vi.stubGlobal('caches', caches);
    const h = hub();
    (await loadCheckpoint(sharedUrlSource(REPO, { fetch: h.fetch }))).release();
    await (await caches.open('webllm/model')).put(SHARD, new Response(corrupted(), { headers: { 'content-length': '67968' } }));
    h.urls.length = 0;
    const err = await loadCheckpoint(sharedUrlSource(REPO, { fetch: h.fetch })).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(CorruptShardError);
    expect((err as Error).message).toMatch(
      new RegExp(`^params_shard_0\\.bin in ${BASE.replace(/[./]/g, '\\$&')} is corrupt: it has MD5 [0-9a-f]{32} but tensor-cache\\.json lists ${LISTED_MD5}\\. The stored copy was deleted: load the model again to download it afresh\\.$`),
    );
    expect(h.urls).not.toContain(SHARD); // it was read from the cache
    expect(await (await caches.open('webllm/model')).match(SHARD)).toBeUndefined();
    const ck = await loadCheckpoint(sharedUrlSource(REPO, { fetch: h.fetch }));
    expect(ck.format).toBe('mlc-q4f16_1');
    expect(h.urls.filter((u) => u === SHARD)).toHaveLength(1);
    const stored = await (await caches.open('webllm/model')).match(SHARD);
    expect(new Uint8Array(await stored!.arrayBuffer())).toEqual(new Uint8Array(readFileSync(join(TINY_MLC, 'params_shard_0.bin'))));
  });

  it("web-llm's IndexedDB backend: the corrupt record is deleted and the next load downloads the shard", async () => {
    const factory = new IDBFactory();
    vi.stubGlobal('indexedDB', factory);
    vi.stubGlobal('caches', memoryCaches());
    const h = hub();
    (await loadCheckpoint(sharedUrlSource(REPO, { fetch: h.fetch, webllmCache: 'indexeddb' }))).release();
    const db = await openDB('webllm/model', 1);
    await db.put('urls', { url: SHARD, data: corrupted().buffer });
    const err = await loadCheckpoint(sharedUrlSource(REPO, { fetch: h.fetch, webllmCache: 'indexeddb' })).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(CorruptShardError);
    expect((err as CorruptShardError).forgotten).toBe(true);
    expect(await db.get('urls', SHARD)).toBeUndefined();
    h.urls.length = 0;
    (await loadCheckpoint(sharedUrlSource(REPO, { fetch: h.fetch, webllmCache: 'indexeddb' }))).release();
    expect(h.urls).toEqual([SHARD]);
    db.close();
  });

  it('refuses an md5sum that is not 32 hex digits, naming the shard', () => {
    const manifest = (md5sum: unknown) => ({ records: [{ dataPath: 'params_shard_0.bin', format: 'raw-shard', nbytes: 0, md5sum, records: [] }] });
    expect(() => parseTensorCache(manifest('abc'))).toThrow(/shard params_shard_0\.bin has md5sum "abc", not 32 hex digits/);
    expect(parseTensorCache(manifest(LISTED_MD5.toUpperCase())).shards[0].md5sum).toBe(LISTED_MD5);
  });
});

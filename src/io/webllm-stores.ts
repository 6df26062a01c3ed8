// web-llm's two persistent caches, as the planner reads and fills them. web-llm 0.2.86 picks one with
// `appConfig.cacheBackend` (node_modules/@mlc-ai/web-llm/lib/index.js, createArtifactCache):
// - "cache" (the default), ArtifactCache: Cache Storage, `caches.open(scope)`, entries keyed by
//   `new Request(url)` holding the server's response;
// - "indexeddb", ArtifactIndexedDBCache: one database per scope (`indexedDB.open(scope, 1)`), object store
//   'urls' with keyPath 'url', records `{ url, data }` where data is what fetchWithCache's storetype made
//   of the response: a parsed JSON object for tensor-cache.json ("json"), an ArrayBuffer for the shards,
//   mlc-chat-config.json and the tokenizer ("arraybuffer"). A record with null data is one web-llm failed
//   to fill: it deletes and refetches it, and so does the planner.
// The "opfs" and "cross-origin" backends are not shared: with those, each engine downloads for itself.
import { openDB, type IDBPDatabase } from 'idb';
import { openCacheOrNull, type ProgressCallback } from './sources.ts';

export type WebllmCacheBackend = 'cache' | 'indexeddb';

/** One of web-llm's caches, addressed by web-llm's scope ('webllm/model', 'webllm/config') and file URL. */
export interface WebllmStore {
  /** The file's bytes, or null when absent or damaged (a damaged entry is dropped so it is fetched again). */
  read(scope: string, url: string, file: string, onProgress?: ProgressCallback): Promise<Uint8Array | null>;
  /** Stores the file the way web-llm would have; throws on quota errors (the caller decides). */
  write(scope: string, url: string, file: string, bytes: Uint8Array): Promise<void>;
  has(scope: string, url: string): Promise<boolean>;
  /** Deletes the entry (a file found corrupt); true when there was one. */
  delete(scope: string, url: string): Promise<boolean>;
}

/** Files web-llm fetches with storetype "json" (stored parsed in IndexedDB). */
const JSON_FILES = new Set(['tensor-cache.json']);

export function cacheStorageStore(): WebllmStore {
  return {
    async read(scope, url, file, onProgress) {
      const cache = await openCacheOrNull(scope);
      const hit = await cache?.match(url);
      if (!hit?.ok) return null;
      const bytes = await readCached(hit, file, onProgress);
      if (!bytes) await cache!.delete(url);
      return bytes;
    },
    async write(scope, url, _file, bytes) {
      const cache = await openCacheOrNull(scope);
      if (!cache) return;
      const headers = new Headers({ 'content-type': 'application/octet-stream', 'content-length': String(bytes.byteLength) });
      await cache.put(url, new Response(bytes as Uint8Array<ArrayBuffer>, { status: 200, headers }));
    },
    async has(scope, url) {
      return !!(await (await openCacheOrNull(scope))?.match(url))?.ok;
    },
    async delete(scope, url) {
      return (await (await openCacheOrNull(scope))?.delete(url)) ?? false;
    },
  };
}

interface UrlRecord {
  url: string;
  data: unknown;
}

export function indexedDbStore(factory: IDBFactory | undefined): WebllmStore {
  const dbs = new Map<string, Promise<IDBPDatabase | null>>();
  const open = (scope: string): Promise<IDBPDatabase | null> => {
    if (!factory) return Promise.resolve(null);
    let db = dbs.get(scope);
    if (!db) {
      // The same name, version and store web-llm creates, so whichever engine opens it first makes it.
      db = Promise.resolve()
        .then(() =>
          openDB(scope, 1, {
            upgrade(d) {
              if (!d.objectStoreNames.contains('urls')) d.createObjectStore('urls', { keyPath: 'url' });
            },
          }),
        )
        .catch(() => null); // no usable IndexedDB (private mode, opaque origin): load without sharing
      dbs.set(scope, db);
    }
    return db;
  };
  return {
    async read(scope, url, file, onProgress) {
      const db = await open(scope);
      const rec = (await db?.get('urls', url)) as UrlRecord | undefined;
      if (!rec) return null;
      const bytes = recordBytes(rec.data);
      if (!bytes) {
        await db!.delete('urls', url);
        return null;
      }
      onProgress?.({ file, bytesDone: bytes.byteLength, bytesTotal: bytes.byteLength, fromCache: true });
      return bytes;
    },
    async write(scope, url, file, bytes) {
      const db = await open(scope);
      if (!db) return;
      const data: unknown = JSON_FILES.has(file) ? JSON.parse(new TextDecoder().decode(bytes)) : bytes.slice().buffer;
      await db.put('urls', { url, data } satisfies UrlRecord);
    },
    async has(scope, url) {
      const db = await open(scope);
      const rec = (await db?.get('urls', url)) as UrlRecord | undefined;
      return rec !== undefined && recordBytes(rec.data) !== null;
    },
    async delete(scope, url) {
      const db = await open(scope);
      if (!db || (await db.getKey('urls', url)) === undefined) return false;
      await db.delete('urls', url);
      return true;
    },
  };
}

/** A record's data as bytes: ArrayBuffer (or a view) as is, a parsed JSON object re-serialised; else null. */
function recordBytes(data: unknown): Uint8Array | null {
  if (data instanceof ArrayBuffer) return new Uint8Array(data);
  if (ArrayBuffer.isView(data)) return new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
  if (data !== null && typeof data === 'object') return new TextEncoder().encode(JSON.stringify(data));
  return null;
}

/** A cached body, or null when it is shorter or longer than its own Content-Length (a damaged entry). */
async function readCached(res: Response, name: string, onProgress?: ProgressCallback): Promise<Uint8Array | null> {
  const len = res.headers.get('content-length');
  const encoded = (res.headers.get('content-encoding') ?? 'identity') !== 'identity';
  const declared = !encoded && len !== null && /^\d+$/.test(len) ? Number(len) : null;
  onProgress?.({ file: name, bytesDone: 0, bytesTotal: declared ?? 0, fromCache: true });
  const bytes = new Uint8Array(await res.arrayBuffer());
  if (declared !== null && bytes.byteLength !== declared) return null;
  onProgress?.({ file: name, bytesDone: bytes.byteLength, bytesTotal: bytes.byteLength, fromCache: true });
  return bytes;
}

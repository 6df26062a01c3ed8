// One download for both engines: model files web-llm also loads live in web-llm's own Cache Storage
// caches, under the same keys, so whichever engine loads a model first leaves it for the other.
//
// Where web-llm 0.2.86 keeps them (node_modules/@mlc-ai/web-llm/lib/index.js, default cacheBackend
// "cache", class ArtifactCache: caches.open(scope), entries keyed by `new Request(url)`):
// - "webllm/config": mlc-chat-config.json (`new URL("mlc-chat-config.json", modelUrl)`, reload());
// - "webllm/model": tensor-cache.json and every params_shard_N.bin (fetchTensorCache: `new URL(dataPath,
//   tensorCacheUrl)`), and tokenizer.json / tokenizer.model (asyncLoadTokenizer);
// with modelUrl = cleanModelUrl(record.model): a trailing '/', and 'resolve/main/' unless the URL has a
// '/resolve/<rev>/' part. web-llm's IndexedDB backend ("indexeddb") and the cross-origin storage one are
// not shared: with those, each engine downloads once for itself.
//
// web-llm treats any entry it finds as the file (it never stores error responses), so files the planner
// finds missing are remembered in the planner's own cache (sources.ts's 404 markers), never in web-llm's.
import { MissingFileError, MODEL_CACHE_NAME, SourceError, urlSource, type FileSource, type ProgressCallback, type UrlSourceOptions } from './sources.ts';

export const WEBLLM_MODEL_CACHE = 'webllm/model';
export const WEBLLM_CONFIG_CACHE = 'webllm/config';

/** web-llm's cleanModelUrl: the URL base its cache keys are made from. */
export function webllmModelUrl(model: string): string {
  let url = model.endsWith('/') ? model : `${model}/`;
  if (!/.+\/resolve\/.+\//.test(url)) url += 'resolve/main/';
  return new URL(url).href;
}

/** The web-llm cache that holds `file` of a model, or null for files web-llm never downloads. */
export function webllmCacheFor(file: string): string | null {
  if (file === 'mlc-chat-config.json') return WEBLLM_CONFIG_CACHE;
  if (file === 'tensor-cache.json' || /^params_shard_\d+\.bin$/.test(file) || file === 'tokenizer.json' || file === 'tokenizer.model') return WEBLLM_MODEL_CACHE;
  return null;
}

export type SharedUrlSourceOptions = UrlSourceOptions;

/** A FileSource that can tell, without downloading, that it holds a web-llm (MLC) build. */
export interface SharedUrlSource extends FileSource {
  /** 'mlc' when web-llm's config cache already has this model's mlc-chat-config.json; else null. */
  knownFormat(): Promise<'mlc' | null>;
}

/**
 * Files under a model URL (a Hugging Face repo URL or a '.../resolve/main/' base), shared with web-llm:
 * the files web-llm loads are read from, or downloaded (streamed, with progress) into, web-llm's caches
 * under web-llm's keys; every other file goes through urlSource and the planner's own cache.
 */
export function sharedUrlSource(model: string, opts: SharedUrlSourceOptions = {}): SharedUrlSource {
  const root = webllmModelUrl(model);
  const storage = (globalThis as { caches?: CacheStorage }).caches;
  const own = urlSource(root, opts);
  const direct = urlSource(root, { ...opts, cacheName: null });
  const ownCacheName = opts.cacheName === undefined ? MODEL_CACHE_NAME : opts.cacheName;
  const open = async (name: string | null): Promise<Cache | null> => {
    if (!name || !storage) return null;
    try {
      return await storage.open(name);
    } catch {
      return null; // e.g. opaque origins: work without a cache rather than fail the load
    }
  };

  const readBytes = async (name: string, onProgress?: ProgressCallback): Promise<Uint8Array> => {
    const scope = webllmCacheFor(name);
    if (!scope || opts.cacheName === null) return own.readBytes(name, onProgress);
    const url = new URL(name, root).href;
    const cache = await open(scope);
    const hit = await cache?.match(url);
    if (hit?.ok) {
      const bytes = await readCached(hit, name, onProgress);
      if (bytes) return bytes;
      await cache!.delete(url); // a damaged entry: drop it and download again
    }
    const ownCache = await open(ownCacheName);
    if ((await ownCache?.match(url))?.status === 404) throw new MissingFileError(name, root);
    let bytes: Uint8Array;
    try {
      bytes = await direct.readBytes(name, onProgress);
    } catch (e) {
      if (e instanceof MissingFileError) await ownCache?.put(url, new Response(null, { status: 404 })).catch(() => undefined);
      throw e;
    }
    if (cache) {
      const headers = new Headers({ 'content-type': 'application/octet-stream', 'content-length': String(bytes.byteLength) });
      try {
        await cache.put(url, new Response(bytes as Uint8Array<ArrayBuffer>, { status: 200, headers }));
      } catch {
        // Quota exceeded: the load still succeeds; both engines download again next time.
      }
    }
    return bytes;
  };

  return {
    label: root,
    readBytes,
    async readJson(name) {
      const bytes = await readBytes(name);
      try {
        return JSON.parse(new TextDecoder().decode(bytes));
      } catch (e) {
        throw new SourceError(`${name} in ${root} is not valid JSON (${(e as Error).message})`);
      }
    },
    async knownFormat() {
      const cache = await open(WEBLLM_CONFIG_CACHE);
      const hit = await cache?.match(new URL('mlc-chat-config.json', root).href);
      return hit?.ok ? 'mlc' : null;
    },
  };
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

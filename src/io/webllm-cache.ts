// One download for both engines: model files web-llm also loads live in web-llm's own Cache Storage
// caches, under the same keys, so whichever engine loads a model first leaves it for the other.
//
// Where web-llm 0.2.86 keeps them (node_modules/@mlc-ai/web-llm/lib/index.js, default cacheBackend
// "cache", class ArtifactCache: caches.open(scope), entries keyed by `new Request(url)`):
// - "webllm/config": mlc-chat-config.json (`new URL("mlc-chat-config.json", modelUrl)`, reload());
// - "webllm/model": tensor-cache.json and every params_shard_N.bin (fetchTensorCache: `new URL(dataPath,
//   tensorCacheUrl)`), and tokenizer.json / tokenizer.model (asyncLoadTokenizer);
// with modelUrl = cleanModelUrl(record.model): a trailing '/', and 'resolve/main/' unless the URL has a
// '/resolve/<rev>/' part. With web-llm's IndexedDB backend ("indexeddb") the same scopes and URLs key
// IndexedDB records instead (webllm-stores.ts); the OPFS and cross-origin backends are not shared.
//
// web-llm treats any entry it finds as the file (it never stores error responses), so files the planner
// finds missing are remembered in the planner's own cache (sources.ts's 404 markers), never in web-llm's.
import { cacheStorageStore, indexedDbStore, type WebllmCacheBackend, type WebllmStore } from './webllm-stores.ts';
import { fileUrl, MissingFileError, MODEL_CACHE_NAME, openCacheOrNull, SourceError, urlSource, type FileSource, type ProgressCallback, type UrlSourceOptions } from './sources.ts';

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

export interface SharedUrlSourceOptions extends UrlSourceOptions {
  /**
   * Which of web-llm's caches to share: the web-llm engine's `appConfig.cacheBackend` ('cache', web-llm's
   * default, or 'indexeddb'); 'none' shares nothing (the planner's own cache only).
   */
  webllmCache?: WebllmCacheBackend | 'none';
}

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
  const backend = opts.webllmCache ?? 'cache';
  const store: WebllmStore | null =
    opts.cacheName === null || backend === 'none'
      ? null
      : backend === 'indexeddb'
        ? indexedDbStore((globalThis as { indexedDB?: IDBFactory }).indexedDB)
        : cacheStorageStore();
  const own = urlSource(root, opts);
  const direct = urlSource(root, { ...opts, cacheName: null });
  const openOwn = () => openCacheOrNull(opts.cacheName === undefined ? MODEL_CACHE_NAME : opts.cacheName);

  const readBytes = async (name: string, onProgress?: ProgressCallback): Promise<Uint8Array> => {
    const scope = webllmCacheFor(name);
    if (!scope || !store) return own.readBytes(name, onProgress);
    const url = fileUrl(root, name);
    const hit = await store.read(scope, url, name, onProgress);
    if (hit) return hit;
    const ownCache = await openOwn();
    if ((await ownCache?.match(url))?.status === 404) throw new MissingFileError(name, root);
    let bytes: Uint8Array;
    try {
      bytes = await direct.readBytes(name, onProgress);
    } catch (e) {
      if (e instanceof MissingFileError) await ownCache?.put(url, new Response(null, { status: 404 })).catch(() => undefined);
      throw e;
    }
    try {
      await store.write(scope, url, name, bytes);
    } catch {
      // Quota exceeded: the load still succeeds; both engines download again next time.
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
    async forget(name) {
      const scope = webllmCacheFor(name);
      // Both engines read web-llm's copy: deleting it makes both download the file again.
      const shared = scope && store ? await store.delete(scope, fileUrl(root, name)) : false;
      const ownCopy = (await own.forget?.(name)) ?? false;
      return shared || ownCopy;
    },
    async knownFormat() {
      return (await store?.has(WEBLLM_CONFIG_CACHE, new URL('mlc-chat-config.json', root).href)) ? 'mlc' : null;
    },
  };
}

/**
 * The source for a planner model URL: a Hugging Face style URL ('.../resolve/<rev>/') or an explicit web-llm
 * cache backend shares web-llm's caches (sharedUrlSource, which reads web-llm's record URLs as web-llm does);
 * any other URL is a plain folder, read as it is (sharedUrlSource would look under '<folder>/resolve/main/').
 */
export function modelUrlSource(url: string, opts: SharedUrlSourceOptions = {}): FileSource {
  if (opts.webllmCache !== undefined || /\/resolve\/[^/]+\//.test(url)) return sharedUrlSource(url, opts);
  const { webllmCache: _unused, ...rest } = opts;
  return urlSource(url.endsWith('/') ? url : `${url}/`, rest);
}

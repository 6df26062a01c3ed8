// Where model files come from: a directory on disk (Node), files the user picked in the browser, or a URL
// base such as https://huggingface.co/Qwen/Qwen2.5-0.5B-Instruct/resolve/main/ (streamed, kept in Cache
// Storage so the second load downloads nothing). Loaders only see the FileSource interface.
import { AgentFlowError, type ErrorCategory } from '../errors';

/** How far a model load has got: what the engines report to the page. */
export interface LoadProgress {
  /** File being fetched or read, e.g. 'model.safetensors'. */
  file: string;
  bytesDone: number;
  bytesTotal: number;
  /** True when the bytes came from the browser's cache rather than the network. */
  fromCache: boolean;
}

export type ProgressCallback = (p: LoadProgress) => void;

export interface FileSource {
  /** Where the files come from, for error messages (a path, 'picked files', or a URL base). */
  readonly label: string;
  /** File names (relative, '/'-separated) when the source can enumerate them; URL sources cannot. */
  list?(): Promise<string[]>;
  readJson(name: string): Promise<unknown>;
  readBytes(name: string, onProgress?: ProgressCallback): Promise<Uint8Array>;
  /**
   * Drops the copy of `name` this source keeps (a cache entry) so that the next read downloads it again;
   * true when there was one. Loaders call it on a file they found corrupt. Sources that keep no copy of
   * their own (a folder, picked files) have none.
   */
  forget?(name: string): Promise<boolean>;
  /** Size of `name` in bytes; with readRange, on sources that can read part of a file. */
  size?(name: string): Promise<number>;
  /**
   * Bytes [start, end) of `name` without reading the rest: a safetensors file is read header first, then
   * in slices, so a file larger than one buffer can hold (a 6 GB f32 export) still loads.
   */
  readRange?(name: string, start: number, end: number): Promise<Uint8Array>;
}

/** A file the source does not have; loaders catch it for optional files (tokenizer.json, shard index). */
export class MissingFileError extends AgentFlowError {
  override readonly category: ErrorCategory = 'missing-file';
  constructor(public readonly file: string, where: string) {
    super(`${file} not found in ${where}`);
    this.name = 'MissingFileError';
  }
}

export class SourceError extends AgentFlowError {
  override readonly category: ErrorCategory = 'source';
  constructor(message: string) {
    super(message);
    this.name = 'SourceError';
  }
}

function parseJson(bytes: Uint8Array, name: string, where: string): unknown {
  try {
    return JSON.parse(new TextDecoder().decode(bytes));
  } catch (e) {
    throw new SourceError(`${name} in ${where} is not valid JSON (${(e as Error).message})`);
  }
}

/** Reads an optional JSON file: null when the source does not have it. */
export async function readOptionalJson(source: FileSource, name: string): Promise<unknown | null> {
  try {
    return await source.readJson(name);
  } catch (e) {
    if (e instanceof MissingFileError) return null;
    throw e;
  }
}

/** `size` bytes for `name`, or a SourceError naming it where the engine refuses one buffer that large. */
export function allocateBytes(size: number, name: string, where: string): Uint8Array {
  try {
    return new Uint8Array(size);
  } catch (e) {
    throw new SourceError(`${name} in ${where} is ${size} bytes, more than one buffer can hold here (${(e as Error).message})`);
  }
}

// Progress events for multi-gigabyte reads: often enough for a smooth bar, rare enough to cost nothing.
const CHUNK = 16 * 2 ** 20;

type NodeFs = typeof import('node:fs/promises');
type FileHandle = import('node:fs/promises').FileHandle;

async function nodeFs(): Promise<{ fs: NodeFs; join: (...p: string[]) => string }> {
  const isNode = typeof process !== 'undefined' && !!process.versions?.node;
  if (!isNode) throw new SourceError('Reading a model folder by path needs Node; in the browser pick the files or give a URL.');
  // Variable specifiers keep bundlers from resolving node: modules into the browser bundle (as
  // src/gpu/device.ts does for 'webgpu').
  const fsName = 'node:fs/promises';
  const pathName = 'node:path';
  const fs = (await import(/* @vite-ignore */ fsName)) as NodeFs;
  const path = (await import(/* @vite-ignore */ pathName)) as typeof import('node:path');
  return { fs, join: path.join };
}

/** A directory on disk (Node only). */
export function directorySource(dir: string): FileSource {
  const where = dir;
  const open = async (name: string) => {
    const { fs, join } = await nodeFs();
    const path = join(dir, ...name.split('/'));
    try {
      return { fs, handle: await fs.open(path, 'r') };
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'ENOENT') throw new MissingFileError(name, where);
      throw new SourceError(`cannot open ${path}: ${(e as Error).message}`);
    }
  };
  /** Bytes [start, end) of an open file, read in CHUNK pieces with progress. */
  const readSpan = async (handle: FileHandle, name: string, start: number, end: number, onProgress?: ProgressCallback, size = end) => {
    const out = allocateBytes(end - start, name, where);
    let done = 0;
    while (done < out.byteLength) {
      const { bytesRead } = await handle.read(out, done, Math.min(CHUNK, out.byteLength - done), start + done);
      if (bytesRead === 0) throw new SourceError(`${name} in ${where} ended after ${start + done} of ${size} bytes`);
      done += bytesRead;
      onProgress?.({ file: name, bytesDone: done, bytesTotal: size, fromCache: false });
    }
    return out;
  };
  const readBytes = async (name: string, onProgress?: ProgressCallback) => {
    const { handle } = await open(name);
    try {
      const { size } = await handle.stat();
      onProgress?.({ file: name, bytesDone: 0, bytesTotal: size, fromCache: false });
      return await readSpan(handle, name, 0, size, onProgress);
    } finally {
      await handle.close();
    }
  };
  const withFile = async <T>(name: string, use: (handle: FileHandle, size: number) => Promise<T>): Promise<T> => {
    const { handle } = await open(name);
    try {
      return await use(handle, (await handle.stat()).size);
    } finally {
      await handle.close();
    }
  };
  return {
    label: where,
    async list() {
      const { fs } = await nodeFs();
      const entries = await fs.readdir(dir, { recursive: true, withFileTypes: true });
      return entries
        .filter((e) => e.isFile())
        .map((e) => {
          const parent = (e as unknown as { parentPath?: string; path?: string }).parentPath ?? (e as unknown as { path: string }).path;
          const rel = parent.length > dir.length ? parent.slice(dir.replace(/\/$/, '').length + 1) + '/' : '';
          return (rel + e.name).replace(/\\/g, '/');
        })
        .sort();
    },
    readBytes,
    readJson: async (name) => parseJson(await readBytes(name), name, where),
    size: (name) => withFile(name, async (_, size) => size),
    readRange: (name, start, end) =>
      withFile(name, (handle, size) => {
        if (start < 0 || end < start || end > size) throw new SourceError(`${name} in ${where}: bytes [${start}, ${end}) lie outside its ${size} bytes`);
        return readSpan(handle, name, start, end, undefined, size);
      }),
  };
}

/**
 * Files the user picked (<input type=file multiple> or a directory pick with webkitdirectory). For a
 * directory pick the top folder is stripped, so 'Qwen2.5-0.5B/config.json' is read as 'config.json'.
 */
export function pickedFilesSource(files: Iterable<File> | ArrayLike<File>): FileSource {
  const list = Array.from(files as ArrayLike<File>);
  const byName = new Map<string, File>();
  for (const f of list) {
    const rel = (f as File & { webkitRelativePath?: string }).webkitRelativePath;
    const name = rel ? rel.split('/').slice(1).join('/') : f.name;
    byName.set(name, f);
  }
  const where = 'the picked files';
  const get = (name: string) => {
    const f = byName.get(name);
    if (!f) throw new MissingFileError(name, where);
    return f;
  };
  const readBytes = async (name: string, onProgress?: ProgressCallback) => {
    const f = get(name);
    const out = allocateBytes(f.size, name, where);
    let done = 0;
    onProgress?.({ file: name, bytesDone: 0, bytesTotal: f.size, fromCache: false });
    const reader = f.stream().getReader();
    for (;;) {
      const { done: end, value } = await reader.read();
      if (end) break;
      if (done + value.byteLength > f.size) throw new SourceError(`${name} changed while being read`);
      out.set(value, done);
      done += value.byteLength;
      onProgress?.({ file: name, bytesDone: done, bytesTotal: f.size, fromCache: false });
    }
    if (done !== f.size) throw new SourceError(`${name} ended after ${done} of ${f.size} bytes`);
    return out;
  };
  return {
    label: where,
    list: async () => [...byName.keys()].sort(),
    readBytes,
    readJson: async (name) => parseJson(await readBytes(name), name, where),
    size: async (name) => get(name).size,
    async readRange(name, start, end) {
      const f = get(name);
      if (start < 0 || end < start || end > f.size) throw new SourceError(`${name} in ${where}: bytes [${start}, ${end}) lie outside its ${f.size} bytes`);
      const bytes = new Uint8Array(await f.slice(start, end).arrayBuffer());
      if (bytes.byteLength !== end - start) throw new SourceError(`${name} changed while being read`);
      return bytes;
    },
  };
}

/** A file a cache-only source (UrlSourceOptions.cacheOnly) does not have: loading it would download. */
export class NotCachedError extends SourceError {
  constructor(readonly file: string, where: string) {
    super(`${file} from ${where} is not in this browser's cache`);
    this.name = 'NotCachedError';
  }
}

export const MODEL_CACHE_NAME = 'agentflow-models';

export interface UrlSourceOptions {
  /** Cache Storage name; null turns caching off. Default 'agentflow-models'. */
  cacheName?: string | null;
  fetch?: typeof fetch;
  signal?: AbortSignal;
  /**
   * Read only what the cache holds, never the network: a file it lacks is a NotCachedError (reloading the
   * last models on start must not download anything the user did not ask for this time).
   */
  cacheOnly?: boolean;
}

/**
 * Why a fetch threw, in words: offline, or the host could not be reached (fetch itself only says "Failed
 * to fetch"). `navigator.onLine` is false only when the browser knows it has no network.
 */
export function fetchFailureReason(e: unknown): string {
  const raw = e instanceof Error ? e.message : String(e);
  const offline = (globalThis as { navigator?: { onLine?: boolean } }).navigator?.onLine === false;
  return offline
    ? `you appear to be offline (${raw}); models already in this browser's cache load offline`
    : `the server could not be reached, or it does not let this page read the file (${raw})`;
}

/** A response that is a web page (an app's index.html served for any path) is never a model file. */
function isHtmlPage(res: Response, head: Uint8Array | null): boolean {
  if (/^text\/html\b/i.test(res.headers.get('content-type') ?? '')) return true;
  if (!head) return false;
  const start = new TextDecoder().decode(head.subarray(0, 64)).trimStart().toLowerCase();
  return start.startsWith('<!doctype html') || start.startsWith('<html');
}

/** The Cache Storage cache `name`, or null without one (no name, no Cache Storage, or an opaque origin). */
export async function openCacheOrNull(name: string | null): Promise<Cache | null> {
  const storage = (globalThis as { caches?: CacheStorage }).caches;
  if (!name || !storage) return null;
  try {
    return await storage.open(name);
  } catch {
    return null; // e.g. opaque origins: work without a cache rather than fail the load
  }
}

/**
 * The URL of file `name` under `root` (a URL ending in '/'). A name that resolves elsewhere (an absolute
 * URL, '//host/…', '..' in any spelling) is refused: manifests name files, and a model folder on one site
 * must not make the page fetch from another.
 */
export function fileUrl(root: string, name: string): string {
  const base = new URL(root).href;
  let url: string;
  try {
    url = new URL(name, base).href;
  } catch {
    throw new SourceError(`'${name}' is not a file name under ${root}; refused`);
  }
  if (!url.startsWith(base) || url.length === base.length) throw new SourceError(`'${name}' resolves to ${url}, outside ${root}; refused`);
  return url;
}

/**
 * Files under a URL base ('.../resolve/main/'). Each file is streamed with progress and, once complete and
 * of the advertised length, stored in Cache Storage; a failed or interrupted download stores nothing.
 */
export function urlSource(base: string, opts: UrlSourceOptions = {}): FileSource {
  const root = base.endsWith('/') ? base : `${base}/`;
  const doFetch = opts.fetch ?? globalThis.fetch.bind(globalThis);
  const cacheName = opts.cacheName === undefined ? MODEL_CACHE_NAME : opts.cacheName;
  const openCache = () => openCacheOrNull(cacheName);

  const readBytes = async (name: string, onProgress?: ProgressCallback, check?: (bytes: Uint8Array) => void): Promise<Uint8Array> => {
    const url = fileUrl(root, name);
    const cache = await openCache();
    const cached = cache ? await cache.match(url) : undefined;
    if (cached?.status === 404) throw new MissingFileError(name, root);
    if (cached) {
      const bytes = await readBody(cached, url, name, true, onProgress);
      if (bytes) return bytes;
      await cache!.delete(url); // a damaged entry: drop it and download again
    }
    if (opts.cacheOnly) throw new NotCachedError(name, root);
    let res: Response;
    try {
      res = await doFetch(url, { signal: opts.signal });
    } catch (e) {
      if (opts.signal?.aborted) throw e;
      throw new SourceError(`download of ${url} failed: ${fetchFailureReason(e)}`);
    }
    if (res.status === 404) {
      // Remember the absence too (optional files such as tokenizer.json), so a cached model loads
      // offline and a second load makes no requests at all.
      await cache?.put(url, new Response(null, { status: 404 })).catch(() => undefined);
      throw new MissingFileError(name, root);
    }
    if (!res.ok) throw new SourceError(`download of ${url} failed: HTTP ${res.status}${res.statusText ? ` ${res.statusText}` : ''}`);
    if (isHtmlPage(res, null)) throw notAModelFile(url, name);
    const bytes = await readBody(res, url, name, false, onProgress);
    if (!bytes) throw new SourceError(`download of ${url} was cut short (fewer bytes than its Content-Length)`);
    if (isHtmlPage(res, bytes)) throw notAModelFile(url, name);
    // Only a file that is what its name says is kept (a JSON file that does not parse is not).
    check?.(bytes);
    if (cache) {
      const headers = new Headers({ 'content-type': res.headers.get('content-type') ?? 'application/octet-stream', 'content-length': String(bytes.byteLength) });
      try {
        await cache.put(url, new Response(bytes as Uint8Array<ArrayBuffer>, { status: 200, headers }));
      } catch {
        // Quota exceeded: the load still succeeds, the next one downloads again.
      }
    }
    return bytes;
  };
  return {
    label: root,
    readBytes: (name, onProgress) => readBytes(name, onProgress),
    // A download that does not parse is refused before it is stored.
    readJson: async (name) => parseJson(await readBytes(name, undefined, (b) => void parseJson(b, name, root)), name, root),
    async forget(name) {
      return (await (await openCache())?.delete(fileUrl(root, name))) ?? false;
    },
  };
}

function notAModelFile(url: string, name: string): SourceError {
  return new SourceError(`${url} is a web page, not the model file ${name}: check the model id or URL (nothing was stored)`);
}

/** Reads a response body with progress; null when it ends short of its Content-Length. */
async function readBody(res: Response, url: string, name: string, fromCache: boolean, onProgress?: ProgressCallback): Promise<Uint8Array | null> {
  const lenHeader = res.headers.get('content-length');
  // With a Content-Encoding the header counts compressed bytes, not the body we read.
  const encoded = (res.headers.get('content-encoding') ?? 'identity') !== 'identity';
  const declared = !encoded && lenHeader !== null && /^\d+$/.test(lenHeader) ? Number(lenHeader) : null;
  const chunks: Uint8Array[] = [];
  const pre = declared !== null ? allocateBytes(declared, name, url) : null;
  let done = 0;
  onProgress?.({ file: name, bytesDone: 0, bytesTotal: declared ?? 0, fromCache });
  if (!res.body) throw new SourceError(`${url} has no body`);
  const reader = res.body.getReader();
  try {
    for (;;) {
      const { done: end, value } = await reader.read();
      if (end) break;
      if (pre) {
        if (done + value.byteLength > pre.byteLength) throw new SourceError(`${url} sent more bytes than its Content-Length ${declared}`);
        pre.set(value, done);
      } else chunks.push(value);
      done += value.byteLength;
      onProgress?.({ file: name, bytesDone: done, bytesTotal: declared ?? done, fromCache });
    }
  } catch (e) {
    if (e instanceof SourceError) throw e;
    throw new SourceError(`download of ${url} was interrupted after ${done} bytes: ${(e as Error).message}`);
  }
  if (pre) return done === pre.byteLength ? pre : null;
  const out = allocateBytes(done, name, url);
  let pos = 0;
  for (const c of chunks) {
    out.set(c, pos);
    pos += c.byteLength;
  }
  return out;
}

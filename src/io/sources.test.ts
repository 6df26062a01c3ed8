// urlSource's error paths with a stubbed fetch (Node has no Cache Storage; caching is covered in Chromium by
// tests/e2e/model-download.e2e.test.ts), and pickedFilesSource with real File objects.
import { afterEach, describe, expect, it, vi } from 'vitest';
import { MissingFileError, NotCachedError, pickedFilesSource, urlSource } from './sources.ts';
import type { LoadProgress } from './sources.ts';

const BASE = 'https://hub.example/Qwen/Tiny/resolve/main/';

function streamOf(chunks: Uint8Array[], failAfter?: number): ReadableStream<Uint8Array> {
  let i = 0;
  return new ReadableStream({
    pull(c) {
      if (failAfter !== undefined && i === failAfter) return c.error(new Error('connection reset'));
      if (i < chunks.length) c.enqueue(chunks[i++]);
      else c.close();
    },
  });
}

/** Cache Storage as urlSource uses it (Node has none): one in-memory cache per name. */
function memoryCaches() {
  const stores = new Map<string, Map<string, Response>>();
  const open = async (name: string) => {
    const m = stores.get(name) ?? new Map<string, Response>();
    stores.set(name, m);
    return {
      match: async (url: string) => m.get(url)?.clone(),
      put: async (url: string, res: Response) => void m.set(url, res),
      delete: async (url: string) => m.delete(url),
    };
  };
  return { stores, storage: { open, keys: async () => [...stores.keys()] } };
}

afterEach(() => vi.unstubAllGlobals());

describe('urlSource', () => {
  it('streams a file with progress up to its size', async () => {
    const data = new Uint8Array(1000).map((_, i) => i & 255);
    const urls: string[] = [];
    const src = urlSource(BASE, {
      cacheName: null,
      fetch: async (u) => {
        urls.push(String(u));
        return new Response(streamOf([data.subarray(0, 400), data.subarray(400)]), { headers: { 'content-length': '1000' } });
      },
    });
    const events: LoadProgress[] = [];
    const got = await src.readBytes('model.safetensors', (p) => events.push(p));
    expect(got).toEqual(data);
    expect(urls).toEqual([`${BASE}model.safetensors`]);
    expect(events.map((e) => e.bytesDone)).toEqual([0, 400, 1000]);
    expect(events.every((e) => e.bytesTotal === 1000 && !e.fromCache && e.file === 'model.safetensors')).toBe(true);
  });

  it('names the URL and HTTP status on errors; 404 is a MissingFileError', async () => {
    const src = (status: number) => urlSource(BASE, { cacheName: null, fetch: async () => new Response('no', { status, statusText: status === 403 ? 'Forbidden' : '' }) });
    await expect(src(403).readBytes('config.json')).rejects.toThrow(`download of ${BASE}config.json failed: HTTP 403 Forbidden`);
    await expect(src(500).readJson('config.json')).rejects.toThrow(`${BASE}config.json failed: HTTP 500`);
    await expect(src(404).readBytes('tokenizer.json')).rejects.toBeInstanceOf(MissingFileError);
    const unreachable = urlSource(BASE, { cacheName: null, fetch: async () => { throw new TypeError('Failed to fetch'); } });
    await expect(unreachable.readBytes('config.json')).rejects.toThrow(
      `download of ${BASE}config.json failed: the server could not be reached, or it does not let this page read the file (Failed to fetch)`,
    );
    vi.stubGlobal('navigator', { onLine: false });
    await expect(unreachable.readBytes('config.json')).rejects.toThrow(`download of ${BASE}config.json failed: you appear to be offline (Failed to fetch)`);
  });

  it('rejects a body cut short of its Content-Length, and an interrupted stream', async () => {
    const short = urlSource(BASE, { cacheName: null, fetch: async () => new Response(streamOf([new Uint8Array(10)]), { headers: { 'content-length': '20' } }) });
    await expect(short.readBytes('model.safetensors')).rejects.toThrow(/model\.safetensors was cut short/);
    const reset = urlSource(BASE, { cacheName: null, fetch: async () => new Response(streamOf([new Uint8Array(10), new Uint8Array(10)], 1), { headers: { 'content-length': '20' } }) });
    await expect(reset.readBytes('model.safetensors')).rejects.toThrow(/model\.safetensors was interrupted after 10 bytes: connection reset/);
  });

  it('a file larger than one buffer can hold fails naming it (not a bare typed-array RangeError)', async () => {
    const huge = urlSource(BASE, { cacheName: null, fetch: async () => new Response(streamOf([new Uint8Array(10)]), { headers: { 'content-length': String(2 ** 53 - 1) } }) });
    await expect(huge.readBytes('model.safetensors')).rejects.toThrow(/^model\.safetensors in https:\/\/hub\.example\/.*model\.safetensors is 9007199254740991 bytes, more than one buffer can hold here/);
  });

  it('refuses a file name that resolves outside its base (another site, or out of the folder), fetching nothing', async () => {
    const urls: string[] = [];
    const src = urlSource(BASE, { cacheName: null, fetch: async (u) => (urls.push(String(u)), new Response('x')) });
    for (const name of ['https://evil.example/model.safetensors', '//evil.example/x.bin', '\\\\evil.example\\x.bin', '../../other/model.safetensors', '%2e%2e/%2e%2e/x.bin']) {
      await expect(src.readBytes(name), name).rejects.toThrow(/outside https:\/\/hub\.example\/Qwen\/Tiny\/resolve\/main\/; refused/);
    }
    expect(urls).toEqual([]);
    expect(await src.readBytes('sub/model-00001-of-00002.safetensors')).toEqual(new TextEncoder().encode('x'));
    expect(urls).toEqual([`${BASE}sub/model-00001-of-00002.safetensors`]);
  });

  it('parses JSON and names a file that is not JSON', async () => {
    const src = urlSource(BASE, { cacheName: null, fetch: async (u) => new Response(String(u).endsWith('a.json') ? '{"x":1}' : 'x = 1') });
    expect(await src.readJson('a.json')).toEqual({ x: 1 });
    await expect(src.readJson('b.json')).rejects.toThrow(/b\.json in https:\/\/hub\.example\/Qwen\/Tiny\/resolve\/main\/ is not valid JSON/);
  });
});

describe('pickedFilesSource', () => {
  it('reads picked files, stripping the picked folder from directory picks', async () => {
    const cfg = new File(['{"a":2}'], 'config.json');
    Object.defineProperty(cfg, 'webkitRelativePath', { value: 'Qwen2.5/config.json' });
    const w = new File([new Uint8Array([1, 2, 3])], 'model.safetensors');
    Object.defineProperty(w, 'webkitRelativePath', { value: 'Qwen2.5/model.safetensors' });
    const src = pickedFilesSource([cfg, w]);
    expect(await src.list!()).toEqual(['config.json', 'model.safetensors']);
    expect(await src.readJson('config.json')).toEqual({ a: 2 });
    const events: LoadProgress[] = [];
    expect(await src.readBytes('model.safetensors', (p) => events.push(p))).toEqual(new Uint8Array([1, 2, 3]));
    expect(events.at(-1)).toEqual({ file: 'model.safetensors', bytesDone: 3, bytesTotal: 3, fromCache: false });
    await expect(src.readBytes('tokenizer.json')).rejects.toBeInstanceOf(MissingFileError);
    // Ranges, for big safetensors files read in slices.
    expect(await src.size!('model.safetensors')).toBe(3);
    expect(await src.readRange!('model.safetensors', 1, 3)).toEqual(new Uint8Array([2, 3]));
    await expect(src.readRange!('model.safetensors', 2, 4)).rejects.toThrow(/model\.safetensors in the picked files: bytes \[2, 4\) lie outside its 3 bytes/);
  });
});

describe('urlSource and the cache', () => {
  it('never stores a web page served for a model file, nor a JSON file that does not parse', async () => {
    const { stores, storage } = memoryCaches();
    vi.stubGlobal('caches', storage);
    const page = '<!doctype html><html><body>app</body></html>';
    const spa = urlSource(BASE, { fetch: async () => new Response(page, { headers: { 'content-type': 'text/html; charset=utf-8' } }) });
    await expect(spa.readJson('config.json')).rejects.toThrow(`${BASE}config.json is a web page, not the model file config.json: check the model id or URL (nothing was stored)`);
    // No content type, but the body is a page: still refused.
    const sniffed = urlSource(BASE, { fetch: async () => new Response(page) });
    await expect(sniffed.readBytes('model.safetensors')).rejects.toThrow(/is a web page, not the model file model\.safetensors/);
    const broken = urlSource(BASE, { fetch: async () => new Response('{"a":') });
    await expect(broken.readJson('tokenizer.json')).rejects.toThrow(/tokenizer\.json in .* is not valid JSON/);
    expect([...(stores.get('agentflow-models')?.keys() ?? [])]).toEqual([]);
    const good = urlSource(BASE, { fetch: async () => new Response('{"a":1}') });
    expect(await good.readJson('config.json')).toEqual({ a: 1 });
    expect([...stores.get('agentflow-models')!.keys()]).toEqual([`${BASE}config.json`]);
  });

  it('reads only the cache when told to: a file it lacks is a NotCachedError, and nothing is fetched', async () => {
    const { storage } = memoryCaches();
    vi.stubGlobal('caches', storage);
    await urlSource(BASE, { fetch: async () => new Response('{"a":1}') }).readJson('config.json');
    const fetched: string[] = [];
    const cacheOnly = urlSource(BASE, { cacheOnly: true, fetch: async (u) => (fetched.push(String(u)), new Response('{}')) });
    expect(await cacheOnly.readJson('config.json')).toEqual({ a: 1 });
    const missing = await cacheOnly.readBytes('model.safetensors').catch((e) => e);
    expect(missing).toBeInstanceOf(NotCachedError);
    expect(missing.message).toBe(`model.safetensors from ${BASE} is not in this browser's cache`);
    expect(fetched).toEqual([]);
  });
});

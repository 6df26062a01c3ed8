// Models kept in Cache Storage: ours ('agentflow-models', see io/sources.ts) and web-llm's caches
// ('webllm/model', 'webllm/wasm', 'webllm/config'). Entries are grouped into one row per model: the URL
// up to '/resolve/' for hub files, else the URL's folder.
import { MODEL_CACHE_NAME } from '../../io/sources';

export interface CachedModel {
  /** The model's URL prefix; deleteCachedModel takes it. */
  key: string;
  label: string;
  bytes: number;
  files: number;
  caches: string[];
}

export function isModelCache(name: string): boolean {
  return name === MODEL_CACHE_NAME || /^webllm/i.test(name);
}

export function modelKeyOf(url: string): string {
  const r = url.indexOf('/resolve/');
  if (r >= 0) return url.slice(0, r);
  return url.slice(0, url.lastIndexOf('/') + 1) || url;
}

function labelOf(key: string): string {
  try {
    const u = new URL(key);
    return u.hostname === 'huggingface.co' ? u.pathname.replace(/^\/+|\/+$/g, '') : `${u.host}${u.pathname}`;
  } catch {
    return key;
  }
}

/** A cached response's size: its Content-Length, else its body's. */
export async function sizeOf(res: Response): Promise<number> {
  const len = res.headers.get('content-length');
  if (len && /^\d+$/.test(len)) return Number(len);
  return (await res.blob()).size;
}

export async function listCachedModels(storage: CacheStorage | undefined = globalThis.caches): Promise<CachedModel[]> {
  if (!storage) return [];
  const out = new Map<string, CachedModel>();
  for (const name of await storage.keys()) {
    if (!isModelCache(name)) continue;
    const cache = await storage.open(name);
    for (const req of await cache.keys()) {
      const res = await cache.match(req);
      if (!res || res.status !== 200) continue; // remembered 404s take no space worth listing
      const key = modelKeyOf(req.url);
      const row = out.get(key) ?? { key, label: labelOf(key), bytes: 0, files: 0, caches: [] };
      row.bytes += await sizeOf(res);
      row.files++;
      if (!row.caches.includes(name)) row.caches.push(name);
      out.set(key, row);
    }
  }
  return [...out.values()].sort((a, b) => b.bytes - a.bytes);
}

/** Deletes every cached file of the model `key` (in all model caches); returns how many were deleted. */
export async function deleteCachedModel(key: string, storage: CacheStorage | undefined = globalThis.caches): Promise<number> {
  if (!storage) return 0;
  let n = 0;
  for (const name of await storage.keys()) {
    if (!isModelCache(name)) continue;
    const cache = await storage.open(name);
    for (const req of await cache.keys()) {
      if (modelKeyOf(req.url) === key && (await cache.delete(req))) n++;
    }
  }
  return n;
}

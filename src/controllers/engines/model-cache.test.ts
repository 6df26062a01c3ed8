import { describe, expect, it } from 'vitest';
import { deleteCachedModel, isModelCache, listCachedModels, modelKeyOf } from './model-cache';

// A minimal in-memory CacheStorage with real Request/Response objects (Node has both).
function memoryCaches(): CacheStorage {
  const stores = new Map<string, Map<string, Response>>();
  const cacheOf = (m: Map<string, Response>) =>
    ({
      keys: async () => [...m.keys()].map((u) => new Request(u)),
      match: async (r: RequestInfo) => m.get(typeof r === 'string' ? r : r.url)?.clone(),
      put: async (r: RequestInfo, res: Response) => void m.set(typeof r === 'string' ? r : r.url, res),
      delete: async (r: RequestInfo) => m.delete(typeof r === 'string' ? r : r.url),
    }) as unknown as Cache;
  return {
    keys: async () => [...stores.keys()],
    open: async (n: string) => {
      if (!stores.has(n)) stores.set(n, new Map());
      return cacheOf(stores.get(n)!);
    },
  } as unknown as CacheStorage;
}

describe('model cache listing', () => {
  it('groups hub files by repo, sums sizes, skips 404 markers and foreign caches, deletes one model', async () => {
    const cs = memoryCaches();
    const ours = await cs.open('agentflow-models');
    const hub = 'https://huggingface.co/Qwen/Qwen2.5-0.5B-Instruct';
    await ours.put(`${hub}/resolve/main/config.json`, new Response('x'.repeat(700)));
    await ours.put(`${hub}/resolve/main/model.safetensors`, new Response(new Uint8Array(3000)));
    await ours.put(`${hub}/resolve/main/missing.json`, new Response(null, { status: 404 }));
    const wl = await cs.open('webllm/model');
    const mlc = 'https://huggingface.co/mlc-ai/Qwen2.5-1.5B-Instruct-q4f16_1-MLC';
    await wl.put(`${mlc}/resolve/main/params_shard_0.bin`, new Response(new Uint8Array(5000)));
    await (await cs.open('other-app')).put('https://example.com/a/b.bin', new Response(new Uint8Array(9999)));

    const rows = await listCachedModels(cs);
    expect(rows.map((r) => [r.label, r.bytes, r.files])).toEqual([
      ['mlc-ai/Qwen2.5-1.5B-Instruct-q4f16_1-MLC', 5000, 1],
      ['Qwen/Qwen2.5-0.5B-Instruct', 3700, 2],
    ]);
    expect(await deleteCachedModel(hub, cs)).toBe(3);
    expect((await listCachedModels(cs)).map((r) => r.label)).toEqual(['mlc-ai/Qwen2.5-1.5B-Instruct-q4f16_1-MLC']);
  });

  it('names model caches and keys', () => {
    expect(isModelCache('agentflow-models')).toBe(true);
    expect(isModelCache('webllm/wasm')).toBe(true);
    expect(isModelCache('pyodide')).toBe(false);
    expect(modelKeyOf('http://127.0.0.1:1/models/tiny/config.json')).toBe('http://127.0.0.1:1/models/tiny/');
  });
});

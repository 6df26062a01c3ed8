// What a load reads and how much of it is cached, with an in-memory Cache Storage and a stubbed server.
import { describe, expect, it } from 'vitest';
import { combine, plannerFiles, webllmFiles } from './model-files';

function memoryCaches(entries: Record<string, Record<string, Response>>): CacheStorage {
  const open = async (name: string) => ({ match: async (url: string) => entries[name]?.[url]?.clone() }) as unknown as Cache;
  return { open, keys: async () => Object.keys(entries) } as unknown as CacheStorage;
}

const ok = (bytes: number) => new Response(new Uint8Array(bytes), { headers: { 'content-length': String(bytes) } });
const gone = () => new Response(null, { status: 404 });

/** A server with these files (name -> size or JSON); HEAD gives the size, GET the JSON. */
function server(base: string, files: Record<string, number | object>) {
  const asked: string[] = [];
  const fetch = (async (url: string, init?: RequestInit) => {
    asked.push(`${init?.method ?? 'GET'} ${url.slice(base.length)}`);
    const f = files[url.slice(base.length)];
    if (f === undefined) return new Response('Entry not found', { status: 404 });
    const body = typeof f === 'number' ? null : JSON.stringify(f);
    return new Response(init?.method === 'HEAD' ? null : body, { headers: { 'content-length': String(typeof f === 'number' ? f : body!.length) } });
  }) as typeof globalThis.fetch;
  return { fetch, asked };
}

const HF = 'https://hub.example/org/tiny/resolve/main/';

describe('plannerFiles', () => {
  it('reads sizes from the cache alone: a loaded model is complete, nothing is asked of the network', async () => {
    const caches = memoryCaches({
      'agentflow-models': {
        [`${HF}config.json`]: ok(500),
        [`${HF}model.safetensors.index.json`]: gone(),
        [`${HF}model.safetensors`]: ok(3000),
        [`${HF}tokenizer.json`]: ok(200),
        [`${HF}tokenizer_config.json`]: ok(100),
        [`${HF}generation_config.json`]: gone(),
        [`${HF}chat_template.jinja`]: gone(),
      },
    });
    const r = await plannerFiles(HF, { caches, fetch: () => Promise.reject(new Error('no network')) });
    expect(r).toMatchObject({ total: 3800, cached: 3800, unknown: 0, complete: true });
    const empty = await plannerFiles(HF, { caches: memoryCaches({}) });
    expect(empty).toMatchObject({ cached: 0, complete: false });
    expect(empty.unknown).toBeGreaterThan(0);
  });

  it('asks the server when told to: HEAD for sizes, the shard index for a sharded model', async () => {
    const hub = server(HF, {
      'config.json': 500,
      'model.safetensors.index.json': { weight_map: { a: 'model-1.safetensors', b: 'model-2.safetensors', c: 'model-1.safetensors' } },
      'model-1.safetensors': 4000,
      'model-2.safetensors': 2000,
      'tokenizer.json': 300,
    });
    const caches = memoryCaches({ 'agentflow-models': { [`${HF}model-2.safetensors`]: ok(2000) } });
    const r = await plannerFiles(HF, { network: true, fetch: hub.fetch, caches });
    const index = JSON.stringify({ weight_map: { a: 'model-1.safetensors', b: 'model-2.safetensors', c: 'model-1.safetensors' } }).length;
    expect(r).toMatchObject({ total: 500 + index + 4000 + 2000 + 300, cached: 2000, unknown: 0, complete: false });
    expect(hub.asked).not.toContain('HEAD model-2.safetensors');
    expect(hub.asked.filter((a) => a.startsWith('GET'))).toEqual(['GET model.safetensors.index.json']);
  });
});

describe('webllmFiles', () => {
  const record = { model: 'https://hub.example/mlc-ai/Tiny-q4f16_1-MLC', model_lib: 'https://lib.example/tiny-webgpu.wasm' };
  const MLC = `${record.model}/resolve/main/`;
  const manifest = { records: [{ dataPath: 'params_shard_0.bin', nbytes: 7000 }, { dataPath: 'params_shard_1.bin', nbytes: 5000 }] };

  it('takes shard sizes from a cached tensor-cache.json, and sees what is still missing', async () => {
    const json = (v: object) => new Response(JSON.stringify(v));
    const caches = memoryCaches({
      'webllm/config': { [`${MLC}mlc-chat-config.json`]: json({ tokenizer_files: ['tokenizer.json'] }) },
      'webllm/model': { [`${MLC}tensor-cache.json`]: json(manifest), [`${MLC}params_shard_0.bin`]: ok(7000), [`${MLC}tokenizer.json`]: ok(100) },
      'webllm/wasm': { [record.model_lib]: ok(900) },
    });
    const r = await webllmFiles(record, { caches });
    expect(r.files.find((f) => f.url.endsWith('params_shard_1.bin'))).toEqual({ url: `${MLC}params_shard_1.bin`, bytes: 5000, cached: false });
    expect(r.complete).toBe(false);
    expect(r.unknown).toBe(0);
    expect(r.total - r.cached).toBe(5000);
    // The planner reading the same build shares the download: counted once together.
    const planner = await plannerFiles(MLC, { caches, mlc: true });
    const both = combine(planner, r);
    expect(both.total).toBe(r.total);
  });

  it('gives an unknown size, not a wrong one, when the server will not say', async () => {
    const r = await webllmFiles(record, { caches: memoryCaches({}), network: true, fetch: () => Promise.reject(new TypeError('Failed to fetch')) });
    expect(r.complete).toBe(false);
    expect(r.unknown).toBeGreaterThan(0);
    // The size is unknown because the hosts could not be reached (offline): each is named once.
    expect(r.unreachable).toEqual([new URL(MLC).host, new URL(record.model_lib).host]);
    expect(combine(r, r).unreachable).toEqual(r.unreachable);
  });

  it('names no host as unreachable when every server answered', async () => {
    const hub = server(HF, { 'config.json': 10, 'model.safetensors': 20, 'tokenizer.json': 5 });
    expect((await plannerFiles(HF, { network: true, fetch: hub.fetch, caches: memoryCaches({}) })).unreachable).toEqual([]);
  });
});

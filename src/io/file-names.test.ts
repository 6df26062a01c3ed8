// Manifests name the model's other files; a name that is a URL or leaves the folder is refused where the
// manifest is read (the model folder on one site must not make the page fetch from another).
import { describe, expect, it } from 'vitest';
import { loadCheckpoint } from '../engine/load-checkpoint.ts';
import { isModelFileName } from './file-names.ts';
import { parseTensorCache } from './mlc.ts';
import { parseShardIndex } from './shards.ts';
import { urlSource } from './sources.ts';

const HOSTILE = ['https://evil.example/model.safetensors', 'HTTP://evil.example/x', '//evil.example/x', '/etc/passwd', '\\\\evil.example\\x', 'a\\..\\x', '../x', 'a/../../x', '%2e%2e/x', 'x?y', 'x#y', 'a//b', '', ' x', 'data:application/octet-stream,AAAA'];

describe('model file names in manifests', () => {
  it('accepts the names exporters write, refuses URLs and anything that could leave the folder', () => {
    for (const ok of ['model.safetensors', 'model-00001-of-00002.safetensors', 'params_shard_12.bin', 'sub/params_shard_0.bin']) expect(isModelFileName(ok), ok).toBe(true);
    for (const bad of [...HOSTILE, 42, null]) expect(isModelFileName(bad), String(bad)).toBe(false);
  });

  it("tensor-cache.json's dataPath and the shard index's weight_map refuse them, naming the entry", () => {
    for (const bad of HOSTILE) {
      expect(() => parseTensorCache({ records: [{ dataPath: bad, format: 'raw-shard', nbytes: 0, records: [] }] }), bad).toThrow(/tensor-cache\.json: shard 0 has dataPath .*, not a file name inside the model's folder .*; refused/);
      expect(() => parseShardIndex({ weight_map: { 'model.norm.weight': bad } }), bad).toThrow(/weight_map entry for 'model\.norm\.weight' is .*, not a file name inside the model's folder .*; refused/);
    }
  });

  it('a hub folder whose index points at another origin loads nothing from it', async () => {
    const base = 'https://hub.example/Qwen/Tiny/resolve/main/';
    const urls: string[] = [];
    const files: Record<string, unknown> = {
      'config.json': { hidden_size: 64, num_hidden_layers: 1, num_attention_heads: 4, intermediate_size: 8, vocab_size: 16 },
      'model.safetensors.index.json': { weight_map: { 'model.embed_tokens.weight': 'https://evil.example/model.safetensors' } },
    };
    const fetch = async (u: RequestInfo | URL) => {
      urls.push(String(u));
      const f = files[String(u).slice(base.length)];
      return f ? new Response(JSON.stringify(f)) : new Response('no', { status: 404 });
    };
    await expect(loadCheckpoint(urlSource(base, { cacheName: null, fetch: fetch as typeof globalThis.fetch }))).rejects.toThrow(/evil\.example.*refused/);
    expect(urls.filter((u) => !u.startsWith(base))).toEqual([]);
  });
});

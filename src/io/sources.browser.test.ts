// In Chromium: the loaders import without pulling node: modules into the page, and a model "picked" as
// File objects (a directory pick) loads with the same result as from disk.
import { describe, expect, it } from 'vitest';
import configUrl from '../../../shared/fixtures/qwen2-tiny/config.json?url';
import weightsUrl from '../../../shared/fixtures/qwen2-tiny/model.safetensors?url';
import adapterCfgUrl from '../../../shared/fixtures/qwen2-tiny/adapter/adapter_config.json?url';
import adapterUrl from '../../../shared/fixtures/qwen2-tiny/adapter/adapter_model.safetensors?url';
import { loadAdapter, loadCheckpoint } from '../engine/load-checkpoint.ts';
import { loraKey } from './peft.ts';
import { pickedFilesSource } from './sources.ts';
import type { LoadProgress } from './sources.ts';

async function pickedFile(url: string, relPath: string): Promise<File> {
  const res = await fetch(url);
  if (!res.ok) throw new Error(`${url}: HTTP ${res.status}`);
  const f = new File([await res.arrayBuffer()], relPath.split('/').pop()!);
  Object.defineProperty(f, 'webkitRelativePath', { value: relPath });
  return f;
}

describe('picked files in the browser', () => {
  it('loads the tiny checkpoint and its adapter from a directory pick', async () => {
    const files = await Promise.all([
      pickedFile(configUrl, 'qwen2-tiny/config.json'),
      pickedFile(weightsUrl, 'qwen2-tiny/model.safetensors'),
      pickedFile(adapterCfgUrl, 'qwen2-tiny/adapter/adapter_config.json'),
      pickedFile(adapterUrl, 'qwen2-tiny/adapter/adapter_model.safetensors'),
    ]);
    const events: LoadProgress[] = [];
    const ck = await loadCheckpoint(pickedFilesSource(files), { onProgress: (p) => events.push(p) });
    expect(ck.format).toBe('safetensors');
    expect(ck.config.numKvHeads).toBe(2);
    expect(ck.tensors.get('model.layers.1.mlp.down_proj.weight')!.shape).toEqual([64, 176]);
    expect(events.at(-1)).toEqual({ file: 'model.safetensors', bytesDone: files[1].size, bytesTotal: files[1].size, fromCache: false });
    // Independent decode of one tensor straight from the picked file's bytes.
    const buf = await files[1].arrayBuffer();
    const dv = new DataView(buf);
    const n = dv.getUint32(0, true);
    const hdr = JSON.parse(new TextDecoder().decode(new Uint8Array(buf, 8, n)));
    const [begin] = hdr['model.norm.weight'].data_offsets as [number, number];
    const want = Array.from({ length: 64 }, (_, i) => {
      const bits = dv.getUint16(8 + n + begin + 2 * i, true);
      return new Float32Array(new Uint32Array([bits << 16]).buffer)[0];
    });
    expect([...ck.tensors.get('model.norm.weight')!.f32()]).toEqual(want);
    const adapterFiles = [files[2], files[3]].map((f) => {
      const g = new File([f], f.name);
      Object.defineProperty(g, 'webkitRelativePath', { value: `adapter/${f.name}` });
      return g;
    });
    const ad = await loadAdapter(pickedFilesSource(adapterFiles), ck.config);
    expect(ad.pairs.size).toBe(14);
    expect(ad.pairs.get(loraKey(1, 'v'))!.B.length).toBe(32 * 4);
  });
});

import { describe, expect, it } from 'vitest';
import { copyFileSync, mkdtempSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { f32ToBf16Bits } from '../util/half.ts';
import { readSafetensorsF32 } from '../../tests/support/qwen2-fixture.ts';
import { loadAdapter, loadCheckpoint } from './load-checkpoint.ts';
import { loraKey } from '../io/peft.ts';
import { writeSafetensors } from '../io/safetensors.ts';
import { directorySource, MissingFileError } from '../io/sources.ts';
import type { LoadProgress } from './chat-engine.ts';
import { TINY } from '../io/test-fixtures.ts';

describe('loadCheckpoint from a directory', () => {
  it('loads the tiny fixture: config, every tensor equal to an independent reader, progress to the file size', async () => {
    const events: LoadProgress[] = [];
    const ck = await loadCheckpoint(directorySource(TINY), { onProgress: (p) => events.push(p) });
    expect(ck.config.hiddenSize).toBe(64);
    expect(ck.tokenizer).toEqual({ tokenizerJson: null, tokenizerConfig: null, generationConfig: null, chatTemplate: null, chatTemplateSource: null });
    const ref = readSafetensorsF32(join(TINY, 'model.safetensors'));
    expect(new Set(ck.tensors.keys())).toEqual(new Set(ref.keys()));
    for (const [name, r] of ref) {
      const t = ck.tensors.get(name)!;
      expect(t.shape).toEqual(r.shape);
      expect(t.f32()).toEqual(r.data);
    }
    const size = statSync(join(TINY, 'model.safetensors')).size;
    const last = events.filter((e) => e.file === 'model.safetensors').at(-1)!;
    expect(last).toEqual({ file: 'model.safetensors', bytesDone: size, bytesTotal: size, fromCache: false });
    ck.release();
    expect(() => ck.tensors.get('model.norm.weight')!.f16()).toThrow(/released/);
  });

  it('loads a sharded checkpoint through model.safetensors.index.json', async () => {
    const ref = readSafetensorsF32(join(TINY, 'model.safetensors'));
    const dir = mkdtempSync(join(tmpdir(), 'agentflow-shards-'));
    copyFileSync(join(TINY, 'config.json'), join(dir, 'config.json'));
    const names = [...ref.keys()];
    const halves = [names.slice(0, 9), names.slice(9)];
    const weightMap: Record<string, string> = {};
    halves.forEach((part, i) => {
      const file = `model-0000${i + 1}-of-00002.safetensors`;
      const tensors = part.map((name) => {
        const { shape, data } = ref.get(name)!;
        const bits = new Uint16Array(data.length);
        for (let j = 0; j < data.length; j++) bits[j] = f32ToBf16Bits(data[j]);
        weightMap[name] = file;
        return { name, shape, data: bits, dtype: 'BF16' as const };
      });
      writeFileSync(join(dir, file), writeSafetensors(tensors, { format: 'pt' }));
    });
    writeFileSync(join(dir, 'model.safetensors.index.json'), JSON.stringify({ metadata: { total_size: 0 }, weight_map: weightMap }));
    const ck = await loadCheckpoint(directorySource(dir));
    expect(ck.tensors.get(names[0])!.file).toBe('model-00001-of-00002.safetensors');
    expect(ck.tensors.get(names.at(-1)!)!.file).toBe('model-00002-of-00002.safetensors');
    for (const [name, r] of ref) expect(ck.tensors.get(name)!.f32()).toEqual(r.data);

    // An index entry whose shard lacks the tensor is an error naming both.
    writeFileSync(join(dir, 'model.safetensors.index.json'), JSON.stringify({ weight_map: { ...weightMap, 'model.extra.weight': 'model-00001-of-00002.safetensors' } }));
    await expect(loadCheckpoint(directorySource(dir))).rejects.toThrow(/maps 'model\.extra\.weight' to model-00001-of-00002\.safetensors, which does not contain it/);
  });

  it('rejects weights that disagree with config.json, naming the tensor', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'agentflow-bad-'));
    copyFileSync(join(TINY, 'model.safetensors'), join(dir, 'model.safetensors'));
    writeFileSync(join(dir, 'config.json'), JSON.stringify({ ...(await directorySource(TINY).readJson('config.json') as object), num_key_value_heads: 4 }));
    await expect(loadCheckpoint(directorySource(dir))).rejects.toThrow(/'model\.layers\.0\.self_attn\.k_proj\.weight' has shape \[32, 64\] but config\.json implies \[64, 64\]/);
  });

  it('reports a missing file by name', async () => {
    await expect(directorySource(TINY).readBytes('nope.bin')).rejects.toBeInstanceOf(MissingFileError);
    await expect(loadCheckpoint(directorySource(join(TINY, 'adapter')))).rejects.toThrow(/no config\.json \(nor mlc-chat-config\.json\)/);
  });

  it('lists files recursively', async () => {
    const names = await directorySource(TINY).list!();
    expect(names).toContain('adapter/adapter_config.json');
    expect(names).toContain('model.safetensors');
  });
});

describe('loadAdapter', () => {
  it('loads the fixture adapter against the fixture config', async () => {
    const ck = await loadCheckpoint(directorySource(TINY));
    const ad = await loadAdapter(directorySource(join(TINY, 'adapter')), ck.config);
    const ref = readSafetensorsF32(join(TINY, 'adapter', 'adapter_model.safetensors'));
    expect(ad.pairs.get(loraKey(0, 'gate'))!.A).toEqual(ref.get('base_model.model.model.layers.0.mlp.gate_proj.lora_A.weight')!.data);
    expect(ad.pairs.get(loraKey(0, 'gate'))!.scale).toBe(2);
  });
});

import { describe, expect, it } from 'vitest';
import { copyFileSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { qwen2RefForward, type Qwen2RefAdapter, type Qwen2RefLayer } from '../../tests/support/qwen2-ref.ts';
import { checkMlcQwen2, dequantizeQ4f16_1, loadMlcCheckpoint, parseMlcChatConfig, parseTensorCache, readMlcRecord, splitRows } from './mlc.ts';
import { loadAdapter } from '../engine/load-checkpoint.ts';
import { LORA_MODULES, loraKey } from './peft.ts';
import { directorySource } from './sources.ts';
import { NonFiniteError } from './finite.ts';
import { MLC_MANIFEST_05B, TINY_MLC } from './test-fixtures.ts';

const readJson = (p: string) => JSON.parse(readFileSync(p, 'utf8'));

describe('MLC manifest at full scale (Qwen2.5-0.5B-Instruct q4f16_1)', () => {
  const json = readJson(join(MLC_MANIFEST_05B, 'tensor-cache.json'));
  const m = parseTensorCache(json);
  const chat = parseMlcChatConfig(readJson(join(MLC_MANIFEST_05B, 'mlc-chat-config.json')));

  it('reads every record, and each shard is exactly tiled by its records', () => {
    expect(m.records.size).toBe(json.metadata.ParamSize);
    expect(m.shards.map((s) => s.dataPath)).toEqual(Array.from({ length: 8 }, (_, i) => `params_shard_${i}.bin`));
    expect(m.shards.reduce((a, s) => a + s.nbytes, 0)).toBe(json.metadata.ParamBytes);
    for (const s of m.shards) {
      const recs = [...m.records.values()].filter((r) => r.dataPath === s.dataPath).sort((a, b) => a.byteOffset - b.byteOffset);
      let at = 0;
      for (const r of recs) {
        expect(r.byteOffset, r.name).toBe(at);
        at += r.nbytes;
      }
      expect(at).toBe(s.nbytes);
    }
  });

  it('has every Qwen2 tensor for 24 layers with q4f16_1 shapes', () => {
    expect(chat.quantization).toBe('q4f16_1');
    expect(chat.config).toMatchObject({ hiddenSize: 896, numLayers: 24, numHeads: 14, numKvHeads: 2, headDim: 64, intermediateSize: 4864, vocabSize: 151936, tieWordEmbeddings: true });
    expect(() => checkMlcQwen2(m, chat.config)).not.toThrow();
    expect(m.records.get('model.layers.23.self_attn.c_attn.q_weight')).toMatchObject({ shape: [1152, 112], dtype: 'uint32' });
    expect(m.records.get('model.layers.23.mlp.gate_up_proj.q_scale')).toMatchObject({ shape: [9728, 28], dtype: 'float16' });
    expect(m.records.get('model.embed_tokens.q_weight')).toMatchObject({ dataPath: 'params_shard_0.bin', byteOffset: 0, nbytes: 151936 * 112 * 4 });
  });

  it('names the tensor when the manifest disagrees with the config or is inconsistent', () => {
    const c25 = parseMlcChatConfig({ ...readJson(join(MLC_MANIFEST_05B, 'mlc-chat-config.json')), model_config: { ...chat.raw.model_config as object, num_hidden_layers: 25 } });
    expect(() => checkMlcQwen2(m, c25.config)).toThrow(/mlc-chat-config\.json says num_hidden_layers is 25 but the weights hold layers for 24 \(model\.layers\.0 to model\.layers\.23\)/);
    const huge = parseMlcChatConfig({ ...readJson(join(MLC_MANIFEST_05B, 'mlc-chat-config.json')), model_config: { ...chat.raw.model_config as object, num_hidden_layers: 50_000_000 } });
    expect(() => checkMlcQwen2(m, huge.config)).toThrow(/num_hidden_layers is 50000000 but the weights hold layers for 24/);
    const noNorm = parseTensorCache({ ...json, records: json.records.map((s: { records: Array<{ name: string }> }) => ({ ...s, records: s.records.filter((r) => r.name !== 'model.layers.7.input_layernorm.weight') })) });
    expect(() => checkMlcQwen2(noNorm, chat.config)).toThrow(/missing tensor 'model\.layers\.7\.input_layernorm\.weight'/);
    const bad = structuredClone(json);
    bad.records[1].records[0].nbytes += 2;
    expect(() => parseTensorCache(bad)).toThrow(new RegExp(`tensor '${bad.records[1].records[0].name.replace(/\./g, '\\.')}': shape .* bytes but nbytes is`));
    const overlap = structuredClone(json);
    overlap.records[2].records[1].byteOffset -= 2;
    expect(() => parseTensorCache(overlap)).toThrow(/overlaps/);
  });
});

describe('q4f16_1 dequantizer', () => {
  it('decodes nibble j of a word at bits 4j..4j+3, (q - 7) * scale, one scale per 32 inputs', () => {
    // One row, 64 inputs: word k holds q = (k + j) mod 16 in nibble j.
    const qw = new Uint32Array(8);
    for (let k = 0; k < 8; k++) for (let j = 0; j < 8; j++) qw[k] = (qw[k] | (((k + j) % 16) << (4 * j))) >>> 0;
    const scales = new Uint16Array([0x3800, 0x4000]); // 0.5, 2
    const w = dequantizeQ4f16_1(qw, scales, 1, 64);
    for (let c = 0; c < 64; c++) {
      const k = Math.floor(c / 8);
      const j = c % 8;
      expect(w[c], `column ${c}`).toBe((((k + j) % 16) - 7) * (c < 32 ? 0.5 : 2));
    }
  });
});

describe('MLC tiny model (real bytes)', () => {
  it('reads q_weight as uint32, q_scale/biases/norms as f16, and dequantized fused weights split into the adapter shapes', async () => {
    const ck = await loadMlcCheckpoint(directorySource(TINY_MLC));
    const c = ck.config;
    expect(c).toMatchObject({ hiddenSize: 64, numHeads: 4, numKvHeads: 2, headDim: 16, intermediateSize: 192, numLayers: 2, vocabSize: 320 });
    expect(ck.raw('model.layers.0.self_attn.c_attn.q_weight')).toBeInstanceOf(Uint32Array);
    expect(ck.raw('model.layers.0.self_attn.c_attn.q_scale')).toBeInstanceOf(Uint16Array);
    const bias = ck.f32('model.layers.0.self_attn.c_attn.bias');
    expect(bias.length).toBe(128);
    const norm = ck.f32('model.norm.weight');
    expect(norm.every((x) => Number.isFinite(x) && x !== 0)).toBe(true);

    const adapter = await loadAdapter(directorySource(join(TINY_MLC, 'adapter')), c);
    const q = c.numHeads * c.headDim;
    const kv = c.numKvHeads * c.headDim;
    for (let l = 0; l < c.numLayers; l++) {
      const qkv = ck.dequantized(`model.layers.${l}.self_attn.c_attn`);
      const parts = splitRows(qkv, c.hiddenSize, [q, kv, kv]);
      const gu = splitRows(ck.dequantized(`model.layers.${l}.mlp.gate_up_proj`), c.hiddenSize, [c.intermediateSize, c.intermediateSize]);
      const mats = { q: parts[0], k: parts[1], v: parts[2], gate: gu[0], up: gu[1] } as const;
      for (const [m, W] of Object.entries(mats) as Array<[keyof typeof mats, Float32Array]>) {
        const p = adapter.pairs.get(loraKey(l, m))!;
        expect(W.length, `layer ${l} ${m}`).toBe(p.outFeatures * p.inFeatures);
      }
      // Every group of 32 holds its max |q - 7| = 7 (the quantizer maps the group's max |w| to ±7·scale).
      const qs = ck.raw(`model.layers.${l}.self_attn.c_attn.q_scale`) as Uint16Array;
      for (let row = 0; row < 128; row++) {
        for (let g = 0; g < 2; g++) {
          let mx = 0;
          for (let i = 0; i < 32; i++) mx = Math.max(mx, Math.abs(qkv[row * 64 + g * 32 + i]));
          const s = ck.f32(`model.layers.${l}.self_attn.c_attn.q_scale`)[row * 2 + g];
          if (qs[row * 2 + g] !== 0) expect(mx / s).toBe(7);
        }
      }
    }
  });

  it('a float64 forward pass over the dequantized weights reproduces expected.json (base and adapter)', async () => {
    const ck = await loadMlcCheckpoint(directorySource(TINY_MLC));
    const c = ck.config;
    const q = c.numHeads * c.headDim;
    const kv = c.numKvHeads * c.headDim;
    const layers: Qwen2RefLayer[] = [];
    for (let l = 0; l < c.numLayers; l++) {
      const p = `model.layers.${l}`;
      const [Wq, Wk, Wv] = splitRows(ck.dequantized(`${p}.self_attn.c_attn`), c.hiddenSize, [q, kv, kv]);
      const [bq, bk, bv] = splitRows(ck.f32(`${p}.self_attn.c_attn.bias`), 1, [q, kv, kv]);
      const [Wg, Wu] = splitRows(ck.dequantized(`${p}.mlp.gate_up_proj`), c.hiddenSize, [c.intermediateSize, c.intermediateSize]);
      layers.push({
        inputNorm: ck.f32(`${p}.input_layernorm.weight`),
        q: { W: Wq, b: bq },
        k: { W: Wk, b: bk },
        v: { W: Wv, b: bv },
        o: { W: ck.dequantized(`${p}.self_attn.o_proj`) },
        postNorm: ck.f32(`${p}.post_attention_layernorm.weight`),
        gate: { W: Wg },
        up: { W: Wu },
        down: { W: ck.dequantized(`${p}.mlp.down_proj`) },
      });
    }
    const weights = { embed: ck.dequantized('model.embed_tokens'), layers, finalNorm: ck.f32('model.norm.weight') };
    const ad = await loadAdapter(directorySource(join(TINY_MLC, 'adapter')), c);
    const refAdapter: Qwen2RefAdapter = {
      scale: ad.pairs.get(loraKey(0, 'q'))!.scale,
      layers: Array.from({ length: c.numLayers }, (_, l) =>
        Object.fromEntries(LORA_MODULES.map((m) => { const p = ad.pairs.get(loraKey(l, m))!; return [m, { A: p.A, B: p.B, rank: p.r }]; })),
      ),
    };
    const expected = readJson(join(TINY_MLC, 'expected.json'));
    for (const f of expected.forward) {
      const base = qwen2RefForward(c, weights, f.tokens);
      const withAd = qwen2RefForward(c, weights, f.tokens, refAdapter);
      expect(base.logprobs.length).toBe(f.logprobs_base.length);
      for (let t = 0; t < f.logprobs_base.length; t++) {
        expect(Math.abs(base.logprobs[t] - f.logprobs_base[t])).toBeLessThan(1e-6);
        expect(Math.abs(withAd.logprobs[t] - f.logprobs_adapter[t])).toBeLessThan(1e-6);
      }
    }
  });
});

describe('loadCheckpoint on an MLC folder', () => {
  it('recognises the folder and serves Hugging Face names whose float64 forward matches expected.json', async () => {
    const { loadCheckpoint } = await import('../engine/load-checkpoint.ts');
    const ck = await loadCheckpoint(directorySource(TINY_MLC));
    expect(ck.format).toBe('mlc-q4f16_1');
    const c = ck.config;
    const t = (name: string) => ck.tensors.get(name)!.f32();
    expect(ck.tensors.get('model.layers.1.self_attn.k_proj.weight')!.shape).toEqual([32, 64]);
    expect(ck.tensors.get('model.layers.1.mlp.up_proj.weight')!.shape).toEqual([192, 64]);
    const layers: Qwen2RefLayer[] = Array.from({ length: c.numLayers }, (_, l) => {
      const p = `model.layers.${l}`;
      return {
        inputNorm: t(`${p}.input_layernorm.weight`),
        q: { W: t(`${p}.self_attn.q_proj.weight`), b: t(`${p}.self_attn.q_proj.bias`) },
        k: { W: t(`${p}.self_attn.k_proj.weight`), b: t(`${p}.self_attn.k_proj.bias`) },
        v: { W: t(`${p}.self_attn.v_proj.weight`), b: t(`${p}.self_attn.v_proj.bias`) },
        o: { W: t(`${p}.self_attn.o_proj.weight`) },
        postNorm: t(`${p}.post_attention_layernorm.weight`),
        gate: { W: t(`${p}.mlp.gate_proj.weight`) },
        up: { W: t(`${p}.mlp.up_proj.weight`) },
        down: { W: t(`${p}.mlp.down_proj.weight`) },
      };
    });
    const weights = { embed: t('model.embed_tokens.weight'), layers, finalNorm: t('model.norm.weight') };
    const expected = readJson(join(TINY_MLC, 'expected.json'));
    for (const f of expected.forward) {
      const base = qwen2RefForward(c, weights, f.tokens);
      for (let i = 0; i < f.logprobs_base.length; i++) expect(Math.abs(base.logprobs[i] - f.logprobs_base[i])).toBeLessThan(1e-6);
    }
  });
});

describe('MLC records', () => {
  it("decodes float32 records stored as bf16 ('f32-to-bf16') and checks their packed size", () => {
    const m = parseTensorCache({
      records: [{ dataPath: 'params_shard_0.bin', format: 'raw-shard', nbytes: 12, records: [
        { name: 'w', shape: [3], dtype: 'float32', format: 'f32-to-bf16', nbytes: 6, byteOffset: 0 },
        { name: 'h', shape: [3], dtype: 'float16', format: 'f32-to-bf16', nbytes: 6, byteOffset: 6 },
      ] }],
    });
    const shard = new Uint8Array(12);
    const dv = new DataView(shard.buffer);
    [0x3f80, 0xc040, 0x3e20].forEach((b, i) => dv.setUint16(2 * i, b, true)); // 1, -3, 0.15625 in bf16
    [0x3c00, 0x4000, 0x0001].forEach((b, i) => dv.setUint16(6 + 2 * i, b, true));
    expect([...(readMlcRecord(shard, m.records.get('w')!) as Float32Array)]).toEqual([1, -3, 0.15625]);
    expect([...(readMlcRecord(shard, m.records.get('h')!) as Uint16Array)]).toEqual([0x3c00, 0x4000, 0x0001]);
    expect(() => readMlcRecord(shard.subarray(0, 10), m.records.get('h')!)).toThrow(/params_shard_0\.bin: tensor 'h' needs bytes up to 12/);
    expect(() =>
      parseTensorCache({ records: [{ dataPath: 's.bin', format: 'raw-shard', nbytes: 12, records: [{ name: 'w', shape: [3], dtype: 'float32', format: 'f32-to-bf16', nbytes: 12, byteOffset: 0 }] }] }),
    ).toThrow(/tensor 'w': shape \[3\] × float32 \(as bf16\) is 6 bytes but nbytes is 12/);
  });

  it('a NaN or infinity in a float record (scales, norms, biases) fails its read, naming the shard, tensor and element', () => {
    const m = parseTensorCache({
      records: [{ dataPath: 'params_shard_3.bin', format: 'raw-shard', nbytes: 24, records: [
        { name: 'x.q_scale', shape: [2, 2], dtype: 'float16', nbytes: 8, byteOffset: 0 },
        { name: 'x.bias', shape: [2], dtype: 'float32', nbytes: 8, byteOffset: 8 },
        { name: 'x.norm', shape: [2], dtype: 'float32', format: 'f32-to-bf16', nbytes: 4, byteOffset: 16 },
        { name: 'x.q_weight', shape: [1], dtype: 'uint32', nbytes: 4, byteOffset: 20 },
      ] }],
    });
    const shard = new Uint8Array(24);
    const dv = new DataView(shard.buffer);
    [0x3c00, 0x3c00, 0x3c00, 0x7e00].forEach((b, i) => dv.setUint16(2 * i, b, true)); // f16 NaN at [1, 1]
    dv.setFloat32(8, 1, true);
    dv.setFloat32(12, Infinity, true);
    dv.setUint16(16, 0xff80, true); // bf16 -Infinity
    dv.setUint32(20, 0xffffffff, true); // every bit pattern is a valid q_weight
    const read = (name: string) => () => readMlcRecord(shard, m.records.get(name)!);
    expect(read('x.q_scale')).toThrow(NonFiniteError);
    expect(read('x.q_scale')).toThrow(/params_shard_3\.bin: tensor 'x\.q_scale' has NaN at \[1, 1\]/);
    expect(read('x.bias')).toThrow(/params_shard_3\.bin: tensor 'x\.bias' has Infinity at index 1/);
    expect(read('x.norm')).toThrow(/tensor 'x\.norm' has -Infinity at index 0/);
    expect(read('x.q_weight')).not.toThrow();
  });

  it('finds the older ndarray-cache.json name and rejects a shard of the wrong size', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'agentflow-mlc-'));
    copyFileSync(join(TINY_MLC, 'tensor-cache.json'), join(dir, 'ndarray-cache.json'));
    copyFileSync(join(TINY_MLC, 'mlc-chat-config.json'), join(dir, 'mlc-chat-config.json'));
    copyFileSync(join(TINY_MLC, 'params_shard_0.bin'), join(dir, 'params_shard_0.bin'));
    const ck = await loadMlcCheckpoint(directorySource(dir));
    expect(ck.manifest.file).toBe('ndarray-cache.json');
    expect(ck.dequantized('model.layers.0.mlp.down_proj').length).toBe(64 * 192);
    writeFileSync(join(dir, 'params_shard_0.bin'), readFileSync(join(TINY_MLC, 'params_shard_0.bin')).subarray(0, 1000));
    await expect(loadMlcCheckpoint(directorySource(dir))).rejects.toThrow(/params_shard_0\.bin in .* is corrupt: it is 1000 bytes but ndarray-cache\.json says 67968/);
  });
});

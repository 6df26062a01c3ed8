import { describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseQwen2Config } from './qwen2-config.ts';
import { adapterBaseWarning, exportAdapter, loraKey, loraScale, parseAdapter, parseAdapterConfig, targetsModule, LORA_MODULES } from './peft.ts';
import { readSafetensors, writeSafetensors } from './safetensors.ts';
import { TINY } from './test-fixtures.ts';

const dir = join(TINY, 'adapter');
const cfgJson = JSON.parse(readFileSync(join(dir, 'adapter_config.json'), 'utf8'));
const weights = new Uint8Array(readFileSync(join(dir, 'adapter_model.safetensors')));
const base = parseQwen2Config(JSON.parse(readFileSync(join(TINY, 'config.json'), 'utf8')));

// Independent read of one fixture tensor with Buffer, for comparing values.
function fixtureTensor(name: string): Float32Array {
  const buf = Buffer.from(weights);
  const n = Number(buf.readBigUInt64LE(0));
  const t = JSON.parse(buf.subarray(8, 8 + n).toString('utf8'))[name];
  const out = new Float32Array((t.data_offsets[1] - t.data_offsets[0]) / 4);
  for (let i = 0; i < out.length; i++) out[i] = buf.readFloatLE(8 + n + t.data_offsets[0] + 4 * i);
  return out;
}

describe('PEFT adapter', () => {
  it('maps the fixture to (layer, module) pairs with A [r,in], B [out,r] and scale alpha/r', () => {
    const ad = parseAdapter(cfgJson, weights, { base });
    expect(ad.pairs.size).toBe(2 * 7);
    const q = ad.pairs.get(loraKey(1, 'q'))!;
    expect([q.r, q.inFeatures, q.outFeatures, q.scale]).toEqual([4, 64, 64, 2]);
    expect(q.A).toEqual(fixtureTensor('base_model.model.model.layers.1.self_attn.q_proj.lora_A.weight'));
    expect(q.B).toEqual(fixtureTensor('base_model.model.model.layers.1.self_attn.q_proj.lora_B.weight'));
    const k = ad.pairs.get(loraKey(0, 'k'))!;
    expect([k.inFeatures, k.outFeatures]).toEqual([64, 32]);
    const down = ad.pairs.get(loraKey(0, 'down'))!;
    expect([down.inFeatures, down.outFeatures]).toEqual([176, 64]);
    expect(down.B).toEqual(fixtureTensor('base_model.model.model.layers.0.mlp.down_proj.lora_B.weight'));
  });

  it('uses alpha/sqrt(r) with rslora', () => {
    const ad = parseAdapter({ ...cfgJson, use_rslora: true }, weights);
    expect(ad.pairs.get(loraKey(0, 'v'))!.scale).toBeCloseTo(8 / 2, 12);
    expect(loraScale({ r: 16, loraAlpha: 32, useRslora: true })).toBe(8);
  });

  it('accepts the .default. naming variant and a regex target_modules', () => {
    const st = readSafetensors(weights, 'adapter_model.safetensors');
    const renamed = writeSafetensors(
      st.names().map((n) => ({ name: n.replace(/\.lora_([AB])\.weight$/, '.lora_$1.default.weight'), shape: st.descriptor(n).shape, data: st.f32(n) })),
    );
    const cfg = { ...cfgJson, target_modules: '.*\\.(q_proj|k_proj|v_proj|o_proj|gate_proj|up_proj|down_proj)' };
    const ad = parseAdapter(cfg, renamed, { base });
    expect(ad.pairs.size).toBe(14);
    expect(ad.pairs.get(loraKey(1, 'up'))!.A).toEqual(fixtureTensor('base_model.model.model.layers.1.mlp.up_proj.lora_A.weight'));
    expect(targetsModule(ad.config.targetModules, 'model.layers.0.self_attn.q_proj')).toBe(true);
    expect(targetsModule(ad.config.targetModules, 'model.layers.0.self_attn.rotary')).toBe(false);
    expect(targetsModule(['q_proj'], 'model.layers.0.self_attn.q_proj')).toBe(true);
    expect(targetsModule(['q_proj'], 'model.layers.0.self_attn.k_proj')).toBe(false);
  });

  it('rejects an adapter made for another base, naming the tensor and both shapes', () => {
    const bigger = parseQwen2Config({ ...JSON.parse(readFileSync(join(TINY, 'config.json'), 'utf8')), intermediate_size: 192 });
    expect(() => parseAdapter(cfgJson, weights, { base: bigger })).toThrow(
      /'base_model\.model\.model\.layers\.0\.mlp\.gate_proj\.lora_B\.weight' has shape \[176, 4\] but the base model needs \[192, 4\] \(adapter made for another base\)/,
    );
    const wider = parseQwen2Config({ ...JSON.parse(readFileSync(join(TINY, 'config.json'), 'utf8')), hidden_size: 128, head_dim: 16 });
    expect(() => parseAdapter(cfgJson, weights, { base: wider })).toThrow(/lora_A\.weight' has shape \[4, 64\] but the base model needs \[4, 128\]/);
  });

  it('names bad config fields and unpaired or foreign tensors', () => {
    expect(() => parseAdapterConfig({ ...cfgJson, r: 0 })).toThrow(/adapter_config\.json: 'r' must be a positive integer/);
    expect(() => parseAdapterConfig({ ...cfgJson, target_modules: 3 })).toThrow(/'target_modules' must be/);
    expect(() => parseAdapterConfig({ ...cfgJson, alpha_pattern: { q_proj: 16 } })).toThrow(/'alpha_pattern' is set/);
    expect(parseAdapterConfig({ ...cfgJson, rank_pattern: {}, alpha_pattern: {} }).r).toBe(4);
    expect(() => parseAdapter({ ...cfgJson, r: 8 }, weights)).toThrow(/disagree with r=8/);
    const st = readSafetensors(weights, 'a');
    const onlyA = writeSafetensors(st.names().filter((n) => !n.includes('layers.1.mlp.down_proj.lora_B')).map((n) => ({ name: n, shape: st.descriptor(n).shape, data: st.f32(n) })));
    expect(() => parseAdapter(cfgJson, onlyA)).toThrow(/layer 1 mlp\.down_proj has lora_A but no lora_B/);
    const foreign = writeSafetensors([{ name: 'base_model.model.lm_head.lora_A.weight', shape: [4, 64], data: new Float32Array(256) }]);
    expect(() => parseAdapter(cfgJson, foreign)).toThrow(/tensor 'base_model\.model\.lm_head\.lora_A\.weight' is not a LoRA A\/B weight/);
  });

  it("honours target_modules: weights for modules it does not select are left out (as PEFT does) and listed", () => {
    const ad = parseAdapter({ ...cfgJson, target_modules: ['q_proj', 'v_proj'] }, weights, { base });
    expect([...ad.pairs.keys()].sort()).toEqual(['0.q', '0.v', '1.q', '1.v']);
    expect(ad.ignored).toHaveLength(10);
    expect(ad.ignored).toContain('model.layers.1.mlp.down_proj');
    const one = parseAdapter({ ...cfgJson, target_modules: 'model\\.layers\\.1\\.mlp\\.(gate|up)_proj' }, weights);
    expect([...one.pairs.keys()].sort()).toEqual(['1.gate', '1.up']);
    // PEFT's 'all-linear' is all seven projections; the fixture's own list selects everything.
    expect(parseAdapter({ ...cfgJson, target_modules: 'all-linear' }, weights, { base }).pairs.size).toBe(14);
    const all = parseAdapter(cfgJson, weights, { base });
    expect(all.pairs.size).toBe(14);
    expect(all.ignored).toBeUndefined();
  });

  it('refuses a target_modules name or regex that selects nothing, and weights none of which it selects', () => {
    expect(() => parseAdapter({ ...cfgJson, target_modules: ['q_proj', 'c_attn'] }, weights, { base })).toThrow(
      /adapter_config\.json: 'target_modules' entry "c_attn" names no module the runtime can adapt \(q_proj, k_proj, v_proj, o_proj, gate_proj, up_proj, down_proj of each of 2 layers\)/,
    );
    expect(() => parseAdapter({ ...cfgJson, target_modules: ['lm_head'] }, weights, { base })).toThrow(/entry "lm_head" names no module/);
    expect(() => parseAdapter({ ...cfgJson, target_modules: '.*\\.layers\\.7\\..*' }, weights, { base })).toThrow(/'target_modules' ".*" selects none of the q_proj, .* projections of the model's 2 layers/);
    const st = readSafetensors(weights, 'a');
    const qOnly = writeSafetensors(st.names().filter((n) => n.includes('.q_proj.')).map((n) => ({ name: n, shape: st.descriptor(n).shape, data: st.f32(n) })));
    expect(() => parseAdapter({ ...cfgJson, target_modules: ['v_proj'] }, qOnly, { base })).toThrow(/adapter_model\.safetensors: none of its LoRA weights is for a module that adapter_config\.json's target_modules \["v_proj"\] selects/);
    expect(() => parseAdapterConfig({ ...cfgJson, layers_to_transform: [0] })).toThrow(/'layers_to_transform' is set/);
    expect(() => parseAdapterConfig({ ...cfgJson, exclude_modules: ['q_proj'] })).toThrow(/'exclude_modules' is set/);
  });

  it("says a lora_alpha of 1e999 is not finite (JSON.parse makes it Infinity), rather than 'got null'", () => {
    const text = JSON.stringify({ ...cfgJson, lora_alpha: 'X' }).replace('"X"', '1e999');
    expect(() => parseAdapterConfig(JSON.parse(text))).toThrow(/^adapter_config\.json: 'lora_alpha' is Infinity, not a finite number$/);
    expect(() => parseAdapterConfig({ ...cfgJson, lora_alpha: '8' })).toThrow(/'lora_alpha' must be a number, got "8"/);
  });

  it('exports to PEFT files that reproduce the fixture adapter byte for byte', () => {
    const ad = parseAdapter(cfgJson, weights, { base });
    const out = exportAdapter(ad);
    expect(out.config).toMatchObject({
      peft_type: 'LORA', r: 4, lora_alpha: 8, use_rslora: false, base_model_name_or_path: 'qwen2-tiny',
      target_modules: ['q_proj', 'k_proj', 'v_proj', 'o_proj', 'gate_proj', 'up_proj', 'down_proj'],
    });
    const back = parseAdapter(JSON.parse(JSON.stringify(out.config)), out.weights, { base });
    for (const l of [0, 1]) for (const m of LORA_MODULES) {
      expect(back.pairs.get(loraKey(l, m))!.A).toEqual(ad.pairs.get(loraKey(l, m))!.A);
      expect(back.pairs.get(loraKey(l, m))!.B).toEqual(ad.pairs.get(loraKey(l, m))!.B);
    }
    // Same tensor order, offsets and data bytes as the PEFT-written fixture.
    const a = readSafetensors(weights, 'fixture');
    const b = readSafetensors(out.weights, 'export');
    expect(b.names()).toEqual(a.names());
    for (const n of a.names()) {
      expect(b.descriptor(n).byteOffset - b.header.dataOffset).toBe(a.descriptor(n).byteOffset - a.header.dataOffset);
    }
    expect(Buffer.from(out.weights.subarray(b.header.dataOffset)).equals(Buffer.from(weights.subarray(a.header.dataOffset)))).toBe(true);
  });
});

describe('adapterBaseWarning (issue 25, item 7: an adapter for another model loaded without a word)', () => {
  const cfg = (base: string | null) => ({ baseModelNameOrPath: base });
  it('names both models when the base differs', () => {
    const w = adapterBaseWarning(cfg('Qwen/Qwen2.5-1.5B-Instruct'), 'Qwen2.5-0.5B-Instruct-q4f16_1-MLC', 'a1');
    expect(w).toMatch(/adapter a1 was made for 'Qwen\/Qwen2\.5-1\.5B-Instruct'.*not the loaded model 'Qwen2\.5-0\.5B-Instruct-q4f16_1-MLC'/);
  });
  it('is quiet for the same model under an org prefix, a folder path or a web-llm build, and when a name is unknown', () => {
    expect(adapterBaseWarning(cfg('Qwen/Qwen2.5-0.5B-Instruct'), 'Qwen2.5-0.5B-Instruct-q4f16_1-MLC', 'a')).toBeNull();
    expect(adapterBaseWarning(cfg('/models/qwen2-tiny/'), 'qwen2-tiny', 'a')).toBeNull();
    expect(adapterBaseWarning(cfg('Qwen/Qwen2.5-0.5B-Instruct'), 'Qwen2.5-0.5B-Instruct-q4f32_1-MLC', 'a')).toBeNull();
    expect(adapterBaseWarning(cfg(null), 'qwen2-tiny', 'a')).toBeNull();
    expect(adapterBaseWarning(cfg('qwen2-tiny'), null, 'a')).toBeNull();
  });
});

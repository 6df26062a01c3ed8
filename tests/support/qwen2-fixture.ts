// Reads the qwen2-tiny fixture (Hugging Face config + safetensors + PEFT adapter) into the float64
// reference's shapes. Deliberately independent of src/io so that the reference does not share
// a loader bug with the engine it checks. Node only.
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { MODULE_PATH } from '../../src/io/peft';
import { bf16BitsToF32, f16BitsToF32 } from '../../src/util/half';
import type { LoraModule, Qwen2RefAdapter, Qwen2RefConfig, Qwen2RefLayer, Qwen2RefWeights } from './qwen2-ref';

export const FIXTURES = resolve(__dirname, '../../../shared/fixtures');
export const TINY = join(FIXTURES, 'qwen2-tiny');

export interface FixtureExpected {
  forward: Array<{ tokens: number[]; logits_base_last: number[]; logits_adapter_last: number[]; logprobs_base: number[]; logprobs_adapter: number[] }>;
  greedy: { prompt: number[]; adapter: boolean; continuation: number[]; top1_top2_margins: number[] };
}

export function readExpected(dir = TINY): FixtureExpected {
  return JSON.parse(readFileSync(join(dir, 'expected.json'), 'utf8')) as FixtureExpected;
}

/** Minimal safetensors parse: name -> float values (BF16, F16, F32). */
export function readSafetensorsF32(file: string): Map<string, { shape: number[]; data: Float32Array }> {
  const buf = readFileSync(file);
  const headerLen = Number(buf.readBigUInt64LE(0));
  const header = JSON.parse(buf.subarray(8, 8 + headerLen).toString('utf8')) as Record<string, { dtype: string; shape: number[]; data_offsets: [number, number] }>;
  const base = 8 + headerLen;
  const out = new Map<string, { shape: number[]; data: Float32Array }>();
  for (const [name, t] of Object.entries(header)) {
    if (name === '__metadata__') continue;
    const [s, e] = t.data_offsets;
    const bytes = buf.subarray(base + s, base + e);
    const n = t.shape.reduce((a, b) => a * b, 1);
    const data = new Float32Array(n);
    if (t.dtype === 'F32') {
      for (let i = 0; i < n; i++) data[i] = bytes.readFloatLE(i * 4);
    } else if (t.dtype === 'BF16') {
      for (let i = 0; i < n; i++) data[i] = bf16BitsToF32(bytes.readUInt16LE(i * 2));
    } else if (t.dtype === 'F16') {
      for (let i = 0; i < n; i++) data[i] = f16BitsToF32(bytes.readUInt16LE(i * 2));
    } else {
      throw new Error(`${file}: tensor ${name} has unsupported dtype ${t.dtype}`);
    }
    out.set(name, { shape: t.shape, data });
  }
  return out;
}

export function readFixtureConfig(dir = TINY): Qwen2RefConfig {
  const c = JSON.parse(readFileSync(join(dir, 'config.json'), 'utf8'));
  return {
    hiddenSize: c.hidden_size,
    intermediateSize: c.intermediate_size,
    numHeads: c.num_attention_heads,
    numKvHeads: c.num_key_value_heads,
    headDim: c.head_dim ?? c.hidden_size / c.num_attention_heads,
    numLayers: c.num_hidden_layers,
    vocabSize: c.vocab_size,
    ropeTheta: c.rope_theta,
    rmsNormEps: c.rms_norm_eps,
    tieWordEmbeddings: c.tie_word_embeddings ?? false,
  };
}

export function readFixtureWeights(dir = TINY): { config: Qwen2RefConfig; weights: Qwen2RefWeights } {
  const config = readFixtureConfig(dir);
  const t = readSafetensorsF32(join(dir, 'model.safetensors'));
  const get = (name: string) => {
    const v = t.get(name);
    if (!v) throw new Error(`${dir}/model.safetensors: missing tensor ${name}`);
    return v.data;
  };
  const layers: Qwen2RefLayer[] = [];
  for (let l = 0; l < config.numLayers; l++) {
    const p = `model.layers.${l}`;
    layers.push({
      inputNorm: get(`${p}.input_layernorm.weight`),
      q: { W: get(`${p}.self_attn.q_proj.weight`), b: get(`${p}.self_attn.q_proj.bias`) },
      k: { W: get(`${p}.self_attn.k_proj.weight`), b: get(`${p}.self_attn.k_proj.bias`) },
      v: { W: get(`${p}.self_attn.v_proj.weight`), b: get(`${p}.self_attn.v_proj.bias`) },
      o: { W: get(`${p}.self_attn.o_proj.weight`) },
      postNorm: get(`${p}.post_attention_layernorm.weight`),
      gate: { W: get(`${p}.mlp.gate_proj.weight`) },
      up: { W: get(`${p}.mlp.up_proj.weight`) },
      down: { W: get(`${p}.mlp.down_proj.weight`) },
    });
  }
  return {
    config,
    weights: {
      embed: get('model.embed_tokens.weight'),
      layers,
      finalNorm: get('model.norm.weight'),
      lmHead: config.tieWordEmbeddings ? undefined : get('lm_head.weight'),
    },
  };
}

export function readFixtureAdapter(dir = join(TINY, 'adapter'), numLayers = 2): Qwen2RefAdapter {
  const cfg = JSON.parse(readFileSync(join(dir, 'adapter_config.json'), 'utf8'));
  const t = readSafetensorsF32(join(dir, 'adapter_model.safetensors'));
  const r: number = cfg.r;
  const scale = cfg.use_rslora ? cfg.lora_alpha / Math.sqrt(r) : cfg.lora_alpha / r;
  const layers: Qwen2RefAdapter['layers'] = [];
  for (let l = 0; l < numLayers; l++) {
    const entry: Qwen2RefAdapter['layers'][number] = {};
    for (const [m, path] of Object.entries(MODULE_PATH) as Array<[LoraModule, string]>) {
      const A = t.get(`base_model.model.model.layers.${l}.${path}.lora_A.weight`);
      const B = t.get(`base_model.model.model.layers.${l}.${path}.lora_B.weight`);
      if (A && B) entry[m] = { A: A.data, B: B.data, rank: r };
    }
    layers.push(entry);
  }
  return { scale, layers };
}

export const TINY_MLC = join(FIXTURES, 'qwen2-tiny-q4f16_1-MLC');

export interface MlcFixtureExpected {
  forward: Array<{ tokens: number[]; logprobs_base: number[]; logprobs_adapter: number[] }>;
  greedy: { prompt: number[]; adapter: boolean; continuation: number[]; top1_top2_margins: number[] };
}

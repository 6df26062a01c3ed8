// Hugging Face Qwen2 config.json -> typed, validated Qwen2Config, and the check that a checkpoint's tensors
// are exactly the ones (and shapes) that config implies.
import { AgentFlowError, type ErrorCategory } from '../errors';
import type { TensorDescriptor } from './safetensors.ts';
import { valueText } from '../util/value-text.ts';

export interface Qwen2Config {
  hiddenSize: number;
  numLayers: number;
  numHeads: number;
  numKvHeads: number;
  headDim: number;
  intermediateSize: number;
  vocabSize: number;
  ropeTheta: number;
  rmsNormEps: number;
  tieWordEmbeddings: boolean;
  maxPositionEmbeddings: number;
  bosTokenId: number | null;
  eosTokenIds: number[];
  torchDtype: string;
}

export class ConfigError extends AgentFlowError {
  override readonly category: ErrorCategory = 'bad-config';
  constructor(message: string) {
    super(message);
    this.name = 'ConfigError';
  }
}

type Json = Record<string, unknown>;

function posInt(cfg: Json, key: string, file: string): number {
  const v = cfg[key];
  if (typeof v !== 'number' || !Number.isInteger(v) || v <= 0) {
    throw new ConfigError(`${file}: '${key}' must be a positive integer, got ${valueText(v)}`);
  }
  return v;
}

function posNum(cfg: Json, key: string, file: string, fallback?: number): number {
  const v = cfg[key] ?? fallback;
  if (typeof v !== 'number' || !Number.isFinite(v) || v <= 0) {
    throw new ConfigError(`${file}: '${key}' must be a finite positive number, got ${valueText(v)}`);
  }
  return v;
}

/** Parses a Qwen2/Qwen2.5 config.json object. `file` names the source in error messages. */
export function parseQwen2Config(json: unknown, file = 'config.json'): Qwen2Config {
  if (!json || typeof json !== 'object' || Array.isArray(json)) throw new ConfigError(`${file}: not a JSON object`);
  const cfg = json as Json;
  const modelType = cfg.model_type;
  if (modelType !== undefined && modelType !== 'qwen2') {
    throw new ConfigError(`${file}: 'model_type' is ${JSON.stringify(modelType)}; only 'qwen2' (Qwen2/Qwen2.5) is supported`);
  }
  if (cfg.hidden_act !== undefined && cfg.hidden_act !== 'silu') {
    throw new ConfigError(`${file}: 'hidden_act' is ${JSON.stringify(cfg.hidden_act)}; the runtime implements only 'silu'`);
  }
  const hiddenSize = posInt(cfg, 'hidden_size', file);
  const numLayers = posInt(cfg, 'num_hidden_layers', file);
  const numHeads = posInt(cfg, 'num_attention_heads', file);
  const numKvHeads = cfg.num_key_value_heads === undefined ? numHeads : posInt(cfg, 'num_key_value_heads', file);
  const intermediateSize = posInt(cfg, 'intermediate_size', file);
  const vocabSize = posInt(cfg, 'vocab_size', file);
  if (hiddenSize % numHeads !== 0) {
    throw new ConfigError(`${file}: 'num_attention_heads' (${numHeads}) must divide 'hidden_size' (${hiddenSize})`);
  }
  const headDim = cfg.head_dim === undefined ? hiddenSize / numHeads : posInt(cfg, 'head_dim', file);
  if (numHeads % numKvHeads !== 0) {
    throw new ConfigError(`${file}: 'num_key_value_heads' (${numKvHeads}) must divide 'num_attention_heads' (${numHeads})`);
  }
  if (headDim % 2 !== 0) throw new ConfigError(`${file}: 'head_dim' (${headDim}) must be even for rotary embeddings`);
  const ropeTheta = posNum(cfg, 'rope_theta', file, 10000);
  const rmsNormEps = posNum(cfg, 'rms_norm_eps', file, 1e-6);
  const maxPositionEmbeddings = cfg.max_position_embeddings === undefined ? 32768 : posInt(cfg, 'max_position_embeddings', file);
  const tie = cfg.tie_word_embeddings ?? false;
  if (typeof tie !== 'boolean') throw new ConfigError(`${file}: 'tie_word_embeddings' must be true or false`);
  if (cfg.rope_scaling != null) {
    throw new ConfigError(`${file}: 'rope_scaling' is set (${JSON.stringify(cfg.rope_scaling)}); scaled RoPE is not implemented`);
  }
  const tokenId = (v: unknown, key: string): number => {
    if (typeof v !== 'number' || !Number.isInteger(v) || v < 0 || v >= vocabSize) {
      throw new ConfigError(`${file}: '${key}' ${valueText(v)} is not a token id below vocab_size ${vocabSize}`);
    }
    return v;
  };
  const bosTokenId = cfg.bos_token_id == null ? null : tokenId(cfg.bos_token_id, 'bos_token_id');
  const eosRaw = cfg.eos_token_id;
  const eosTokenIds = eosRaw == null ? [] : (Array.isArray(eosRaw) ? eosRaw : [eosRaw]).map((v) => tokenId(v, 'eos_token_id'));
  const torchDtype = typeof cfg.torch_dtype === 'string' ? cfg.torch_dtype : typeof cfg.dtype === 'string' ? cfg.dtype : 'float32';
  return {
    hiddenSize,
    numLayers,
    numHeads,
    numKvHeads,
    headDim,
    intermediateSize,
    vocabSize,
    ropeTheta,
    rmsNormEps,
    tieWordEmbeddings: tie,
    maxPositionEmbeddings,
    bosTokenId,
    eosTokenIds,
    torchDtype,
  };
}

/** Every tensor a Hugging Face Qwen2ForCausalLM checkpoint with this config holds, with its shape. */
export function expectedQwen2Tensors(c: Qwen2Config): Map<string, number[]> {
  const h = c.hiddenSize;
  const q = c.numHeads * c.headDim;
  const kv = c.numKvHeads * c.headDim;
  const m = new Map<string, number[]>();
  m.set('model.embed_tokens.weight', [c.vocabSize, h]);
  for (let l = 0; l < c.numLayers; l++) {
    const p = `model.layers.${l}.`;
    m.set(`${p}input_layernorm.weight`, [h]);
    m.set(`${p}post_attention_layernorm.weight`, [h]);
    m.set(`${p}self_attn.q_proj.weight`, [q, h]);
    m.set(`${p}self_attn.q_proj.bias`, [q]);
    m.set(`${p}self_attn.k_proj.weight`, [kv, h]);
    m.set(`${p}self_attn.k_proj.bias`, [kv]);
    m.set(`${p}self_attn.v_proj.weight`, [kv, h]);
    m.set(`${p}self_attn.v_proj.bias`, [kv]);
    m.set(`${p}self_attn.o_proj.weight`, [h, q]);
    m.set(`${p}mlp.gate_proj.weight`, [c.intermediateSize, h]);
    m.set(`${p}mlp.up_proj.weight`, [c.intermediateSize, h]);
    m.set(`${p}mlp.down_proj.weight`, [h, c.intermediateSize]);
  }
  m.set('model.norm.weight', [h]);
  if (!c.tieWordEmbeddings) m.set('lm_head.weight', [c.vocabSize, h]);
  return m;
}

const fmt = (s: number[]) => `[${s.join(', ')}]`;

/** How many decoder layers `names` hold tensors for: 1 + the highest N of `model.layers.N.`, or 0. */
export function heldLayers(names: Iterable<string>): number {
  let n = 0;
  for (const name of names) {
    const m = /^model\.layers\.(\d+)\./.exec(name);
    if (m) n = Math.max(n, Number(m[1]) + 1);
  }
  return n;
}

/**
 * Throws when the config asks for more layers than `names` hold. Run before anything is made per layer:
 * a config.json claiming millions of layers would otherwise build the name list (gigabytes) before failing.
 */
export function checkLayerCount(config: Qwen2Config, names: Iterable<string>, file = 'config.json'): void {
  const held = heldLayers(names);
  if (config.numLayers > held) {
    const which = held ? `${held} (model.layers.0 to model.layers.${held - 1})` : 'none';
    throw new ConfigError(`${file} says num_hidden_layers is ${config.numLayers} but the weights hold layers for ${which}: config and weights disagree`);
  }
}

/**
 * Throws unless every tensor the config implies is present with the right shape. A tied checkpoint that
 * also carries lm_head.weight is accepted (some exporters write it); other unknown tensors are ignored.
 */
export function checkWeights(config: Qwen2Config, tensors: Iterable<Pick<TensorDescriptor, 'name' | 'shape'>>): void {
  const have = new Map<string, number[]>();
  for (const t of tensors) have.set(t.name, t.shape);
  checkLayerCount(config, have.keys());
  const missing: string[] = [];
  for (const [name, shape] of expectedQwen2Tensors(config)) {
    const got = have.get(name);
    if (!got) {
      missing.push(name);
      continue;
    }
    if (got.length !== shape.length || got.some((d, i) => d !== shape[i])) {
      throw new ConfigError(`tensor '${name}' has shape ${fmt(got)} but config.json implies ${fmt(shape)} (config and weights disagree)`);
    }
  }
  if (missing.length) {
    const list = missing.slice(0, 5).join(', ') + (missing.length > 5 ? `, … (${missing.length} in all)` : '');
    throw new ConfigError(`checkpoint is missing tensors that config.json implies: ${list}`);
  }
}

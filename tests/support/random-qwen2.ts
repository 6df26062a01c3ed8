// Random small Qwen2 models made in memory, for GPU-vs-reference tests over shapes the fixture does not
// cover (head counts, GQA ratios, untied heads, odd sizes). Matrices are rounded through f16 so the
// float64 reference sees exactly the values the GPU reads; norms and biases stay f32 like on the GPU.
import { Rng } from '../../src/util/rng';
import { roundToF16, toF16Array } from '../../src/util/half';
import type { Qwen2Config } from '../../src/io/qwen2-config';
import { loraKey, moduleShape, type LoraAdapter, type LoraModule, type LoraPair } from '../../src/io/peft';
import type { TensorSource, WeightSource } from '../../src/model/weights';
import { writeSafetensors } from '../../src/io/safetensors';
import { randomLayers } from '../../src/trainer/random-layers';
import { LORA_MODULES, type Qwen2RefAdapter, type Qwen2RefConfig, type Qwen2RefWeights, type RefLoraPair } from './qwen2-ref';

export interface RandomQwen2Options {
  hiddenSize?: number;
  numHeads?: number;
  numKvHeads?: number;
  headDim?: number;
  intermediateSize?: number;
  numLayers?: number;
  vocabSize?: number;
  tie?: boolean;
  ropeTheta?: number;
}

function f32(a: ArrayLike<number>): Float32Array {
  return Float32Array.from(a);
}

export function randomQwen2(seed: number, o: RandomQwen2Options = {}): { config: Qwen2RefConfig; weights: Qwen2RefWeights } {
  const rng = new Rng(seed);
  const numHeads = o.numHeads ?? 4;
  const headDim = o.headDim ?? 8;
  const config: Qwen2RefConfig = {
    hiddenSize: o.hiddenSize ?? numHeads * headDim,
    intermediateSize: o.intermediateSize ?? 40,
    numHeads,
    numKvHeads: o.numKvHeads ?? 2,
    headDim,
    numLayers: o.numLayers ?? 2,
    vocabSize: o.vocabSize ?? 50,
    ropeTheta: o.ropeTheta ?? 10000,
    rmsNormEps: 1e-6,
    tieWordEmbeddings: o.tie ?? true,
  };
  const { hiddenSize: H, vocabSize: V } = config;
  // Scaled so activations stay O(1) through the layers and the softmax is neither flat nor one-hot.
  const mat = (out: number, inp: number) => f32(roundToF16(rng.fill(out * inp, 1 / Math.sqrt(inp))));
  const vec = (n: number, mean: number, scale: number) => f32(Array.from(rng.fill(n, scale), (v) => v + mean));
  const layers = randomLayers(config, mat, vec);
  const weights: Qwen2RefWeights = {
    embed: f32(roundToF16(rng.fill(V * H, 1))),
    layers,
    finalNorm: vec(H, 1, 0.1),
    lmHead: config.tieWordEmbeddings ? undefined : mat(V, H),
  };
  return { config, weights };
}

/** A random LoRA adapter on `modules` of every layer; B is nonzero so the adapter changes the output. */
export function randomAdapter(seed: number, config: Qwen2RefConfig, rank = 4, alpha = 8, modules: readonly (typeof LORA_MODULES)[number][] = LORA_MODULES): Qwen2RefAdapter {
  const rng = new Rng(seed);
  const { hiddenSize: H, intermediateSize: I, numHeads: nH, numKvHeads: nKV, headDim: hd } = config;
  const dims = { q: [nH * hd, H], k: [nKV * hd, H], v: [nKV * hd, H], o: [H, nH * hd], gate: [I, H], up: [I, H], down: [H, I] } as const;
  const layers: Qwen2RefAdapter['layers'] = [];
  for (let l = 0; l < config.numLayers; l++) {
    const entry: Qwen2RefAdapter['layers'][number] = {};
    for (const m of modules) {
      const [out, inp] = dims[m];
      entry[m] = { A: rng.fill(rank * inp, 1 / Math.sqrt(inp)), B: rng.fill(out * rank, 0.3 / Math.sqrt(rank)), rank };
    }
    layers.push(entry);
  }
  return { scale: alpha / rank, layers };
}

/** Random token ids in [0, V). */
export function randomTokens(rng: Rng, n: number, vocab: number): number[] {
  return Array.from({ length: n }, () => rng.int(vocab));
}

// ---- the same model in the engine's input types ----

export function toQwen2Config(c: Qwen2RefConfig, eos: number[] = []): Qwen2Config {
  return { ...c, maxPositionEmbeddings: 4096, bosTokenId: null, eosTokenIds: eos, torchDtype: 'float16' };
}

function tensor(name: string, shape: number[], data: ArrayLike<number>): TensorSource {
  const f = Float32Array.from(data);
  return { name, shape, f16: () => toF16Array(f), f32: () => f.slice() };
}

/** Hugging Face-named tensors, as io/checkpoint would produce them from a safetensors file. */
export function toWeightSource(c: Qwen2RefConfig, w: Qwen2RefWeights): WeightSource {
  const H = c.hiddenSize;
  const qd = c.numHeads * c.headDim;
  const kvd = c.numKvHeads * c.headDim;
  const I = c.intermediateSize;
  const m = new Map<string, TensorSource>();
  const put = (name: string, shape: number[], data: ArrayLike<number>) => m.set(name, tensor(name, shape, data));
  put('model.embed_tokens.weight', [c.vocabSize, H], w.embed);
  w.layers.forEach((L, l) => {
    const p = `model.layers.${l}.`;
    put(`${p}input_layernorm.weight`, [H], L.inputNorm);
    put(`${p}post_attention_layernorm.weight`, [H], L.postNorm);
    put(`${p}self_attn.q_proj.weight`, [qd, H], L.q.W);
    put(`${p}self_attn.q_proj.bias`, [qd], L.q.b!);
    put(`${p}self_attn.k_proj.weight`, [kvd, H], L.k.W);
    put(`${p}self_attn.k_proj.bias`, [kvd], L.k.b!);
    put(`${p}self_attn.v_proj.weight`, [kvd, H], L.v.W);
    put(`${p}self_attn.v_proj.bias`, [kvd], L.v.b!);
    put(`${p}self_attn.o_proj.weight`, [H, qd], L.o.W);
    put(`${p}mlp.gate_proj.weight`, [I, H], L.gate.W);
    put(`${p}mlp.up_proj.weight`, [I, H], L.up.W);
    put(`${p}mlp.down_proj.weight`, [H, I], L.down.W);
  });
  put('model.norm.weight', [H], w.finalNorm);
  if (!c.tieWordEmbeddings) put('lm_head.weight', [c.vocabSize, H], w.lmHead!);
  return m;
}

/** The reference adapter as io/peft's LoraAdapter. `alpha` is only recorded in the config. */
export function toLoraAdapter(c: Qwen2RefConfig, a: Qwen2RefAdapter): LoraAdapter {
  const pairs = new Map<string, LoraPair>();
  let r = 0;
  a.layers.forEach((entry, layer) => {
    for (const [module, p] of Object.entries(entry) as Array<[LoraModule, RefLoraPair]>) {
      const { inFeatures, outFeatures } = moduleShape(toQwen2Config(c), module);
      r = p.rank;
      pairs.set(loraKey(layer, module), { layer, module, A: Float32Array.from(p.A), B: Float32Array.from(p.B), r: p.rank, inFeatures, outFeatures, scale: a.scale });
    }
  });
  return { config: { r, loraAlpha: a.scale * r, targetModules: [...LORA_MODULES], useRslora: false, baseModelNameOrPath: null }, pairs };
}

/** The model as the files of a Hugging Face folder: config.json and an F32 model.safetensors. */
export function toHfFiles(c: Qwen2RefConfig, w: Qwen2RefWeights, eos: number[] = []): Record<string, Uint8Array> {
  const config = {
    architectures: ['Qwen2ForCausalLM'],
    model_type: 'qwen2',
    hidden_act: 'silu',
    hidden_size: c.hiddenSize,
    intermediate_size: c.intermediateSize,
    num_attention_heads: c.numHeads,
    num_key_value_heads: c.numKvHeads,
    head_dim: c.headDim,
    num_hidden_layers: c.numLayers,
    vocab_size: c.vocabSize,
    max_position_embeddings: 1024,
    rope_theta: c.ropeTheta,
    rms_norm_eps: c.rmsNormEps,
    tie_word_embeddings: c.tieWordEmbeddings,
    eos_token_id: eos.length === 1 ? eos[0] : eos,
  };
  const tensors = [...toWeightSource(c, w).values()].map((t) => ({ name: t.name, shape: t.shape, data: t.f32() }));
  return { 'config.json': new TextEncoder().encode(JSON.stringify(config)), 'model.safetensors': writeSafetensors(tensors) };
}

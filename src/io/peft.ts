// PEFT LoRA adapters (adapter_config.json + adapter_model.safetensors) <-> per-layer, per-module A/B pairs.
// PEFT computes y = W x + scale · B (A x) with scale = lora_alpha / r, or lora_alpha / sqrt(r) when
// use_rslora is set (peft/tuners/lora/layer.py, update_layer).
import { AgentFlowError, type ErrorCategory } from '../errors';
import type { Qwen2Config } from './qwen2-config.ts';
import { readSafetensors, writeSafetensors, type WritableTensor } from './safetensors.ts';
import { valueText } from '../util/value-text.ts';

export const LORA_MODULES = ['q', 'k', 'v', 'o', 'gate', 'up', 'down'] as const;
export type LoraModule = (typeof LORA_MODULES)[number];

/** Module short name -> its path inside a Qwen2 decoder layer. */
export const MODULE_PATH: Record<LoraModule, string> = {
  q: 'self_attn.q_proj',
  k: 'self_attn.k_proj',
  v: 'self_attn.v_proj',
  o: 'self_attn.o_proj',
  gate: 'mlp.gate_proj',
  up: 'mlp.up_proj',
  down: 'mlp.down_proj',
};
const PATH_TO_MODULE = new Map(Object.entries(MODULE_PATH).map(([m, p]) => [p, m as LoraModule]));

export interface LoraAdapterConfig {
  r: number;
  loraAlpha: number;
  /** A list of module names, or a regular expression PEFT full-matches against module paths. */
  targetModules: string[] | string;
  useRslora: boolean;
  baseModelNameOrPath: string | null;
}

export interface LoraPair {
  layer: number;
  module: LoraModule;
  /** [r, in] row-major. */
  A: Float32Array;
  /** [out, r] row-major. */
  B: Float32Array;
  r: number;
  inFeatures: number;
  outFeatures: number;
  scale: number;
}

export interface LoraAdapter {
  config: LoraAdapterConfig;
  /** Keyed by `${layer}.${module}`; use loraKey(). */
  pairs: Map<string, LoraPair>;
  /**
   * Modules the weights file has LoRA tensors for but target_modules does not select (their paths, e.g.
   * 'model.layers.0.mlp.down_proj'): left out, as PEFT leaves them out. Absent when there were none.
   */
  ignored?: string[];
}

export class AdapterError extends AgentFlowError {
  override readonly category: ErrorCategory = 'bad-adapter';
  constructor(message: string) {
    super(message);
    this.name = 'AdapterError';
  }
}

export const loraKey = (layer: number, module: LoraModule) => `${layer}.${module}`;

export function loraScale(cfg: Pick<LoraAdapterConfig, 'r' | 'loraAlpha' | 'useRslora'>): number {
  return cfg.useRslora ? cfg.loraAlpha / Math.sqrt(cfg.r) : cfg.loraAlpha / cfg.r;
}

export function parseAdapterConfig(json: unknown, file = 'adapter_config.json'): LoraAdapterConfig {
  if (!json || typeof json !== 'object' || Array.isArray(json)) throw new AdapterError(`${file}: not a JSON object`);
  const c = json as Record<string, unknown>;
  if (c.peft_type !== undefined && c.peft_type !== 'LORA') {
    throw new AdapterError(`${file}: 'peft_type' is ${JSON.stringify(c.peft_type)}; only LORA adapters are supported`);
  }
  const r = c.r;
  if (typeof r !== 'number' || !Number.isInteger(r) || r <= 0) throw new AdapterError(`${file}: 'r' must be a positive integer, got ${valueText(r)}`);
  const alpha = c.lora_alpha ?? 8;
  if (typeof alpha !== 'number') throw new AdapterError(`${file}: 'lora_alpha' must be a number, got ${valueText(alpha)}`);
  if (!Number.isFinite(alpha)) throw new AdapterError(`${file}: 'lora_alpha' is ${alpha}, not a finite number`);
  const tm = c.target_modules;
  let targetModules: string[] | string;
  if (typeof tm === 'string') {
    try {
      new RegExp(tm);
    } catch (e) {
      throw new AdapterError(`${file}: 'target_modules' regex ${JSON.stringify(tm)} does not compile (${(e as Error).message})`);
    }
    targetModules = tm;
  } else if (Array.isArray(tm) && tm.every((x) => typeof x === 'string')) {
    targetModules = tm as string[];
  } else {
    throw new AdapterError(`${file}: 'target_modules' must be a list of names or a regex string, got ${JSON.stringify(tm)}`);
  }
  if (c.fan_in_fan_out === true) throw new AdapterError(`${file}: 'fan_in_fan_out' adapters (Conv1D layouts) are not supported`);
  // Narrowing what target_modules selects by layer or by exclusion: not implemented, so refused rather
  // than applied to modules the adapter's author left out.
  if (c.layers_to_transform != null) throw new AdapterError(`${file}: 'layers_to_transform' is set; adapters on some layers only are not supported`);
  const exclude = c.exclude_modules;
  if (exclude != null && !(Array.isArray(exclude) && exclude.length === 0)) throw new AdapterError(`${file}: 'exclude_modules' is set; excluding modules is not supported`);
  if (c.use_dora === true) throw new AdapterError(`${file}: DoRA adapters ('use_dora') are not supported`);
  // Per-module ranks or alphas would make the scale differ between modules; one scale per adapter is assumed.
  for (const key of ['rank_pattern', 'alpha_pattern'] as const) {
    const v = c[key];
    if (v && typeof v === 'object' && Object.keys(v).length) throw new AdapterError(`${file}: '${key}' is set; per-module ranks/alphas are not supported`);
  }
  const rslora = c.use_rslora ?? false;
  if (typeof rslora !== 'boolean') throw new AdapterError(`${file}: 'use_rslora' must be true or false`);
  const base = c.base_model_name_or_path;
  return { r, loraAlpha: alpha, targetModules, useRslora: rslora, baseModelNameOrPath: typeof base === 'string' ? base : null };
}

/**
 * True when PEFT's target_modules selects the module at `path` (e.g. 'model.layers.3.self_attn.q_proj'):
 * PEFT's 'all-linear' (every linear layer but the LM head: all seven projections here), a regex
 * full-matched against the path, or a list of names.
 */
export function targetsModule(targetModules: string[] | string, path: string): boolean {
  if (targetModules === ALL_LINEAR) return PATH_TO_MODULE.has(path.replace(/^model\.layers\.\d+\./, ''));
  if (typeof targetModules === 'string') return new RegExp(`^(?:${targetModules})$`).test(path);
  // PEFT list semantics: exact match, or the path ends with '.' + entry.
  return targetModules.some((t) => path === t || path.endsWith(`.${t}`));
}

const ALL_LINEAR = 'all-linear';

/** Paths of every projection the runtime can adapt in `layers` layers ('model.layers.0.self_attn.q_proj', …). */
function adaptablePaths(layers: number): string[] {
  const out: string[] = [];
  for (let l = 0; l < layers; l++) for (const m of LORA_MODULES) out.push(`model.layers.${l}.${MODULE_PATH[m]}`);
  return out;
}

/** Throws, naming it, when a target_modules name (or the regex) selects none of the model's projections. */
function checkTargets(targetModules: string[] | string, layers: number, file: string): void {
  const paths = adaptablePaths(layers);
  const modules = LORA_MODULES.map((m) => MODULE_PATH[m].split('.')[1]).join(', ');
  if (typeof targetModules === 'string') {
    if (!paths.some((p) => targetsModule(targetModules, p))) {
      throw new AdapterError(`${file}: 'target_modules' ${JSON.stringify(targetModules)} selects none of the ${modules} projections of the model's ${layers} layers`);
    }
    return;
  }
  for (const t of targetModules) {
    if (!paths.some((p) => targetsModule([t], p))) {
      throw new AdapterError(`${file}: 'target_modules' entry ${JSON.stringify(t)} names no module the runtime can adapt (${modules} of each of ${layers} layers)`);
    }
  }
}

const NAME_RE = /^base_model\.model\.model\.layers\.(\d+)\.((?:self_attn|mlp)\.[a-z_]+)\.lora_([AB])(?:\.default)?\.weight$/;

/** Input and output features of each module in a Qwen2 layer. */
export function moduleShape(c: Qwen2Config, module: LoraModule): { inFeatures: number; outFeatures: number } {
  const h = c.hiddenSize;
  const q = c.numHeads * c.headDim;
  const kv = c.numKvHeads * c.headDim;
  switch (module) {
    case 'q':
      return { inFeatures: h, outFeatures: q };
    case 'k':
    case 'v':
      return { inFeatures: h, outFeatures: kv };
    case 'o':
      return { inFeatures: q, outFeatures: h };
    case 'gate':
    case 'up':
      return { inFeatures: h, outFeatures: c.intermediateSize };
    case 'down':
      return { inFeatures: c.intermediateSize, outFeatures: h };
  }
}

export interface ParseAdapterOptions {
  /** When given, every pair's shape is checked against this base model. */
  base?: Qwen2Config;
  configFile?: string;
  weightsFile?: string;
}

/** Parses adapter_config.json (object) and adapter_model.safetensors (bytes) into LoRA pairs. */
export function parseAdapter(configJson: unknown, weights: Uint8Array | ArrayBuffer, opts: ParseAdapterOptions = {}): LoraAdapter {
  const configFile = opts.configFile ?? 'adapter_config.json';
  const file = opts.weightsFile ?? 'adapter_model.safetensors';
  const config = parseAdapterConfig(configJson, configFile);
  const st = readSafetensors(weights, file);
  const halves = new Map<string, { layer: number; module: LoraModule; A?: string; B?: string }>();
  for (const name of st.names()) {
    const m = NAME_RE.exec(name);
    const module = m ? PATH_TO_MODULE.get(m[2]) : undefined;
    if (!m || !module) {
      throw new AdapterError(`${file}: tensor '${name}' is not a LoRA A/B weight of a Qwen2 q/k/v/o/gate/up/down projection`);
    }
    const layer = Number(m[1]);
    const key = loraKey(layer, module);
    const entry = halves.get(key) ?? { layer, module };
    entry[m[3] as 'A' | 'B'] = name;
    halves.set(key, entry);
  }
  const scale = loraScale(config);
  const layers = opts.base?.numLayers ?? Math.max(0, ...[...halves.values()].map((h) => h.layer + 1));
  if (layers > 0) checkTargets(config.targetModules, layers, configFile);
  const pairs = new Map<string, LoraPair>();
  const ignored: string[] = [];
  for (const [key, { layer, module, A, B }] of halves) {
    const path = `model.layers.${layer}.${MODULE_PATH[module]}`;
    if (!targetsModule(config.targetModules, path)) {
      ignored.push(path);
      continue;
    }
    if (!A || !B) {
      throw new AdapterError(`${file}: layer ${layer} ${MODULE_PATH[module]} has lora_${A ? 'A' : 'B'} but no lora_${A ? 'B' : 'A'}`);
    }
    const a = st.descriptor(A);
    const b = st.descriptor(B);
    if (a.shape.length !== 2 || b.shape.length !== 2) throw new AdapterError(`${file}: '${A}' and '${B}' must be 2-D`);
    const [r, inFeatures] = a.shape;
    const [outFeatures, rB] = b.shape;
    if (r !== config.r || rB !== config.r) {
      throw new AdapterError(`${file}: '${A}' [${a.shape.join(', ')}] / '${B}' [${b.shape.join(', ')}] disagree with r=${config.r} in ${configFile}`);
    }
    if (opts.base) {
      if (layer >= opts.base.numLayers) {
        throw new AdapterError(`${file}: '${A}' is for layer ${layer} but the base model has ${opts.base.numLayers} layers (adapter made for another base)`);
      }
      const want = moduleShape(opts.base, module);
      if (want.inFeatures !== inFeatures) {
        throw new AdapterError(`${file}: '${A}' has shape [${a.shape.join(', ')}] but the base model needs [${r}, ${want.inFeatures}] (adapter made for another base)`);
      }
      if (want.outFeatures !== outFeatures) {
        throw new AdapterError(`${file}: '${B}' has shape [${b.shape.join(', ')}] but the base model needs [${want.outFeatures}, ${r}] (adapter made for another base)`);
      }
    }
    pairs.set(key, { layer, module, A: st.f32(A), B: st.f32(B), r, inFeatures, outFeatures, scale });
  }
  if (halves.size > 0 && pairs.size === 0) {
    throw new AdapterError(`${file}: none of its LoRA weights is for a module that ${configFile}'s target_modules ${JSON.stringify(config.targetModules)} selects`);
  }
  return ignored.length ? { config, pairs, ignored } : { config, pairs };
}

/** A model name as compared with an adapter's base: its last path part, lower case, without a web-llm build suffix. */
function modelKey(name: string): string {
  const last = name.trim().replace(/[\\/]+$/, '').split(/[\\/]/).pop() ?? '';
  return last.toLowerCase().replace(/-q4f(16|32)_1(-mlc)?$/, '').replace(/-mlc$/, '');
}

/**
 * A warning when the adapter's base_model_name_or_path names another model than `model` (the loaded one's
 * name or folder), else null. Shapes that fit say nothing about which model an adapter was trained on, and
 * one trained on another base loads and runs, giving quietly worse output. Either name unknown: no warning.
 * A web-llm build (`...-q4f16_1-MLC`) counts as the model it was made from; an org prefix is ignored.
 */
export function adapterBaseWarning(adapter: Pick<LoraAdapterConfig, 'baseModelNameOrPath'>, model: string | null | undefined, adapterLabel: string): string | null {
  const base = adapter.baseModelNameOrPath;
  if (!base || !model || !modelKey(base) || !modelKey(model)) return null;
  if (modelKey(base) === modelKey(model)) return null;
  return `the adapter ${adapterLabel} was made for '${base}' (its base_model_name_or_path), not the loaded model '${model}': its shapes fit, so it is used, but its output may be worse than on its own base`;
}

/** Pairs in PEFT's save order: by layer, then q, k, v, o, gate, up, down. */
export function orderedPairs(adapter: LoraAdapter): LoraPair[] {
  const order = (p: LoraPair) => p.layer * LORA_MODULES.length + LORA_MODULES.indexOf(p.module);
  return [...adapter.pairs.values()].sort((x, y) => order(x) - order(y));
}

/** The adapter as PEFT files: adapter_config.json (object) and adapter_model.safetensors (F32 bytes). */
export function exportAdapter(adapter: LoraAdapter): { config: Record<string, unknown>; weights: Uint8Array } {
  const pairs = orderedPairs(adapter);
  const modules = LORA_MODULES.filter((m) => pairs.some((p) => p.module === m)).map((m) => MODULE_PATH[m].split('.')[1]);
  const c = adapter.config;
  const config = {
    peft_type: 'LORA',
    task_type: 'CAUSAL_LM',
    r: c.r,
    lora_alpha: c.loraAlpha,
    lora_dropout: 0.0,
    bias: 'none',
    target_modules: typeof c.targetModules === 'string' ? c.targetModules : modules,
    fan_in_fan_out: false,
    base_model_name_or_path: c.baseModelNameOrPath,
    use_rslora: c.useRslora,
  };
  const tensors: WritableTensor[] = [];
  for (const p of pairs) {
    const prefix = `base_model.model.model.layers.${p.layer}.${MODULE_PATH[p.module]}`;
    if (p.A.length !== p.r * p.inFeatures || p.B.length !== p.outFeatures * p.r) {
      throw new AdapterError(`layer ${p.layer} ${MODULE_PATH[p.module]}: A/B lengths do not match r=${p.r}, in=${p.inFeatures}, out=${p.outFeatures}`);
    }
    tensors.push({ name: `${prefix}.lora_A.weight`, shape: [p.r, p.inFeatures], data: p.A });
    tensors.push({ name: `${prefix}.lora_B.weight`, shape: [p.outFeatures, p.r], data: p.B });
  }
  return { config, weights: writeSafetensors(tensors, { format: 'pt' }) };
}

// Fresh LoRA adapters for training and PEFT names of their tensors. PEFT's initialisation: A is
// kaiming-uniform with a = sqrt(5), i.e. uniform in ±1/sqrt(in_features); B is zero, so a new adapter
// leaves the base model's outputs unchanged and the first step's reference and current policies agree.
import type { Qwen2Config } from '../io/qwen2-config';
import { LORA_MODULES, MODULE_PATH, loraKey, loraScale, moduleShape, type LoraAdapter, type LoraModule, type LoraPair } from '../io/peft';
import type { Rng } from '../util/rng';

export interface LoraInitOptions {
  r: number;
  alpha: number;
  modules?: readonly LoraModule[];
  useRslora?: boolean;
  baseModelNameOrPath?: string | null;
}

export function initLoraAdapter(cfg: Qwen2Config, o: LoraInitOptions, rng: Rng): LoraAdapter {
  if (!Number.isInteger(o.r) || o.r < 1) throw new Error(`LoRA rank 'r' must be a positive integer (got ${o.r})`);
  if (!Number.isFinite(o.alpha) || o.alpha <= 0) throw new Error(`LoRA 'alpha' must be a positive number (got ${o.alpha})`);
  const modules = o.modules ?? LORA_MODULES;
  const config = {
    r: o.r,
    loraAlpha: o.alpha,
    targetModules: modules.map((m) => MODULE_PATH[m].split('.')[1]),
    useRslora: o.useRslora ?? false,
    baseModelNameOrPath: o.baseModelNameOrPath ?? null,
  };
  const scale = loraScale(config);
  const pairs = new Map<string, LoraPair>();
  for (let layer = 0; layer < cfg.numLayers; layer++) {
    for (const module of LORA_MODULES) {
      if (!modules.includes(module)) continue;
      const { inFeatures, outFeatures } = moduleShape(cfg, module);
      const bound = 1 / Math.sqrt(inFeatures);
      const A = new Float32Array(o.r * inFeatures);
      for (let i = 0; i < A.length; i++) A[i] = (2 * rng.next() - 1) * bound;
      pairs.set(loraKey(layer, module), { layer, module, A, B: new Float32Array(outFeatures * o.r), r: o.r, inFeatures, outFeatures, scale });
    }
  }
  return { config, pairs };
}

/** PEFT tensor name of a pair's A or B. */
export function peftName(p: Pick<LoraPair, 'layer' | 'module'>, which: 'A' | 'B'): string {
  return `base_model.model.model.layers.${p.layer}.${MODULE_PATH[p.module]}.lora_${which}.weight`;
}

/** A deep copy (trainers update A and B in place). */
export function cloneAdapter(a: LoraAdapter): LoraAdapter {
  const pairs = new Map<string, LoraPair>();
  for (const [k, p] of a.pairs) pairs.set(k, { ...p, A: Float32Array.from(p.A), B: Float32Array.from(p.B) });
  return { config: { ...a.config, targetModules: Array.isArray(a.config.targetModules) ? [...a.config.targetModules] : a.config.targetModules }, pairs };
}

/** The adapter's trainable tensors in a fixed order (PEFT save order), with their PEFT names. */
export function adapterTensors(a: LoraAdapter): Array<{ name: string; key: string; which: 'A' | 'B'; data: Float32Array; shape: number[] }> {
  const order = (p: LoraPair) => p.layer * LORA_MODULES.length + LORA_MODULES.indexOf(p.module);
  const out: Array<{ name: string; key: string; which: 'A' | 'B'; data: Float32Array; shape: number[] }> = [];
  for (const [key, p] of [...a.pairs].sort((x, y) => order(x[1]) - order(y[1]))) {
    out.push({ name: peftName(p, 'A'), key, which: 'A', data: p.A, shape: [p.r, p.inFeatures] });
    out.push({ name: peftName(p, 'B'), key, which: 'B', data: p.B, shape: [p.outFeatures, p.r] });
  }
  return out;
}

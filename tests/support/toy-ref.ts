// Bridges between the float64 reference's shapes (tests/support/qwen2-ref.ts) and the engine's
// (Qwen2Config, LoraAdapter), so trainer tests can feed the same model to the reference, the CPU backend
// and the GPU runtime without going through the engine's own loaders.
import type { Qwen2Config } from '../../src/io/qwen2-config';
import { LORA_MODULES, MODULE_PATH, loraKey, type LoraAdapter, type LoraPair } from '../../src/io/peft';
import type { Qwen2RefAdapter, Qwen2RefConfig } from './qwen2-ref';

export function toQwen2Config(c: Qwen2RefConfig): Qwen2Config {
  return { ...c, maxPositionEmbeddings: 4096, bosTokenId: null, eosTokenIds: [], torchDtype: 'float32' };
}

export function refAdapterToLora(a: Qwen2RefAdapter, c: Qwen2RefConfig, alpha: number): LoraAdapter {
  const dims = {
    q: [c.numHeads * c.headDim, c.hiddenSize],
    k: [c.numKvHeads * c.headDim, c.hiddenSize],
    v: [c.numKvHeads * c.headDim, c.hiddenSize],
    o: [c.hiddenSize, c.numHeads * c.headDim],
    gate: [c.intermediateSize, c.hiddenSize],
    up: [c.intermediateSize, c.hiddenSize],
    down: [c.hiddenSize, c.intermediateSize],
  } as const;
  const pairs = new Map<string, LoraPair>();
  let r = 0;
  a.layers.forEach((layer, l) => {
    for (const m of LORA_MODULES) {
      const p = layer[m];
      if (!p) continue;
      r = p.rank;
      const [outFeatures, inFeatures] = dims[m];
      pairs.set(loraKey(l, m), { layer: l, module: m, A: Float32Array.from(p.A), B: Float32Array.from(p.B), r: p.rank, inFeatures, outFeatures, scale: a.scale });
    }
  });
  return {
    config: { r, loraAlpha: alpha, targetModules: LORA_MODULES.map((m) => MODULE_PATH[m].split('.')[1]), useRslora: false, baseModelNameOrPath: null },
    pairs,
  };
}

export function loraToRefAdapter(a: LoraAdapter, numLayers: number): Qwen2RefAdapter {
  const layers: Qwen2RefAdapter['layers'] = Array.from({ length: numLayers }, () => ({}));
  let scale = 0;
  for (const p of a.pairs.values()) {
    layers[p.layer][p.module] = { A: p.A, B: p.B, rank: p.r };
    scale = p.scale;
  }
  return { scale, layers };
}

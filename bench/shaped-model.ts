// A model with a real checkpoint's shapes and cheap pseudo-random values, for speed measurements: the
// runtime's speed depends on shapes only, and drawing half a billion normals on the CPU would dominate.
import type { Qwen2Config } from '../src/io/qwen2-config';
import { expectedQwen2Tensors } from '../src/io/qwen2-config';
import type { Q4WeightSource, TensorSource, WeightSource } from '../src/model/weights';
import { expectedMlcQwen2Tensors } from '../src/io/mlc';
import { q4SourceFromRecords } from '../src/engine/q4-source';
import { toF16Array } from '../src/util/half';
import { Rng } from '../src/util/rng';

/** Qwen/Qwen2.5-0.5B-Instruct's config.json, as the runtime parses it. */
export const QWEN25_05B: Qwen2Config = {
  hiddenSize: 896,
  numLayers: 24,
  numHeads: 14,
  numKvHeads: 2,
  headDim: 64,
  intermediateSize: 4864,
  vocabSize: 151936,
  ropeTheta: 1000000,
  rmsNormEps: 1e-6,
  tieWordEmbeddings: true,
  maxPositionEmbeddings: 32768,
  bosTokenId: null,
  eosTokenIds: [],
  torchDtype: 'bfloat16',
};

/** Qwen/Qwen2.5-1.5B-Instruct's config.json, as the runtime parses it (head_dim 1536 / 12 = 128). */
export const QWEN25_15B: Qwen2Config = {
  ...QWEN25_05B,
  hiddenSize: 1536,
  numLayers: 28,
  numHeads: 12,
  numKvHeads: 2,
  headDim: 128,
  intermediateSize: 8960,
};

/** The shapes the benchmarks take by name (`--shape`; run.ts's qwen2.5-<name>[-q4] models). */
export const SHAPES: Record<string, Qwen2Config> = { '0.5b': QWEN25_05B, '1.5b': QWEN25_15B };

/** The shape named `name`, or a clear error listing the names. */
export function shapeNamed(name: string): Qwen2Config {
  const c = SHAPES[name];
  if (!c) throw new Error(`--shape: unknown shape '${name}' (${Object.keys(SHAPES).join(', ')})`);
  return c;
}

/** Every tensor the config implies, filled by tiling a small random table (norms near 1). */
export function shapedWeights(config: Qwen2Config, seed = 1): WeightSource {
  const rng = new Rng(seed);
  const table = Float32Array.from(rng.fill(4099, 0.02));
  const tableHalf = toF16Array(table);
  const m = new Map<string, TensorSource>();
  for (const [name, shape] of expectedQwen2Tensors(config)) {
    const n = shape.reduce((a, b) => a * b, 1);
    const isNorm = name.endsWith('norm.weight');
    m.set(name, {
      name,
      shape,
      f16: () => {
        const out = new Uint16Array(n);
        for (let i = 0; i < n; i += tableHalf.length) out.set(tableHalf.subarray(0, Math.min(tableHalf.length, n - i)), i);
        return out;
      },
      f32: () => {
        const out = new Float32Array(n);
        for (let i = 0; i < n; i++) out[i] = isNorm ? 1 + table[i % table.length] : table[i % table.length];
        return out;
      },
    });
  }
  return m;
}

/**
 * The same model as a web-llm q4f16_1 build (MLC names, fused c_attn / gate_up_proj), 4-bit words and
 * f16 scales tiled from a small random table: what the planner keeps on the GPU for a real MLC download.
 */
export function shapedQ4Weights(config: Qwen2Config, seed = 1): Q4WeightSource {
  const rng = new Rng(seed);
  const words = Uint32Array.from({ length: 4099 }, () => rng.int(2 ** 32) >>> 0);
  // |w| <= 8 * scale: 0.02 / 3 keeps the weights near the f16 model's spread.
  const scales = toF16Array(Array.from({ length: 4099 }, () => (0.5 + rng.int(1000) / 1000) * (0.02 / 3)));
  const vec = toF16Array(Array.from({ length: 4099 }, () => 1 + (rng.int(1000) / 1000 - 0.5) * 0.1));
  const tile = <T extends Uint32Array | Uint16Array>(src: T, n: number, make: (n: number) => T): T => {
    const out = make(n);
    for (let i = 0; i < n; i += src.length) out.set(src.subarray(0, Math.min(src.length, n - i)), i);
    return out;
  };
  const rec = new Map<string, Uint32Array | Uint16Array>();
  for (const [name, { shape, dtype }] of expectedMlcQwen2Tensors(config)) {
    const n = shape.reduce((a, b) => a * b, 1);
    if (dtype === 'uint32') rec.set(name, tile(words, n, (k) => new Uint32Array(k)));
    else rec.set(name, tile(name.endsWith('.q_scale') ? scales : vec, n, (k) => new Uint16Array(k)));
  }
  return q4SourceFromRecords(config, 'q4f16_1', rec);
}

// A model with a real checkpoint's shapes and cheap pseudo-random values, for speed measurements: the
// runtime's speed depends on shapes only, and drawing half a billion normals on the CPU would dominate.
import type { Qwen2Config } from '../src/engine/io/config';
import { expectedQwen2Tensors } from '../src/engine/io/config';
import type { TensorSource, WeightSource } from '../src/engine/weights';
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

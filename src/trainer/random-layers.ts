// Seeded random Qwen2 decoder layers. The draws come in one fixed order (so a seed always gives the same
// model): the toy task's base model and the tests' random models both build their layers here, each with
// its own way of drawing a matrix or a vector.
import type { Qwen2Config } from '../io/qwen2-config';
import type { HostQwen2Weights } from './cpu-model';

type LayerDims = Pick<Qwen2Config, 'hiddenSize' | 'intermediateSize' | 'numHeads' | 'numKvHeads' | 'headDim' | 'numLayers'>;

/**
 * `mat(out, in)` draws an [out, in] matrix; `vec(n, mean, scale)` draws n values around `mean` (norms
 * around 1, biases around 0).
 */
export function randomLayers(
  c: LayerDims,
  mat: (out: number, inp: number) => ArrayLike<number>,
  vec: (n: number, mean: number, scale: number) => ArrayLike<number>,
): HostQwen2Weights['layers'] {
  const { hiddenSize: H, intermediateSize: I, numHeads, numKvHeads: nKV, headDim } = c;
  const layers: HostQwen2Weights['layers'] = [];
  for (let l = 0; l < c.numLayers; l++) {
    layers.push({
      inputNorm: vec(H, 1, 0.1),
      q: { W: mat(numHeads * headDim, H), b: vec(numHeads * headDim, 0, 0.1) },
      k: { W: mat(nKV * headDim, H), b: vec(nKV * headDim, 0, 0.1) },
      v: { W: mat(nKV * headDim, H), b: vec(nKV * headDim, 0, 0.1) },
      o: { W: mat(H, numHeads * headDim) },
      postNorm: vec(H, 1, 0.1),
      gate: { W: mat(I, H) },
      up: { W: mat(I, H) },
      down: { W: mat(H, I) },
    });
  }
  return layers;
}

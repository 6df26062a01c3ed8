// Small Qwen2 models whose weights are all finite but whose activations leave float32's comfortable range
// (issue 25, item 3): one whose residual stream only gets too big to square (RMSNorm must pre-scale, and
// the result must match float64), and one where one token's MLP overflows f32 outright (the runtime must
// fail naming the layer and position, not return numbers).
import { Rng } from '../../src/util/rng';
import { roundToF16 } from '../../src/util/half';
import type { Qwen2RefConfig, Qwen2RefWeights } from './qwen2-ref';
import { randomQwen2 } from './random-qwen2';

/** ±v with random signs, as f16-exact f32 (v itself must be an f16 value). */
const signs = (rng: Rng, n: number, v: number) => Float32Array.from({ length: n }, () => (rng.next() < 0.5 ? -v : v));

/**
 * Layer 0's MLP reads its input scaled by a post-attention norm of 60000 through gate, up and down weights
 * of ±60000 (all below f16's 65504): gate and up reach ~1e10, their product ~1e20 and down ~1e26, finite in
 * f32, but the next norms' sums of squares (~1e53) are not. Unscaled, those norms returned zeros: flat
 * logits (log 1/V everywhere) instead of the float64 answer.
 */
export function bigActivationQwen2(seed = 31): { config: Qwen2RefConfig; weights: Qwen2RefWeights } {
  // Widths that are multiples of 32, so the same model also runs as a 4-bit build.
  const m = randomQwen2(seed, { vocabSize: 50, intermediateSize: 64 });
  const { hiddenSize: H, intermediateSize: I } = m.config;
  const rng = new Rng(seed + 1);
  const L0 = m.weights.layers[0];
  L0.postNorm = new Float32Array(H).fill(60000);
  L0.gate = { W: signs(rng, I * H, 60000) };
  L0.up = { W: signs(rng, I * H, 60000) };
  L0.down = { W: signs(rng, H * I, 60000) };
  return m;
}

/** The token whose row overflows in infActivationQwen2. */
export const OVERFLOW_TOKEN = 7;

/**
 * Only OVERFLOW_TOKEN's embedding has a component along hidden dimension 0, layer 0's attention never
 * writes dimension 0 (o_proj row 0 is zero), and layer 0's post-attention norm weight there is 1e25 (norm
 * weights are f32 in checkpoints and on the GPU). That token's row reaches the MLP as ~1e25, gate * up is
 * ~1e48 (beyond f32) and its residual becomes NaN after layer 0's MLP; every other token's is untouched,
 * so rows before it stay finite and rows after it go NaN only through attending to it (layer 1).
 */
export function infActivationQwen2(seed = 41): { config: Qwen2RefConfig; weights: Qwen2RefWeights } {
  const m = randomQwen2(seed, { vocabSize: 50, intermediateSize: 40 });
  const { hiddenSize: H, vocabSize: V } = m.config;
  const embed = Float32Array.from(m.weights.embed);
  for (let t = 0; t < V; t++) embed[t * H] = t === OVERFLOW_TOKEN ? 2 : 0;
  m.weights.embed = Float32Array.from(roundToF16(embed));
  const L0 = m.weights.layers[0];
  const o = Float32Array.from(L0.o.W);
  o.fill(0, 0, m.config.numHeads * m.config.headDim);
  L0.o = { W: o };
  const post = Float32Array.from(L0.postNorm);
  post[0] = 1e25;
  L0.postNorm = post;
  return m;
}

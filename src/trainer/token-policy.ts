// Token-level sampling by a policy being trained: each backend (the float64 CPU one, the GPU one) samples
// next tokens from its logits with the seeded Rng, so rollouts are reproducible from a seed, and reports the
// log-probability at temperature 1 that the Flow-GRPO ratio needs. The toy task plays its rollouts with it.
import type { Rng } from '../util/rng';

/** Samples one next token for each context; logprob is log p(token) under the policy (temperature 1). */
export interface TokenPolicy {
  sampleNext(contexts: number[][], temperature: number, rng: Rng): Promise<Array<{ token: number; logprob: number }>>;
}

/** Samples from logits at `temperature`; returns the token and its log-probability at temperature 1. */
export function sampleFromLogits(logits: ArrayLike<number>, temperature: number, rng: Rng): { token: number; logprob: number } {
  const V = logits.length;
  let m = -Infinity;
  for (let i = 0; i < V; i++) m = Math.max(m, logits[i]);
  let z1 = 0;
  let zt = 0;
  const pt = new Float64Array(V);
  for (let i = 0; i < V; i++) {
    z1 += Math.exp(logits[i] - m);
    pt[i] = Math.exp((logits[i] - m) / temperature);
    zt += pt[i];
  }
  let u = rng.next() * zt;
  let token = V - 1;
  for (let i = 0; i < V; i++) {
    u -= pt[i];
    if (u < 0) {
      token = i;
      break;
    }
  }
  return { token, logprob: logits[token] - m - Math.log(z1) };
}

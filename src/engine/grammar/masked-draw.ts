// A draw from one row of logits restricted to the tokens a grammar allows: the sampling rule of
// kernels/sampling/draw.ts (temperature, then top-k, then top-p; inverse CDF over the sorted candidates
// with the row's own uniform) applied to the allowed tokens alone, on the CPU.
import { candidateDistribution, logSumExp, pickIndex, sortRow, type SamplingOptions } from '../../kernels/sampling/draw';
import { isAllowed } from './json-schema-constraint';

export interface MaskedDraw {
  token: number;
  /**
   * log p(token) under the model's own distribution (full softmax over the whole vocabulary at temperature
   * 1, no mask): the number the trainer gets back when it scores the sequence (see the README's
   * "on-policy under masks").
   */
  logprob: number;
}

/** Draws with uniform `u` from the allowed tokens of `logits`; throws when the mask allows none. */
export function drawMasked(logits: Float32Array, mask: Int32Array, o: SamplingOptions, u: number): MaskedDraw {
  const allowed: number[] = [];
  for (let id = 0; id < logits.length; id++) if (isAllowed(mask, id) && logits[id] > -Infinity) allowed.push(id);
  if (allowed.length === 0) throw new Error('drawMasked: the grammar allows no token of the vocabulary here');
  const lse1 = logSumExp(logits);
  const T = o.temperature ?? 0;
  let token: number;
  if (T === 0 || allowed.length === 1) {
    // Greedy: the largest allowed logit, ties to the lowest id (as the unconstrained argmax).
    token = allowed[0];
    for (const id of allowed) if (logits[id] > logits[token]) token = id;
  } else {
    const values = Float32Array.from(allowed, (id) => logits[id]);
    const sorted = sortRow(values);
    // The allowed tokens are the whole support: top-k and top-p apply within them.
    const d = candidateDistribution(sorted.values, Array.from(sorted.ids, (j) => allowed[j]), logSumExp(values, 1 / T), allowed.length, o);
    if (!d) throw new Error('drawMasked: the allowed tokens did not determine a distribution');
    token = d.ids[pickIndex(d.probs, u)];
  }
  return { token, logprob: logits[token] - lse1 };
}

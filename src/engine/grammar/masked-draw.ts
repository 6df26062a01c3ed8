// A draw from one row of logits restricted to the tokens a grammar allows, on the CPU, with the row's own
// uniform: temperature, then top-k, then top-p as kernels/sampling/draw.ts applies them (inverse CDF over
// the sorted candidates) within the allowed tokens; pure temperature sampling walks them in id order.
import { candidateDistribution, isPureTemperature, logSumExp, pickIndex, sortRow, type SamplingOptions } from '../../kernels/sampling/draw';
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
  } else if (isPureTemperature(o, allowed.length)) {
    // The whole softmax over the allowed tokens: inverse CDF in id order, no sort (a 150k-token row sorted
    // per token costs hundreds of ms on the CPU; any fixed order samples the same distribution).
    let m = -Infinity;
    for (const id of allowed) m = Math.max(m, logits[id] / T);
    let z = 0;
    for (const id of allowed) z += Math.exp(logits[id] / T - m);
    const target = u * z;
    let cum = 0;
    token = allowed[allowed.length - 1];
    for (const id of allowed) {
      cum += Math.exp(logits[id] / T - m);
      if (target < cum) {
        token = id;
        break;
      }
    }
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

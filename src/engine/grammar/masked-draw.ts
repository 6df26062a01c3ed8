// A draw from one row of logits restricted to the tokens a grammar allows, on the CPU, with the row's own
// uniform: temperature, then top-k, then top-p as kernels/sampling/draw.ts applies them (inverse CDF over
// the sorted candidates) within the allowed tokens; greedy and pure temperature sampling (the rollouts')
// need no sort and walk the row in id order, in three passes at most (a Qwen-sized row is 151,936 logits,
// drawn once per token).
import { candidateDistribution, isPureTemperature, logSumExp, pickIndex, sortRow, type SamplingOptions } from '../../kernels/sampling/draw';

export interface MaskedDraw {
  token: number;
  /**
   * log p(token) under the model's own distribution (full softmax over the whole vocabulary at temperature
   * 1, no mask): the number the trainer gets back when it scores the sequence (see the README's
   * "On-policy under masks").
   */
  logprob: number;
}

let scratch = new Float64Array(0);
/** A scratch row of at least V weights (kept: a decode draws one row per token). */
function weights(V: number): Float64Array {
  if (scratch.length < V) scratch = new Float64Array(V);
  return scratch;
}

/** Draws with uniform `u` from the allowed tokens of `logits`; throws when the mask allows none. */
export function drawMasked(logits: Float32Array, mask: Int32Array, o: SamplingOptions, u: number): MaskedDraw {
  const V = logits.length;
  const T = o.temperature ?? 0;
  // Pass 1: the row's max (for its log-sum-exp) and the best allowed token (greedy; the max for the rest).
  let max = -Infinity;
  let best = -1;
  let count = 0;
  for (let id = 0; id < V; id++) {
    const v = logits[id];
    if (v > max) max = v;
    if ((mask[id >>> 5] >>> (id & 31)) & 1 && v > -Infinity) {
      count++;
      // Strictly greater: ties go to the lowest id, as the unconstrained argmax.
      if (best < 0 || v > logits[best]) best = id;
    }
  }
  if (best < 0) throw new Error('drawMasked: the grammar allows no token of the vocabulary here');
  const pure = T > 0 && count > 1 && isPureTemperature(o, count);
  // Pass 2: the row's sum for log p at temperature 1, and the allowed tokens' weights at temperature T
  // (kept, so the draw below needs no second exp; at T = 1 they are the same numbers).
  const w = weights(V);
  const top = logits[best];
  let sum1 = 0;
  let sumT = 0;
  for (let id = 0; id < V; id++) {
    const v = logits[id];
    const e = Math.exp(v - max);
    sum1 += e;
    if (pure && (mask[id >>> 5] >>> (id & 31)) & 1) {
      const x = T === 1 ? e : Math.exp((v - top) / T);
      w[id] = x;
      sumT += x;
    }
  }
  const lse1 = max + Math.log(sum1);
  let token = best;
  if (pure) {
    // Pass 3: inverse CDF over the allowed tokens in id order (any fixed order samples the same distribution).
    const target = u * sumT;
    let cum = 0;
    for (let id = 0; id < V; id++) {
      if (!((mask[id >>> 5] >>> (id & 31)) & 1) || !(logits[id] > -Infinity)) continue;
      cum += w[id];
      token = id;
      if (target < cum) break;
    }
  } else if (T > 0 && count > 1) {
    const allowed: number[] = [];
    for (let id = 0; id < V; id++) if ((mask[id >>> 5] >>> (id & 31)) & 1 && logits[id] > -Infinity) allowed.push(id);
    const values = Float32Array.from(allowed, (id) => logits[id]);
    const sorted = sortRow(values);
    // The allowed tokens are the whole support: top-k and top-p apply within them.
    const d = candidateDistribution(sorted.values, Array.from(sorted.ids, (j) => allowed[j]), logSumExp(values, 1 / T), allowed.length, o);
    if (!d) throw new Error('drawMasked: the allowed tokens did not determine a distribution');
    token = d.ids[pickIndex(d.probs, u)];
  }
  return { token, logprob: logits[token] - lse1 };
}

// CPU half of sampling: turns the GPU's sorted top candidates into the distribution actually sampled
// (temperature, then top-k, then top-p, as Hugging Face's warpers apply them) and draws from it with the
// seeded Rng. Kept separate from the GPU code so the float64 reference and tests can reuse it.

import type { Rng } from '../../util/rng';

export interface SamplingOptions {
  /** 0 (or absent) = greedy argmax. Otherwise logits are divided by it. */
  temperature?: number;
  /** Keep only the k most likely tokens; 0 or absent = off. */
  topK?: number;
  /** Keep the smallest most-likely set whose probability reaches topP; 1 or absent = off. */
  topP?: number;
}

export interface SampleResult {
  token: number;
  /** log p(token) under the UNMODIFIED policy: full softmax at temperature 1 (what the trainer needs). */
  logprob: number;
  /** log p(token) under the distribution actually sampled (after temperature/top-k/top-p); 0 for greedy. */
  sampleLogprob: number;
}

export interface Distribution {
  ids: number[];
  probs: number[];
}

export function checkSamplingOptions(o: SamplingOptions): void {
  const t = o.temperature ?? 0;
  if (!(t >= 0) || !Number.isFinite(t)) throw new Error(`sampling: temperature must be >= 0 and finite, got ${o.temperature}`);
  const k = o.topK ?? 0;
  if (!Number.isInteger(k) || k < 0) throw new Error(`sampling: topK must be an integer >= 0, got ${o.topK}`);
  const p = o.topP ?? 1;
  if (!(p > 0 && p <= 1)) throw new Error(`sampling: topP must be in (0, 1], got ${o.topP}`);
}

/**
 * The sampled distribution from candidates sorted by (value desc, id asc). `lseT` is the log-sum-exp of
 * logits/T over the whole vocabulary, so exp(v/T - lseT) is each candidate's full-softmax probability.
 * Returns null when the candidates do not determine it (the nucleus or the top-k set reaches past them):
 * the caller then retries with the whole row.
 */
export function candidateDistribution(
  values: ArrayLike<number>,
  ids: ArrayLike<number>,
  lseT: number,
  vocab: number,
  o: SamplingOptions,
): Distribution | null {
  const T = o.temperature ?? 0;
  const topP = o.topP ?? 1;
  const L = values.length;
  const complete = L >= vocab;
  const kEff = o.topK ? Math.min(o.topK, vocab) : vocab;
  let n = Math.min(kEff, L);
  if (kEff > L && !complete && (o.topK || topP >= 1)) return null;
  const p: number[] = [];
  for (let i = 0; i < n; i++) p.push(Math.exp(values[i] / T - lseT));
  // Top-k renormalises over the kept set; without top-k the full softmax already sums to 1.
  const mass = kEff <= L ? p.reduce((a, b) => a + b, 0) : 1;
  for (let i = 0; i < n; i++) p[i] /= mass;
  if (topP < 1) {
    let cum = 0;
    let keep = 0;
    while (keep < n && cum < topP) cum += p[keep++];
    if (cum < topP && !(kEff <= L)) return null;
    n = keep;
  }
  const kept = p.slice(0, n);
  const z = kept.reduce((a, b) => a + b, 0);
  return { ids: Array.from(ids).slice(0, n), probs: kept.map((x) => x / z) };
}

/** Index drawn from `probs` (which sum to 1) with one uniform from the seeded Rng. */
export function drawIndex(probs: ArrayLike<number>, rng: Rng): number {
  return pickIndex(probs, rng.next());
}

/** The index whose cumulative interval holds `u` in [0, 1): inverse-CDF sampling in the given order. */
export function pickIndex(probs: ArrayLike<number>, u: number): number {
  let cum = 0;
  for (let i = 0; i < probs.length; i++) {
    cum += probs[i];
    if (u < cum) return i;
  }
  // u is within rounding of 1: the last token with nonzero probability.
  for (let i = probs.length - 1; i >= 0; i--) if (probs[i] > 0) return i;
  return 0;
}

/**
 * Sorts a full logits row by (value desc, id asc): the CPU fallback when candidates are not enough. NaN
 * ranks as -Infinity. A 150k-entry row is sorted as one Float64Array of packed keys (the f32's bits mapped
 * to an order-preserving integer, then the id), several times faster than a comparator sort, same order.
 */
export function sortRow(logits: ArrayLike<number>): { values: Float64Array; ids: Uint32Array } {
  const V = logits.length;
  if (V > ID_SPAN) throw new Error(`sortRow: a vocabulary of ${V} exceeds ${ID_SPAN} ids`);
  const f = new Float32Array(1);
  const u = new Uint32Array(f.buffer);
  const keys = new Float64Array(V);
  for (let i = 0; i < V; i++) {
    const v = logits[i];
    // -0 ties with +0 (the comparator order), NaN ranks last.
    f[0] = Number.isNaN(v) ? -Infinity : v === 0 ? 0 : v;
    const b = u[0];
    const ascending = b & 0x80000000 ? ~b >>> 0 : (b | 0x80000000) >>> 0;
    keys[i] = (0xffffffff - ascending) * ID_SPAN + i;
  }
  keys.sort();
  const ids = new Uint32Array(V);
  const values = new Float64Array(V);
  for (let j = 0; j < V; j++) {
    const id = keys[j] % ID_SPAN;
    ids[j] = id;
    values[j] = Number.isNaN(logits[id]) ? -Infinity : Math.fround(logits[id]);
  }
  return { values, ids };
}

// 32 bits of value key times 2^21 ids stay below 2^53: every packed key is an exact f64 integer.
const ID_SPAN = 2 ** 21;

/** log-sum-exp of logits * scale in float64. */
export function logSumExp(logits: ArrayLike<number>, scale = 1): number {
  let m = -Infinity;
  for (let i = 0; i < logits.length; i++) if (logits[i] * scale > m) m = logits[i] * scale;
  let s = 0;
  for (let i = 0; i < logits.length; i++) s += Math.exp(logits[i] * scale - m);
  return m + Math.log(s);
}

/** Pure temperature sampling (no top-k below the vocabulary, no top-p): the whole softmax is drawn from. */
export function isPureTemperature(o: SamplingOptions, vocab: number): boolean {
  return (o.temperature ?? 0) > 0 && (!o.topK || o.topK >= vocab) && (o.topP ?? 1) >= 1;
}

/**
 * Pure temperature sampling from the sorted top candidates alone, when `u` falls within their mass: the
 * inverse CDF over the whole sorted row starts with exactly these candidates, so the draw is the one the
 * full row would give (p = exp(v/T - lseT), the full softmax). Null when u lies past their mass: only
 * then does the caller need the whole row. Real LMs put most of the mass in the top 64, so this spares
 * the read-back and the sort of a 150k-entry row for most tokens.
 */
export function pickFromPrefix(values: ArrayLike<number>, lseT: number, temperature: number, u: number): { index: number; prob: number } | null {
  let cum = 0;
  for (let i = 0; i < values.length; i++) {
    const p = Math.exp(values[i] / temperature - lseT);
    cum += p;
    if (u < cum) return { index: i, prob: p };
  }
  return null;
}

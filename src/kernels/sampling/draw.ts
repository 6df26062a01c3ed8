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
 * Pure temperature sampling, first step: inverse CDF over the sorted top candidates (p = exp(v/T - lseT),
 * the full softmax). Null when u lies past their mass: the token then comes from the tail (drawTail), the
 * rest of the vocabulary. Real LMs put most of the mass in the top 64, so most tokens end here.
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

// The tail draw. Pure temperature sampling (the rule GPU and CPU share, see gpu-draw.wgsl.ts): u picks among
// the sorted top candidates while it lies within their mass; past it, the token is drawn from the other
// tokens ("the tail") in proportion to exp(logit / T) by rejection sampling. Attempt k (0, 1, ...) proposes
// id = x % V, where x = pcg(pcg(bits of f32(u)) + k) (x past the last whole multiple of V proposes nothing,
// so every id is equally likely), and accepts a tail id with probability exp((logit - ref) / T), where ref
// is the last candidate's logit (no tail logit exceeds it): the first accepted attempt is the token. The
// uniform of attempt k is (2 * (pcg(x) >> 9) + 1) / 2^24, exact in f32 and never 0 or 1.
// Each attempt decides "a < exp(...)" alone, with a tolerance of a few ulps where f32 could disagree with
// float64, so the GPU decides nearly every tail draw (a prefix sum over 150k f32 terms could not: its
// rounding is as wide as a token's interval on a flat row). Candidates are the top (value desc, id asc),
// so an id belongs to them iff (logit, id) ranks at or before the last one's.

/** Attempts after which the tail draw gives up and takes the last candidate (a tail of weight ~0). */
export const TAIL_ATTEMPTS = 2 ** 20;

/** PCG hash (Jarzynski & Olano 2020), u32 -> u32, the same integer operations as the WGSL's. */
export function pcgHash(v: number): number {
  const state = (Math.imul(v >>> 0, 747796405) + 2891336453) >>> 0;
  const word = Math.imul(((state >>> ((state >>> 28) + 4)) ^ state) >>> 0, 277803737) >>> 0;
  return ((word >>> 22) ^ word) >>> 0;
}

const f32Bits = (x: number) => new Uint32Array(Float32Array.of(x).buffer)[0];

/** Attempt k of the tail draw seeded by u: the proposed id (-1: none) and its acceptance uniform. */
export function tailAttempt(u: number, k: number, vocab: number, seed = pcgHash(f32Bits(u))): { id: number; a: number } {
  const x = pcgHash((seed + k) >>> 0);
  if (x >= Math.floor(0xffffffff / vocab) * vocab) return { id: -1, a: 1 };
  return { id: x % vocab, a: (2 * (pcgHash(x) >>> 9) + 1) / 2 ** 24 };
}

/**
 * The tail draw in float64 over a whole logits row (see above): `last` is the last of the top candidates
 * (their count is below the vocabulary). Returns the token, or null when TAIL_ATTEMPTS found none (the
 * caller takes the last candidate). A linear-time rule: no sort of the row.
 */
export function drawTail(row: ArrayLike<number>, temperature: number, last: { value: number; id: number }, u: number): number | null {
  const V = row.length;
  const seed = pcgHash(f32Bits(u));
  for (let k = 0; k < TAIL_ATTEMPTS; k++) {
    const { id, a } = tailAttempt(u, k, V, seed);
    if (id < 0) continue;
    const l = row[id];
    if (!Number.isFinite(l) || l > last.value || (l === last.value && id <= last.id)) continue;
    if (a < Math.exp((l - last.value) / temperature)) return id;
  }
  return null;
}

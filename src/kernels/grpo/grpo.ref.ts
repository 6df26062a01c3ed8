// float64 reference of the Flow-GRPO per-token objective (see ../../../../shared/fixtures/README.md):
//   rho = exp(logp - old)
//   term = max(-A*rho, -A*clip(rho, 1-epsLow, 1+epsHigh)) + beta*k3
//   k3 = clamp(exp(ref - logp) - (ref - logp) - 1, -10, 10)
//   loss = sum_i weight_i * term_i        (weight = 1/N on response tokens, 0 on prompt tokens)
//
// Gradient with respect to logp (d rho / d logp = rho):
//   * policy part: when rho is inside [1-epsLow, 1+epsHigh] both branches equal -A*rho, gradient -A*rho.
//     Outside, clip() is constant; the max picks the unclipped branch (gradient -A*rho) only when
//     -A*rho > -A*clip(rho), otherwise the clipped branch wins and the gradient is 0 ("clipped" token).
//   * k3 part: d/dlogp [e^d - d - 1] with d = ref - logp is 1 - e^d, and 0 where the clamp is active.

import type { Rng } from '../../util/rng';

export interface GrpoHyper {
  epsLow: number;
  epsHigh: number;
  beta: number;
}

export interface GrpoTokenResult {
  /** term (unweighted) */
  term: number;
  /** d term / d logp (unweighted) */
  dterm: number;
  /** the clipped branch won the max, so this token's policy gradient is zero */
  clipped: boolean;
  /** clamped k3 */
  k3: number;
}

export function grpoTokenRef(logp: number, old: number, ref: number, adv: number, h: GrpoHyper): GrpoTokenResult {
  const rho = Math.exp(logp - old);
  const lo = 1 - h.epsLow;
  const hi = 1 + h.epsHigh;
  const rc = Math.min(Math.max(rho, lo), hi);
  const u1 = -adv * rho;
  const u2 = -adv * rc;
  const inRange = rho >= lo && rho <= hi;
  const clipped = !inRange && u2 > u1;
  const dpg = clipped ? 0 : -adv * rho;
  const d = ref - logp;
  const kraw = Math.exp(d) - d - 1;
  const k3 = Math.min(Math.max(kraw, -10), 10);
  const dk3 = kraw >= -10 && kraw <= 10 ? 1 - Math.exp(d) : 0;
  return { term: Math.max(u1, u2) + h.beta * k3, dterm: dpg + h.beta * dk3, clipped, k3 };
}

export interface GrpoBatchRef {
  loss: number;
  dlogp: Float64Array;
  /** per token: weight*term, weight*clipped, weight*k3 (planar [3, T], like the GPU kernel) */
  stats: Float64Array;
}

/** Per-token arrays of equal length T; `weight` is 1/N on response tokens and 0 elsewhere. */
export function grpoRef(
  logp: ArrayLike<number>,
  old: ArrayLike<number>,
  ref: ArrayLike<number>,
  adv: ArrayLike<number>,
  weight: ArrayLike<number>,
  h: GrpoHyper,
): GrpoBatchRef {
  const T = logp.length;
  for (const [name, a] of [['old', old], ['ref', ref], ['advantage', adv], ['weight', weight]] as const) {
    if (a.length !== T) throw new Error(`grpoRef: '${name}' has ${a.length} entries, logp has ${T}`);
  }
  const dlogp = new Float64Array(T);
  const stats = new Float64Array(3 * T);
  let loss = 0;
  for (let i = 0; i < T; i++) {
    const r = grpoTokenRef(logp[i], old[i], ref[i], adv[i], h);
    const w = weight[i];
    loss += w * r.term;
    dlogp[i] = w * r.dterm;
    stats[i] = w * r.term;
    stats[T + i] = r.clipped ? w : 0;
    stats[2 * T + i] = w * r.k3;
  }
  return { loss, dlogp, stats };
}

export interface FlowGrpoSample {
  tokens: number[];
  prompt_len: number;
  advantage: number;
  old_logprobs: number[];
  ref_logprobs: number[];
  cur_logprobs: number[];
}

/**
 * Flattens fixture-style samples (log-probs of response tokens only) into per-token arrays with
 * weight 1/N, N = number of response tokens in the batch.
 */
export function flattenSamples(samples: FlowGrpoSample[]): {
  logp: Float64Array;
  old: Float64Array;
  ref: Float64Array;
  adv: Float64Array;
  weight: Float64Array;
} {
  let T = 0;
  samples.forEach((s, k) => {
    const n = s.tokens.length - s.prompt_len;
    for (const f of ['old_logprobs', 'ref_logprobs', 'cur_logprobs'] as const) {
      if (s[f].length !== n) throw new Error(`flowgrpo sample ${k}: '${f}' has ${s[f].length} entries, expected ${n} response tokens`);
    }
    T += n;
  });
  const out = { logp: new Float64Array(T), old: new Float64Array(T), ref: new Float64Array(T), adv: new Float64Array(T), weight: new Float64Array(T) };
  let i = 0;
  for (const s of samples) {
    for (let t = 0; t < s.cur_logprobs.length; t++, i++) {
      out.logp[i] = s.cur_logprobs[t];
      out.old[i] = s.old_logprobs[t];
      out.ref[i] = s.ref_logprobs[t];
      out.adv[i] = s.advantage;
      out.weight[i] = 1 / T;
    }
  }
  return out;
}

/**
 * T random tokens for testing the loss and its gradient, with rho and k3 kept away from the kinks (the
 * clip edges at epsLow 0.2 / epsHigh 0.28, and the k3 clamp at 10) so a finite difference is well defined.
 * `weight(i)` is token i's weight; `Arr` is the arrays' type (Float32Array for what a GPU reads).
 */
export function randomGrpoTokens<A extends Float32Array | Float64Array>(
  rng: Rng,
  T: number,
  weight: (i: number) => number,
  Arr: new (n: number) => A,
): { logp: A; old: A; ref: A; adv: A; w: A } {
  const logp = new Arr(T), old = new Arr(T), ref = new Arr(T), adv = new Arr(T), w = new Arr(T);
  for (let i = 0; i < T; i++) {
    for (;;) {
      logp[i] = -3 * rng.next();
      old[i] = logp[i] + 0.8 * rng.normal();
      ref[i] = logp[i] + 1.5 * rng.normal();
      adv[i] = rng.normal();
      const rho = Math.exp(logp[i] - old[i]);
      const d = ref[i] - logp[i];
      const kraw = Math.exp(d) - d - 1;
      if (Math.abs(rho - 0.8) > 1e-3 && Math.abs(rho - 1.28) > 1e-3 && Math.abs(kraw - 10) > 1e-3) break;
    }
    w[i] = weight(i);
  }
  return { logp, old, ref, adv, w };
}

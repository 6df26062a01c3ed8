// The Flow-GRPO token loss on the CPU, in float64, exactly as the shared fixture defines it:
//   L = (1/N) Σ_tokens [ max(-A ρ, -A clip(ρ, 1-epsLow, 1+epsHigh)) + β k3 ],
//   ρ = exp(logp - old),  k3 = clamp(exp(ref - logp) - (ref - logp) - 1, -klClamp, klClamp),
// with N the number of response tokens of the whole (mini-)batch. It gives the loss, its derivative with
// respect to each token's logp (what the model backward starts from), and the step statistics. The GPU
// grpo kernel computes the same thing; this is the reference and the stats path.

export interface GrpoLossParams {
  epsLow: number;
  epsHigh: number;
  beta: number;
  /** Default 10 (the fixture's clamp). */
  klClamp?: number;
  /**
   * Entropy bonus weight (GrpoConfig.entropyCoef): −entropyCoef × H_t per counted token. Not part of this
   * function's loss (it needs the whole distribution, not logp): backends that take it add its gradient at the
   * LM head (entropyRowWeights). Absent or 0: none.
   */
  entropyCoef?: number;
  /** GrpoConfig.entropyOver: 'choices' limits the bonus to rows with a choice set, over its tokens (default 'vocabulary'). */
  entropyOver?: 'vocabulary' | 'choices';
}

export interface GrpoTokenInputs {
  logp: ArrayLike<number>;
  old: ArrayLike<number>;
  ref: ArrayLike<number>;
  adv: ArrayLike<number>;
  /** 1 where the entry is a response token; absent = all entries count. */
  mask?: ArrayLike<number>;
}

export interface GrpoLossResult {
  /** Mean over the counted tokens (with `normalizer` = N). */
  loss: number;
  /** dL/dlogp per entry (0 where masked out). */
  dlogp: Float64Array;
  /** Sums over counted tokens, so micro-batches can be added before dividing by N. */
  sums: GrpoLossSums;
}

export interface GrpoLossSums {
  tokens: number;
  policy: number;
  /** Σ k3 (the KL estimate). */
  kl: number;
  /** Tokens where the clip is active (zero policy gradient). */
  clipped: number;
  ratio: number;
}

export function emptySums(): GrpoLossSums {
  return { tokens: 0, policy: 0, kl: 0, clipped: 0, ratio: 0 };
}

export function addSums(a: GrpoLossSums, b: GrpoLossSums): GrpoLossSums {
  return { tokens: a.tokens + b.tokens, policy: a.policy + b.policy, kl: a.kl + b.kl, clipped: a.clipped + b.clipped, ratio: a.ratio + b.ratio };
}

/**
 * Loss over the counted entries of `x`, normalised by `normalizer` (default: their count). Pass the whole
 * mini-batch's token count as `normalizer` when `x` is one micro-batch of it.
 */
export function grpoLoss(x: GrpoTokenInputs, p: GrpoLossParams, normalizer?: number): GrpoLossResult {
  const n = x.logp.length;
  const clampK = p.klClamp ?? 10;
  const dlogp = new Float64Array(n);
  const sums = emptySums();
  let total = 0;
  for (let i = 0; i < n; i++) if (!x.mask || x.mask[i] > 0) sums.tokens++;
  const N = normalizer ?? sums.tokens;
  if (N <= 0) return { loss: 0, dlogp, sums };
  for (let i = 0; i < n; i++) {
    if (x.mask && !(x.mask[i] > 0)) continue;
    const A = x.adv[i];
    const lp = x.logp[i];
    const rho = Math.exp(lp - x.old[i]);
    const clipped = Math.min(Math.max(rho, 1 - p.epsLow), 1 + p.epsHigh);
    const unclippedTerm = -A * rho;
    const clippedTerm = -A * clipped;
    // max() takes the clipped branch only when it is strictly larger; there ρ is outside the clip range,
    // the branch is constant in logp, and the token gives no policy gradient.
    const clipActive = clippedTerm > unclippedTerm;
    const policy = clipActive ? clippedTerm : unclippedTerm;
    const dPolicy = clipActive ? 0 : -A * rho;
    const d = x.ref[i] - lp;
    const ed = Math.exp(d);
    const k3raw = ed - d - 1;
    const k3 = Math.min(Math.max(k3raw, -clampK), clampK);
    const dK3 = k3raw > clampK || k3raw < -clampK ? 0 : 1 - ed;
    total += policy + p.beta * k3;
    dlogp[i] = (dPolicy + p.beta * dK3) / N;
    sums.policy += policy;
    sums.kl += k3;
    sums.clipped += clipActive ? 1 : 0;
    sums.ratio += rho;
  }
  return { loss: total / N, dlogp, sums };
}

/**
 * dL/dH_t of the entropy bonus (−entropyCoef × H_t per counted token, over `normalizer` tokens like the rest of
 * the loss) for each entry of `mask` (absent = all count); null when there is no bonus.
 */
export function entropyRowWeights(rows: number, entropyCoef: number | undefined, normalizer: number, mask?: ArrayLike<number>): Float64Array | null {
  if (!(entropyCoef! > 0) || !(normalizer > 0)) return null;
  const w = new Float64Array(rows);
  for (let i = 0; i < rows; i++) if (!mask || mask[i] > 0) w[i] = -entropyCoef! / normalizer;
  return w;
}

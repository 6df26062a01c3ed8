// AdamW as torch.optim.AdamW computes it (decoupled weight decay, bias-corrected moments), and the
// global-norm gradient clip of torch.nn.utils.clip_grad_norm_. The CPU backend runs these; the GPU
// backend's kernels are checked against them.

export interface AdamWParams {
  lr: number;
  beta1: number;
  beta2: number;
  eps: number;
  weightDecay: number;
  /** 1-based optimizer step (bias correction). */
  step: number;
  /** Multiplies the gradient first (the clip factor). */
  gradScale: number;
}

/** Updates p, m, v in place from gradient g. */
export function adamwUpdate(p: Float32Array, g: ArrayLike<number>, m: Float32Array, v: Float32Array, o: AdamWParams): void {
  if (!(o.step >= 1)) throw new Error(`adamwUpdate: step must be >= 1 (got ${o.step})`);
  const bc1 = 1 - o.beta1 ** o.step;
  const bc2 = 1 - o.beta2 ** o.step;
  for (let i = 0; i < p.length; i++) {
    const gi = g[i] * o.gradScale;
    m[i] = o.beta1 * m[i] + (1 - o.beta1) * gi;
    v[i] = o.beta2 * v[i] + (1 - o.beta2) * gi * gi;
    const upd = m[i] / bc1 / (Math.sqrt(v[i] / bc2) + o.eps);
    p[i] = p[i] * (1 - o.lr * o.weightDecay) - o.lr * upd;
  }
}

/** torch clip_grad_norm_: the factor the gradients are multiplied by (1 when within maxNorm or maxNorm = 0). */
export function clipFactor(globalNorm: number, maxNorm: number): number {
  if (!(maxNorm > 0) || !Number.isFinite(globalNorm)) return 1;
  return Math.min(1, maxNorm / (globalNorm + 1e-6));
}

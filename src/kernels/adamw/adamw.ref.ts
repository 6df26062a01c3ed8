// float64 AdamW (torch.optim.AdamW semantics), with the gradient multiplied by a clip scale first.

export interface AdamwHyper {
  lr: number;
  beta1: number;
  beta2: number;
  eps: number;
  weightDecay: number;
}

/** One step in place on float64 p, m, v; `step` starts at 1. */
export function adamwStepRef(p: Float64Array, g: ArrayLike<number>, m: Float64Array, v: Float64Array, h: AdamwHyper, step: number, scale = 1): void {
  const bc1 = 1 - h.beta1 ** step;
  const bc2 = 1 - h.beta2 ** step;
  for (let i = 0; i < p.length; i++) {
    const gi = g[i] * scale;
    m[i] = h.beta1 * m[i] + (1 - h.beta1) * gi;
    v[i] = h.beta2 * v[i] + (1 - h.beta2) * gi * gi;
    p[i] = p[i] * (1 - h.lr * h.weightDecay) - (h.lr * (m[i] / bc1)) / (Math.sqrt(v[i] / bc2) + h.eps);
  }
}

/** Global-norm clip scale as the reduce kernel computes it. */
export function clipScaleRef(grads: ArrayLike<number>[], maxNorm: number): number {
  let ss = 0;
  for (const g of grads) for (let i = 0; i < g.length; i++) ss += g[i] * g[i];
  return maxNorm > 0 ? Math.min(1, maxNorm / (Math.sqrt(ss) + 1e-6)) : 1;
}

/** float64 reference RMSNorm over rows of x [N, H]: returns y [N, H] and rstd [N]. */
export function rmsnormRef(x: ArrayLike<number>, w: ArrayLike<number>, n: number, h: number, eps: number): { y: Float64Array; rstd: Float64Array } {
  const y = new Float64Array(n * h);
  const rstd = new Float64Array(n);
  for (let r = 0; r < n; r++) {
    let ss = 0;
    for (let i = 0; i < h; i++) ss += x[r * h + i] ** 2;
    const s = 1 / Math.sqrt(ss / h + eps);
    rstd[r] = s;
    for (let i = 0; i < h; i++) y[r * h + i] = x[r * h + i] * s * w[i];
  }
  return { y, rstd };
}

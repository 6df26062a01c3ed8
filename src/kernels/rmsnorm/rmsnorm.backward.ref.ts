// float64 RMSNorm forward y = x * rstd * w and its input gradient (w frozen).

export function rmsnormRstdRef(x: ArrayLike<number>, n: number, h: number, eps: number): Float64Array {
  const rstd = new Float64Array(n);
  for (let r = 0; r < n; r++) {
    let ss = 0;
    for (let i = 0; i < h; i++) ss += x[r * h + i] ** 2;
    rstd[r] = 1 / Math.sqrt(ss / h + eps);
  }
  return rstd;
}

export function rmsnormForwardRef(x: ArrayLike<number>, w: ArrayLike<number>, n: number, h: number, eps: number): Float64Array {
  const rstd = rmsnormRstdRef(x, n, h, eps);
  const y = new Float64Array(n * h);
  for (let r = 0; r < n; r++) for (let i = 0; i < h; i++) y[r * h + i] = x[r * h + i] * rstd[r] * w[i];
  return y;
}

export function rmsnormBackwardRef(dy: ArrayLike<number>, x: ArrayLike<number>, w: ArrayLike<number>, n: number, h: number, eps: number): Float64Array {
  const rstd = rmsnormRstdRef(x, n, h, eps);
  const dx = new Float64Array(n * h);
  for (let r = 0; r < n; r++) {
    let s = 0;
    for (let i = 0; i < h; i++) s += w[i] * dy[r * h + i] * x[r * h + i];
    const c = (s * rstd[r] ** 3) / h;
    for (let i = 0; i < h; i++) dx[r * h + i] = rstd[r] * w[i] * dy[r * h + i] - x[r * h + i] * c;
  }
  return dx;
}

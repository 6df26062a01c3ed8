/** float64 reference: y[n, o] = sum_i x[n, i] W[o, i] + b[o] (+ y0[n, o] when accumulating). */
export function matmulRef(
  x: ArrayLike<number>,
  W: ArrayLike<number>,
  n: number,
  inDim: number,
  outDim: number,
  bias?: ArrayLike<number>,
  y0?: ArrayLike<number>,
): Float64Array {
  const y = new Float64Array(n * outDim);
  for (let r = 0; r < n; r++) {
    for (let o = 0; o < outDim; o++) {
      let s = bias ? bias[o] : 0;
      for (let i = 0; i < inDim; i++) s += x[r * inDim + i] * W[o * inDim + i];
      y[r * outDim + o] = s + (y0 ? y0[r * outDim + o] : 0);
    }
  }
  return y;
}

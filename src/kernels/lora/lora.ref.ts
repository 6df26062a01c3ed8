/** float64 reference: t = x A^T; y = y0 + s t B^T. */
export function loraRef(
  x: ArrayLike<number>,
  A: ArrayLike<number>,
  B: ArrayLike<number>,
  y0: ArrayLike<number>,
  n: number,
  inDim: number,
  outDim: number,
  rank: number,
  scale: number,
): { t: Float64Array; y: Float64Array } {
  const t = new Float64Array(n * rank);
  for (let r = 0; r < n; r++)
    for (let j = 0; j < rank; j++) {
      let s = 0;
      for (let i = 0; i < inDim; i++) s += x[r * inDim + i] * A[j * inDim + i];
      t[r * rank + j] = s;
    }
  const y = Float64Array.from(y0);
  for (let r = 0; r < n; r++)
    for (let o = 0; o < outDim; o++) {
      let s = 0;
      for (let j = 0; j < rank; j++) s += t[r * rank + j] * B[o * rank + j];
      y[r * outDim + o] += scale * s;
    }
  return { t, y };
}

/** float64 reference: x + y. */
export function residualRef(x: ArrayLike<number>, y: ArrayLike<number>): Float64Array {
  const out = new Float64Array(x.length);
  for (let i = 0; i < x.length; i++) out[i] = x[i] + y[i];
  return out;
}

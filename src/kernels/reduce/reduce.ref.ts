/** float64 reference of reduce: [sum (of squares), sqrt of it, clip scale]. */
export function reduceRef(inputs: ArrayLike<number>[], square: boolean, maxNorm = 0): [number, number, number] {
  let total = 0;
  for (const a of inputs) for (let i = 0; i < a.length; i++) total += square ? a[i] * a[i] : a[i];
  const norm = Math.sqrt(Math.max(total, 0));
  return [total, norm, maxNorm > 0 ? Math.min(1, maxNorm / (norm + 1e-6)) : 1];
}

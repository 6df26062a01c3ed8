/** float64 reference: x[n] = E[ids[n]] (zeros for ids >= vocab). E is the full [V, H] table. */
export function embeddingRef(E: ArrayLike<number>, ids: ArrayLike<number>, hidden: number, vocab: number): Float64Array {
  const x = new Float64Array(ids.length * hidden);
  for (let n = 0; n < ids.length; n++) {
    if (ids[n] >= vocab) continue;
    for (let h = 0; h < hidden; h++) x[n * hidden + h] = E[ids[n] * hidden + h];
  }
  return x;
}

/** float64 reference: act = g * sigmoid(g) * u. */
export function swigluRef(gate: ArrayLike<number>, up: ArrayLike<number>): Float64Array {
  const out = new Float64Array(gate.length);
  for (let i = 0; i < gate.length; i++) out[i] = (gate[i] / (1 + Math.exp(-gate[i]))) * up[i];
  return out;
}

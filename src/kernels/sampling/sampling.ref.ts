/**
 * float64 reference of the sampled distribution over a full logits row, written independently of the
 * GPU/candidate path: softmax(logits/T) over V, keep the topK most likely (ties: lower id first),
 * renormalise, keep the smallest prefix whose mass reaches topP, renormalise. Returns p over all V.
 */
export function samplingDistributionRef(logits: ArrayLike<number>, temperature: number, topK = 0, topP = 1): Float64Array {
  const V = logits.length;
  const order = Array.from({ length: V }, (_, i) => i).sort((a, b) => logits[b] - logits[a] || a - b);
  let m = -Infinity;
  for (let i = 0; i < V; i++) m = Math.max(m, logits[i] / temperature);
  const w = Array.from(logits, (l) => Math.exp(l / temperature - m));
  const kept = order.slice(0, topK > 0 ? Math.min(topK, V) : V);
  let z = kept.reduce((a, i) => a + w[i], 0);
  const out = new Float64Array(V);
  let cum = 0;
  for (const i of kept) {
    if (topP < 1 && cum >= topP) break;
    out[i] = w[i] / z;
    cum += out[i];
  }
  z = out.reduce((a, b) => a + b, 0);
  for (let i = 0; i < V; i++) out[i] /= z;
  return out;
}

/** float64 argmax with ties to the lowest id. */
export function argmaxRef(logits: ArrayLike<number>): number {
  let best = 0;
  for (let i = 1; i < logits.length; i++) if (logits[i] > logits[best]) best = i;
  return best;
}

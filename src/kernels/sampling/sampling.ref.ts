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

/**
 * float64 reference of pure temperature sampling with uniform u, written independently of draw.ts from the
 * rule's definition: the k most likely tokens (ties: lower id first) in order while u lies within their
 * softmax mass; past it the first accepted of the seeded rejection attempts over the other tokens (see
 * draw.ts, "The tail draw"); none within `attempts`: the k-th token.
 */
export function pureTemperatureDrawRef(logits: ArrayLike<number>, temperature: number, u: number, k = 64, attempts = 2 ** 20): number {
  const V = logits.length;
  const order = Array.from({ length: V }, (_, i) => i).sort((a, b) => logits[b] - logits[a] || a - b);
  let m = -Infinity;
  for (let i = 0; i < V; i++) m = Math.max(m, logits[i] / temperature);
  let z = 0;
  for (let i = 0; i < V; i++) z += Math.exp(logits[i] / temperature - m);
  let cum = 0;
  for (const i of order.slice(0, k)) {
    cum += Math.exp(logits[i] / temperature - m) / z;
    if (u < cum) return i;
  }
  const top = new Set(order.slice(0, k));
  const ref = logits[order[k - 1]];
  const hash = (v: number) => {
    const state = (Math.imul(v, 747796405) + 2891336453) >>> 0;
    const word = Math.imul((state >>> ((state >>> 28) + 4)) ^ state, 277803737) >>> 0;
    return ((word >>> 22) ^ word) >>> 0;
  };
  const seed = hash(new DataView(Float32Array.of(u).buffer).getUint32(0, true));
  const whole = Math.floor(0xffffffff / V) * V;
  for (let a = 0; a < attempts; a++) {
    const x = hash((seed + a) >>> 0);
    if (x >= whole || top.has(x % V) || !Number.isFinite(logits[x % V])) continue;
    if ((2 * (hash(x) >>> 9) + 1) / 2 ** 24 < Math.exp((logits[x % V] - ref) / temperature)) return x % V;
  }
  return order[k - 1];
}

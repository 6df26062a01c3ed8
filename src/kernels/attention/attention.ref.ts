/** float64 reference attention over key ranges; returns out [N, nH*hd] and lse [N, nH]. */
export function attentionRef(
  q: ArrayLike<number>,
  k: ArrayLike<number>,
  v: ArrayLike<number>,
  ranges: ArrayLike<number>,
  n: number,
  nH: number,
  nKV: number,
  hd: number,
): { out: Float64Array; lse: Float64Array } {
  const out = new Float64Array(n * nH * hd);
  const lse = new Float64Array(n * nH);
  const scale = 1 / Math.sqrt(hd);
  const group = nH / nKV;
  for (let r = 0; r < n; r++)
    for (let h = 0; h < nH; h++) {
      const [s0, s1] = [ranges[2 * r], ranges[2 * r + 1]];
      const kvh = Math.floor(h / group);
      const scores: number[] = [];
      for (let j = s0; j < s1; j++) {
        let d = 0;
        for (let i = 0; i < hd; i++) d += q[r * nH * hd + h * hd + i] * k[j * nKV * hd + kvh * hd + i];
        scores.push(d * scale);
      }
      const m = Math.max(...scores);
      let sum = 0;
      for (const s of scores) sum += Math.exp(s - m);
      lse[r * nH + h] = m + Math.log(sum);
      for (let j = s0; j < s1; j++) {
        const p = Math.exp(scores[j - s0] - m) / sum;
        for (let i = 0; i < hd; i++) out[r * nH * hd + h * hd + i] += p * v[j * nKV * hd + kvh * hd + i];
      }
    }
  return { out, lse };
}

/** float64 reference: per row lse over V and logprob = logit[target] - lse (logits [rows, V] row-major). */
export function logprobRef(logits: ArrayLike<number>, targets: ArrayLike<number>, rows: number, V: number, scale = 1): { lse: Float64Array; logprob: Float64Array } {
  const lse = new Float64Array(rows);
  const logprob = new Float64Array(rows);
  for (let r = 0; r < rows; r++) {
    let m = -Infinity;
    for (let c = 0; c < V; c++) m = Math.max(m, logits[r * V + c] * scale);
    let s = 0;
    for (let c = 0; c < V; c++) s += Math.exp(logits[r * V + c] * scale - m);
    lse[r] = m + Math.log(s);
    logprob[r] = logits[r * V + targets[r]] * scale - lse[r];
  }
  return { lse, logprob };
}

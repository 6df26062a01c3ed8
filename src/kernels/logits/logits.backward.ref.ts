// float64 reference: logp_r = log_softmax(s * x_r E^T)[target_r] over the whole vocabulary (E [V, H],
// s = 1/temperature), its gradient with respect to the logits and to x.

export function logitsRef(x: ArrayLike<number>, E: ArrayLike<number>, rows: number, H: number, V: number): Float64Array {
  const z = new Float64Array(rows * V);
  for (let r = 0; r < rows; r++) {
    for (let v = 0; v < V; v++) {
      let s = 0;
      for (let i = 0; i < H; i++) s += x[r * H + i] * E[v * H + i];
      z[r * V + v] = s;
    }
  }
  return z;
}

/** log-sum-exp of each row of s*z. */
export function lseRef(z: ArrayLike<number>, rows: number, V: number, s = 1): Float64Array {
  const out = new Float64Array(rows);
  for (let r = 0; r < rows; r++) {
    let mx = -Infinity;
    for (let v = 0; v < V; v++) mx = Math.max(mx, s * z[r * V + v]);
    let sum = 0;
    for (let v = 0; v < V; v++) sum += Math.exp(s * z[r * V + v] - mx);
    out[r] = mx + Math.log(sum);
  }
  return out;
}

export function targetLogpRef(x: ArrayLike<number>, E: ArrayLike<number>, targets: ArrayLike<number>, rows: number, H: number, V: number, s = 1): Float64Array {
  const z = logitsRef(x, E, rows, H, V);
  const lse = lseRef(z, rows, V, s);
  return Float64Array.from({ length: rows }, (_, r) => s * z[r * V + targets[r]] - lse[r]);
}

/** dlogits [rows, V] = s * dlogp_r * (onehot - softmax(s z)). */
export function dlogitsRef(z: ArrayLike<number>, dlogp: ArrayLike<number>, targets: ArrayLike<number>, rows: number, V: number, s = 1): Float64Array {
  const lse = lseRef(z, rows, V, s);
  const d = new Float64Array(rows * V);
  for (let r = 0; r < rows; r++) {
    for (let v = 0; v < V; v++) d[r * V + v] = s * dlogp[r] * ((v === targets[r] ? 1 : 0) - Math.exp(s * z[r * V + v] - lse[r]));
  }
  return d;
}

// float64 attention forward (per-row key ranges, GQA, scale 1/sqrt(hd)) and its analytic backward.
// q, out [n, nH*hd]; k, v [m, nKV*hd]; ranges [n, 2]; lse [n, nH].

export interface AttnShape {
  n: number;
  m: number;
  nH: number;
  nKV: number;
  hd: number;
}

export function attentionForwardRef(q: ArrayLike<number>, k: ArrayLike<number>, v: ArrayLike<number>, ranges: ArrayLike<number>, s: AttnShape): { out: Float64Array; lse: Float64Array } {
  const { n, nH, nKV, hd } = s;
  const G = nH / nKV;
  const scale = 1 / Math.sqrt(hd);
  const out = new Float64Array(n * nH * hd);
  const lse = new Float64Array(n * nH);
  for (let i = 0; i < n; i++) {
    const [st, en] = [ranges[2 * i], ranges[2 * i + 1]];
    for (let h = 0; h < nH; h++) {
      const g = Math.floor(h / G);
      const qb = (i * nH + h) * hd;
      const sc: number[] = [];
      for (let m = st; m < en; m++) {
        let d = 0;
        for (let c = 0; c < hd; c++) d += q[qb + c] * k[(m * nKV + g) * hd + c];
        sc.push(d * scale);
      }
      const mx = Math.max(...sc);
      let z = 0;
      for (const x of sc) z += Math.exp(x - mx);
      const l = mx + Math.log(z);
      lse[i * nH + h] = l;
      for (let m = st; m < en; m++) {
        const p = Math.exp(sc[m - st] - l);
        for (let c = 0; c < hd; c++) out[qb + c] += p * v[(m * nKV + g) * hd + c];
      }
    }
  }
  return { out, lse };
}

export function attentionBackwardRef(q: ArrayLike<number>, k: ArrayLike<number>, v: ArrayLike<number>, dout: ArrayLike<number>, ranges: ArrayLike<number>, s: AttnShape): { dq: Float64Array; dk: Float64Array; dv: Float64Array } {
  const { n, m: M, nH, nKV, hd } = s;
  const G = nH / nKV;
  const scale = 1 / Math.sqrt(hd);
  const { out, lse } = attentionForwardRef(q, k, v, ranges, s);
  const dq = new Float64Array(n * nH * hd);
  const dk = new Float64Array(M * nKV * hd);
  const dv = new Float64Array(M * nKV * hd);
  for (let i = 0; i < n; i++) {
    for (let h = 0; h < nH; h++) {
      const g = Math.floor(h / G);
      const qb = (i * nH + h) * hd;
      let D = 0;
      for (let c = 0; c < hd; c++) D += dout[qb + c] * out[qb + c];
      for (let m = ranges[2 * i]; m < ranges[2 * i + 1]; m++) {
        const kb = (m * nKV + g) * hd;
        let sc = 0;
        let dp = 0;
        for (let c = 0; c < hd; c++) {
          sc += q[qb + c] * k[kb + c];
          dp += dout[qb + c] * v[kb + c];
        }
        const p = Math.exp(sc * scale - lse[i * nH + h]);
        const ds = p * (dp - D);
        for (let c = 0; c < hd; c++) {
          dq[qb + c] += scale * ds * k[kb + c];
          dk[kb + c] += scale * ds * q[qb + c];
          dv[kb + c] += p * dout[qb + c];
        }
      }
    }
  }
  return { dq, dk, dv };
}

/** Ranges of a packed batch of sequences (causal): row i sees [first row of its sequence, i + 1). */
export function packedRanges(lengths: number[]): Uint32Array {
  const r: number[] = [];
  let start = 0;
  for (const len of lengths) {
    for (let t = 0; t < len; t++) r.push(start, start + t + 1);
    start += len;
  }
  return Uint32Array.from(r);
}

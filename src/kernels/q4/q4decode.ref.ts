// Float64 reference of q4DecodeLinear (q4decode.ts): the weights dequantized exactly (q4.ref.ts), then
// every option computed in float64 in the order the kernel applies them.
import { rmsnormRef } from '../rmsnorm/rmsnorm.ref';

/** y[row, c] += scale * sum_j t[row, j] B[c, j]. */
export interface LoraRef {
  t: ArrayLike<number>;
  B: ArrayLike<number>;
  rank: number;
  scale: number;
}

const loraAt = (l: LoraRef | undefined, row: number, c: number) => {
  if (!l) return 0;
  let s = 0;
  for (let j = 0; j < l.rank; j++) s += l.t[row * l.rank + j] * l.B[c * l.rank + j];
  return l.scale * s;
};

export interface Q4DecodeRefArgs {
  /** Dequantized rows of W's window, [out, inDim] (out = 2 * I with swiglu: gate rows, then up rows). */
  Wd: ArrayLike<number>;
  x: ArrayLike<number>;
  n: number;
  inDim: number;
  norm?: { w: ArrayLike<number>; eps: number };
  /** Rows and optional bias of each output segment (absent with swiglu). */
  segments?: Array<{ rows: number; bias?: ArrayLike<number>; lora?: LoraRef }>;
  /** [n, out] added to the single segment. */
  residual?: ArrayLike<number>;
  /** I: act = silu(gate) * up. */
  swiglu?: number;
  /** With swiglu: LoRA ups added to gate and up before the product. */
  gateLora?: LoraRef;
  upLora?: LoraRef;
}

/** Returns each segment's [n, rows] (or the single act [n, I]) and, with a norm, the normalised x. */
export function q4DecodeRef(a: Q4DecodeRefArgs): { outs: Float64Array[]; xn?: Float64Array } {
  const { n, inDim: K } = a;
  const xn = a.norm ? rmsnormRef(a.x, a.norm.w, n, K, a.norm.eps).y : undefined;
  const xin = xn ?? a.x;
  const dot = (r: number, o: number) => {
    let s = 0;
    for (let k = 0; k < K; k++) s += a.Wd[o * K + k] * xin[r * K + k];
    return s;
  };
  if (a.swiglu !== undefined) {
    const I = a.swiglu;
    const act = new Float64Array(n * I);
    for (let r = 0; r < n; r++) {
      for (let i = 0; i < I; i++) {
        const g = dot(r, i) + loraAt(a.gateLora, r, i);
        act[r * I + i] = (g / (1 + Math.exp(-g))) * (dot(r, I + i) + loraAt(a.upLora, r, i));
      }
    }
    return { outs: [act], xn };
  }
  const outs: Float64Array[] = [];
  let row0 = 0;
  for (const s of a.segments ?? []) {
    const y = new Float64Array(n * s.rows);
    for (let r = 0; r < n; r++) {
      for (let c = 0; c < s.rows; c++) {
        let v = dot(r, row0 + c) + (s.bias ? s.bias[c] : 0) + loraAt(s.lora, r, c);
        if (a.residual) v += a.residual[r * s.rows + c];
        y[r * s.rows + c] = v;
      }
    }
    outs.push(y);
    row0 += s.rows;
  }
  return { outs, xn };
}

// Float64 CPU reference of the whole Qwen2 / Qwen2.5 decoder (Hugging Face `Qwen2ForCausalLM`
// semantics), with optional unmerged LoRA adapters. It is the independent oracle the GPU runtime is
// tested against, so it is written as plainly as possible: one sequence at a time, no KV cache, no
// packing, every sum in float64. Weights are whatever values the GPU sees (f16-rounded matrices).

export interface Qwen2RefConfig {
  hiddenSize: number;
  intermediateSize: number;
  numHeads: number;
  numKvHeads: number;
  headDim: number;
  numLayers: number;
  vocabSize: number;
  ropeTheta: number;
  rmsNormEps: number;
  tieWordEmbeddings: boolean;
}

/** A linear layer `y = x W^T + b`, W row-major [out, in]. */
export interface RefLinear {
  W: ArrayLike<number>;
  b?: ArrayLike<number>;
}

export interface Qwen2RefLayer {
  inputNorm: ArrayLike<number>;
  q: RefLinear;
  k: RefLinear;
  v: RefLinear;
  o: RefLinear;
  postNorm: ArrayLike<number>;
  gate: RefLinear;
  up: RefLinear;
  down: RefLinear;
}

export interface Qwen2RefWeights {
  /** [V, H] */
  embed: ArrayLike<number>;
  layers: Qwen2RefLayer[];
  finalNorm: ArrayLike<number>;
  /** [V, H]; absent when the embedding is tied. */
  lmHead?: ArrayLike<number>;
}

export const LORA_MODULES = ['q', 'k', 'v', 'o', 'gate', 'up', 'down'] as const;
export type LoraModule = (typeof LORA_MODULES)[number];

/** One LoRA pair: A [r, in], B [out, r]; the layer adds `scale * B (A x)`. */
export interface RefLoraPair {
  A: ArrayLike<number>;
  B: ArrayLike<number>;
  rank: number;
}

export interface Qwen2RefAdapter {
  scale: number;
  /** layers[l][module], absent where the adapter does not touch that module. */
  layers: Array<Partial<Record<LoraModule, RefLoraPair>>>;
}

function linear(x: Float64Array, lin: RefLinear, out: number, inp: number, lora?: RefLoraPair, scale = 0): Float64Array {
  const y = new Float64Array(out);
  for (let o = 0; o < out; o++) {
    let s = lin.b ? lin.b[o] : 0;
    const base = o * inp;
    for (let i = 0; i < inp; i++) s += lin.W[base + i] * x[i];
    y[o] = s;
  }
  if (lora) {
    const r = lora.rank;
    const t = new Float64Array(r);
    for (let j = 0; j < r; j++) {
      let s = 0;
      for (let i = 0; i < inp; i++) s += lora.A[j * inp + i] * x[i];
      t[j] = s;
    }
    for (let o = 0; o < out; o++) {
      let s = 0;
      for (let j = 0; j < r; j++) s += lora.B[o * r + j] * t[j];
      y[o] += scale * s;
    }
  }
  return y;
}

function rmsnorm(x: Float64Array, w: ArrayLike<number>, eps: number): Float64Array {
  let ss = 0;
  for (let i = 0; i < x.length; i++) ss += x[i] * x[i];
  const rstd = 1 / Math.sqrt(ss / x.length + eps);
  const y = new Float64Array(x.length);
  for (let i = 0; i < x.length; i++) y[i] = x[i] * rstd * w[i];
  return y;
}

/** Rotate-half RoPE in place on `nHeads` heads of `hd` each, at position `pos`. */
function rope(v: Float64Array, nHeads: number, hd: number, pos: number, theta: number): void {
  const half = hd / 2;
  for (let h = 0; h < nHeads; h++) {
    for (let i = 0; i < half; i++) {
      const ang = pos * Math.pow(theta, (-2 * i) / hd);
      const c = Math.cos(ang);
      const s = Math.sin(ang);
      const a = v[h * hd + i];
      const b = v[h * hd + i + half];
      v[h * hd + i] = a * c - b * s;
      v[h * hd + i + half] = b * c + a * s;
    }
  }
}

const silu = (x: number) => x / (1 + Math.exp(-x));

/** Per-layer activations, [position][features], as the GPU activation plan keeps them for the backward. */
export interface Qwen2RefLayerTrace {
  x: Float64Array[];
  h: Float64Array[];
  /** After RoPE. */
  q: Float64Array[];
  k: Float64Array[];
  v: Float64Array[];
  attn: Float64Array[];
  /** [position][head] log-sum-exp of the scaled scores. */
  lse: Float64Array[];
  gate: Float64Array[];
  up: Float64Array[];
}

export interface Qwen2RefResult {
  /** logits[t] = logits at position t, length V. */
  logits: Float64Array[];
  /** logprobs[t] = log p(tokens[t+1] | tokens[..t]), length T-1. */
  logprobs: number[];
  /** Filled when `trace` was asked for. */
  layers?: Qwen2RefLayerTrace[];
  /** [position] final residual stream (before the final norm). */
  xOut?: Float64Array[];
}

/** Runs the full model over one sequence, returning every position's logits and next-token logprobs. */
export function qwen2RefForward(cfg: Qwen2RefConfig, w: Qwen2RefWeights, tokens: number[], adapter?: Qwen2RefAdapter, trace = false): Qwen2RefResult {
  const { hiddenSize: H, intermediateSize: I, numHeads: nH, numKvHeads: nKV, headDim: hd, vocabSize: V } = cfg;
  const T = tokens.length;
  const scale = adapter?.scale ?? 0;
  let xs: Float64Array[] = tokens.map((id) => {
    if (!Number.isInteger(id) || id < 0 || id >= V) throw new Error(`qwen2RefForward: token id ${id} is outside the vocabulary (size ${V})`);
    return Float64Array.from({ length: H }, (_, i) => w.embed[id * H + i]);
  });
  const group = nH / nKV;
  const traces: Qwen2RefLayerTrace[] = [];
  for (let l = 0; l < cfg.numLayers; l++) {
    const tr: Qwen2RefLayerTrace = { x: xs, h: [], q: [], k: [], v: [], attn: [], lse: [], gate: [], up: [] };
    const L = w.layers[l];
    const ad = adapter?.layers[l] ?? {};
    const qs: Float64Array[] = [];
    const ks: Float64Array[] = [];
    const vs: Float64Array[] = [];
    for (let t = 0; t < T; t++) {
      const n = rmsnorm(xs[t], L.inputNorm, cfg.rmsNormEps);
      const q = linear(n, L.q, nH * hd, H, ad.q, scale);
      const k = linear(n, L.k, nKV * hd, H, ad.k, scale);
      const v = linear(n, L.v, nKV * hd, H, ad.v, scale);
      rope(q, nH, hd, t, cfg.ropeTheta);
      rope(k, nKV, hd, t, cfg.ropeTheta);
      qs.push(q);
      ks.push(k);
      vs.push(v);
    }
    tr.q = qs;
    tr.k = ks;
    tr.v = vs;
    const next: Float64Array[] = [];
    for (let t = 0; t < T; t++) {
      const att = new Float64Array(nH * hd);
      const lse = new Float64Array(nH);
      for (let h = 0; h < nH; h++) {
        const kvh = Math.floor(h / group);
        const scores = new Float64Array(t + 1);
        let m = -Infinity;
        for (let s = 0; s <= t; s++) {
          let d = 0;
          for (let i = 0; i < hd; i++) d += qs[t][h * hd + i] * ks[s][kvh * hd + i];
          scores[s] = d / Math.sqrt(hd);
          m = Math.max(m, scores[s]);
        }
        let z = 0;
        for (let s = 0; s <= t; s++) {
          scores[s] = Math.exp(scores[s] - m);
          z += scores[s];
        }
        lse[h] = m + Math.log(z);
        for (let s = 0; s <= t; s++) {
          const p = scores[s] / z;
          for (let i = 0; i < hd; i++) att[h * hd + i] += p * vs[s][kvh * hd + i];
        }
      }
      const o = linear(att, L.o, H, nH * hd, ad.o, scale);
      const h1 = xs[t].map((v, i) => v + o[i]);
      const n2 = rmsnorm(h1, L.postNorm, cfg.rmsNormEps);
      const g = linear(n2, L.gate, I, H, ad.gate, scale);
      const u = linear(n2, L.up, I, H, ad.up, scale);
      const act = g.map((gv, i) => silu(gv) * u[i]);
      const d = linear(act, L.down, H, I, ad.down, scale);
      next.push(h1.map((v, i) => v + d[i]));
      tr.attn.push(att);
      tr.lse.push(lse);
      tr.h.push(h1);
      tr.gate.push(g);
      tr.up.push(u);
    }
    traces.push(tr);
    xs = next;
  }
  const head = cfg.tieWordEmbeddings ? w.embed : w.lmHead;
  if (!head) throw new Error('qwen2RefForward: untied config without lmHead');
  const logits = xs.map((x) => linear(rmsnorm(x, w.finalNorm, cfg.rmsNormEps), { W: head }, V, H));
  const logprobs: number[] = [];
  for (let t = 0; t + 1 < T; t++) logprobs.push(logSoftmaxAt(logits[t], tokens[t + 1]));
  return trace ? { logits, logprobs, layers: traces, xOut: xs } : { logits, logprobs };
}

export function logSoftmaxAt(logits: ArrayLike<number>, target: number): number {
  let m = -Infinity;
  for (let i = 0; i < logits.length; i++) m = Math.max(m, logits[i]);
  let z = 0;
  for (let i = 0; i < logits.length; i++) z += Math.exp(logits[i] - m);
  return logits[target] - m - Math.log(z);
}

/**
 * H = -Σ_j p_j log p_j of the softmax of one row of logits, in float64 (the entropy bonus's reference); with
 * `groups`, of the softmax of those ids' logits alone, summed within each group (the bonus over choices).
 */
export function refEntropy(row: ArrayLike<number>, groups?: ReadonlyArray<ArrayLike<number>>): number {
  const ids = groups ? groups.flatMap((g) => Array.from(g)) : Array.from({ length: row.length }, (_, j) => j);
  const m = Math.max(...ids.map((j) => row[j]));
  const z = ids.reduce((s, j) => s + Math.exp(row[j] - m), 0);
  const mass = groups ? groups.map((g) => Array.from(g).reduce((s, j) => s + Math.exp(row[j] - m) / z, 0)) : ids.map((j) => Math.exp(row[j] - m) / z);
  return mass.reduce((h, q) => (q > 0 ? h - q * Math.log(q) : h), 0);
}

export function argmax(a: ArrayLike<number>): number {
  let best = 0;
  for (let i = 1; i < a.length; i++) if (a[i] > a[best]) best = i;
  return best;
}

/** Greedy continuation by full recomputation (the reference has no KV cache on purpose). */
export function qwen2RefGreedy(cfg: Qwen2RefConfig, w: Qwen2RefWeights, prompt: number[], n: number, adapter?: Qwen2RefAdapter): number[] {
  const seq = [...prompt];
  const out: number[] = [];
  for (let i = 0; i < n; i++) {
    const { logits } = qwen2RefForward(cfg, w, seq, adapter);
    const next = argmax(logits[logits.length - 1]);
    out.push(next);
    seq.push(next);
  }
  return out;
}

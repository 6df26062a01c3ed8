// Float64 CPU forward and backward of a Qwen2 decoder with LoRA, for tiny models: the gradient of any
// per-token function of the logprobs with respect to the LoRA A/B tensors. It is the trainer's CPU
// backend (toy mode without a usable GPU, unit tests of the training loop) and an analytic reference for
// the GPU backward, itself checked against the PyTorch fixture gradients and finite differences.
// One sequence at a time, no KV cache; every intermediate the backward needs is kept (tiny models only).
import type { Qwen2Config } from '../io/qwen2-config';
import { loraKey, type LoraAdapter, type LoraModule, type LoraPair } from '../io/peft';

type Dims = Pick<Qwen2Config, 'hiddenSize' | 'intermediateSize' | 'numHeads' | 'numKvHeads' | 'headDim' | 'numLayers' | 'vocabSize' | 'ropeTheta' | 'rmsNormEps' | 'tieWordEmbeddings'>;

export interface HostLinear {
  /** [out, in] row-major (the f16-rounded values the GPU reads). */
  W: ArrayLike<number>;
  b?: ArrayLike<number>;
}

/** Host copies of the base weights, shaped like tests/support/qwen2-ref.ts's Qwen2RefWeights. */
export interface HostQwen2Weights {
  embed: ArrayLike<number>;
  layers: Array<{
    inputNorm: ArrayLike<number>;
    q: HostLinear;
    k: HostLinear;
    v: HostLinear;
    o: HostLinear;
    postNorm: ArrayLike<number>;
    gate: HostLinear;
    up: HostLinear;
    down: HostLinear;
  }>;
  finalNorm: ArrayLike<number>;
  lmHead?: ArrayLike<number>;
}

/** LoRA gradients, keyed like LoraAdapter.pairs (`${layer}.${module}`), same shapes as A and B. */
export type LoraGrads = Map<string, { A: Float64Array; B: Float64Array }>;

export function zeroLoraGrads(adapter: LoraAdapter): LoraGrads {
  const g: LoraGrads = new Map();
  for (const [k, p] of adapter.pairs) g.set(k, { A: new Float64Array(p.A.length), B: new Float64Array(p.B.length) });
  return g;
}

interface LinCache {
  x: Float64Array;
  /** x A^T, [T, r] (only with LoRA). */
  t?: Float64Array;
}

interface LayerCache {
  xIn: Float64Array;
  rstd1: Float64Array;
  n1: Float64Array;
  tq?: Float64Array;
  tk?: Float64Array;
  tv?: Float64Array;
  q: Float64Array;
  k: Float64Array;
  v: Float64Array;
  /** [nH, T, T] attention probabilities. */
  P: Float64Array;
  att: Float64Array;
  to?: Float64Array;
  h: Float64Array;
  rstd2: Float64Array;
  n2: Float64Array;
  tg?: Float64Array;
  tu?: Float64Array;
  g: Float64Array;
  u: Float64Array;
  act: Float64Array;
  td?: Float64Array;
}

export interface CpuForward {
  tokens: number[];
  /** logprobs[t] = log p(tokens[t+1] | tokens[..t]), length T-1. */
  logprobs: Float64Array;
  /** [T, V] */
  logits: Float64Array;
  layers: LayerCache[];
  xLast: Float64Array;
  rstdF: Float64Array;
  nF: Float64Array;
}

function linFwd(x: Float64Array, T: number, inp: number, out: number, lin: HostLinear, pair: LoraPair | undefined): { y: Float64Array; t?: Float64Array } {
  const y = new Float64Array(T * out);
  const W = lin.W;
  for (let r = 0; r < T; r++) {
    const xo = r * inp;
    for (let o = 0; o < out; o++) {
      let s = lin.b ? lin.b[o] : 0;
      const wo = o * inp;
      for (let i = 0; i < inp; i++) s += W[wo + i] * x[xo + i];
      y[r * out + o] = s;
    }
  }
  if (!pair) return { y };
  const R = pair.r;
  const t = new Float64Array(T * R);
  for (let r = 0; r < T; r++) {
    for (let j = 0; j < R; j++) {
      let s = 0;
      for (let i = 0; i < inp; i++) s += pair.A[j * inp + i] * x[r * inp + i];
      t[r * R + j] = s;
    }
    for (let o = 0; o < out; o++) {
      let s = 0;
      for (let j = 0; j < R; j++) s += pair.B[o * R + j] * t[r * R + j];
      y[r * out + o] += pair.scale * s;
    }
  }
  return { y, t };
}

/** dx (added into `dx`) and LoRA grads of y = x W^T + b + s (x A^T) B^T, given dy. */
function linBwd(dy: Float64Array, T: number, inp: number, out: number, lin: HostLinear, c: LinCache, pair: LoraPair | undefined, grad: { A: Float64Array; B: Float64Array } | undefined, dx: Float64Array): void {
  const W = lin.W;
  for (let r = 0; r < T; r++) {
    for (let o = 0; o < out; o++) {
      const g = dy[r * out + o];
      if (g === 0) continue;
      const wo = o * inp;
      for (let i = 0; i < inp; i++) dx[r * inp + i] += g * W[wo + i];
    }
  }
  if (!pair || !c.t) return;
  const R = pair.r;
  const s = pair.scale;
  const u = new Float64Array(R);
  for (let r = 0; r < T; r++) {
    u.fill(0);
    for (let o = 0; o < out; o++) {
      const g = dy[r * out + o];
      if (g === 0) continue;
      for (let j = 0; j < R; j++) {
        u[j] += g * pair.B[o * R + j];
        if (grad) grad.B[o * R + j] += s * g * c.t[r * R + j];
      }
    }
    for (let j = 0; j < R; j++) {
      const uj = s * u[j];
      if (uj === 0) continue;
      for (let i = 0; i < inp; i++) {
        dx[r * inp + i] += uj * pair.A[j * inp + i];
        if (grad) grad.A[j * inp + i] += uj * c.x[r * inp + i];
      }
    }
  }
}

function rmsFwd(x: Float64Array, T: number, H: number, w: ArrayLike<number>, eps: number): { y: Float64Array; rstd: Float64Array } {
  const y = new Float64Array(T * H);
  const rstd = new Float64Array(T);
  for (let r = 0; r < T; r++) {
    let ss = 0;
    for (let i = 0; i < H; i++) ss += x[r * H + i] ** 2;
    const rs = 1 / Math.sqrt(ss / H + eps);
    rstd[r] = rs;
    for (let i = 0; i < H; i++) y[r * H + i] = x[r * H + i] * rs * w[i];
  }
  return { y, rstd };
}

/** Adds d(rmsnorm)/dx · dy into dx. */
function rmsBwd(dy: Float64Array, x: Float64Array, rstd: Float64Array, T: number, H: number, w: ArrayLike<number>, dx: Float64Array): void {
  for (let r = 0; r < T; r++) {
    const rs = rstd[r];
    let dot = 0;
    for (let i = 0; i < H; i++) dot += dy[r * H + i] * w[i] * x[r * H + i];
    const c = (rs * rs * rs * dot) / H;
    for (let i = 0; i < H; i++) dx[r * H + i] += rs * w[i] * dy[r * H + i] - x[r * H + i] * c;
  }
}

function ropeAngles(T: number, hd: number, theta: number): { cos: Float64Array; sin: Float64Array } {
  const half = hd / 2;
  const cos = new Float64Array(T * half);
  const sin = new Float64Array(T * half);
  for (let t = 0; t < T; t++) {
    for (let i = 0; i < half; i++) {
      const a = t * Math.pow(theta, (-2 * i) / hd);
      cos[t * half + i] = Math.cos(a);
      sin[t * half + i] = Math.sin(a);
    }
  }
  return { cos, sin };
}

/** Rotates [T, nHeads*hd] in place; `inverse` applies the transpose (the backward of RoPE). */
function rope(v: Float64Array, T: number, nHeads: number, hd: number, a: { cos: Float64Array; sin: Float64Array }, inverse: boolean): void {
  const half = hd / 2;
  const w = nHeads * hd;
  for (let t = 0; t < T; t++) {
    for (let h = 0; h < nHeads; h++) {
      for (let i = 0; i < half; i++) {
        const c = a.cos[t * half + i];
        const s = inverse ? -a.sin[t * half + i] : a.sin[t * half + i];
        const p = t * w + h * hd + i;
        const x1 = v[p];
        const x2 = v[p + half];
        v[p] = x1 * c - x2 * s;
        v[p + half] = x2 * c + x1 * s;
      }
    }
  }
}

const sigmoid = (x: number) => 1 / (1 + Math.exp(-x));

function pairOf(adapter: LoraAdapter | null, l: number, m: LoraModule): LoraPair | undefined {
  return adapter?.pairs.get(loraKey(l, m));
}

/**
 * `logitsFrom`: the first position whose logits (and so logprobs) are wanted; earlier rows of `logits` and
 * `logprobs` are left 0. The LM head is most of a tiny model's forward, and training reads only the response's
 * rows, so the backend starts them at the prompt's last token.
 */
export function cpuForward(cfg: Dims, w: HostQwen2Weights, tokens: number[], adapter: LoraAdapter | null, logitsFrom = 0): CpuForward {
  const { hiddenSize: H, intermediateSize: I, numHeads: nH, numKvHeads: nKV, headDim: hd, vocabSize: V } = cfg;
  const T = tokens.length;
  const qd = nH * hd;
  const kvd = nKV * hd;
  const group = nH / nKV;
  const angles = ropeAngles(T, hd, cfg.ropeTheta);
  let x = new Float64Array(T * H);
  tokens.forEach((id, t) => {
    if (!Number.isInteger(id) || id < 0 || id >= V) throw new Error(`cpuForward: token id ${id} at position ${t} is outside the vocabulary (size ${V})`);
    for (let i = 0; i < H; i++) x[t * H + i] = w.embed[id * H + i];
  });
  const layers: LayerCache[] = [];
  for (let l = 0; l < cfg.numLayers; l++) {
    const L = w.layers[l];
    const { y: n1, rstd: rstd1 } = rmsFwd(x, T, H, L.inputNorm, cfg.rmsNormEps);
    const q = linFwd(n1, T, H, qd, L.q, pairOf(adapter, l, 'q'));
    const k = linFwd(n1, T, H, kvd, L.k, pairOf(adapter, l, 'k'));
    const v = linFwd(n1, T, H, kvd, L.v, pairOf(adapter, l, 'v'));
    rope(q.y, T, nH, hd, angles, false);
    rope(k.y, T, nKV, hd, angles, false);
    const P = new Float64Array(nH * T * T);
    const att = new Float64Array(T * qd);
    const sc = 1 / Math.sqrt(hd);
    for (let h = 0; h < nH; h++) {
      const kh = Math.floor(h / group);
      for (let t = 0; t < T; t++) {
        let m = -Infinity;
        const row = (h * T + t) * T;
        for (let s = 0; s <= t; s++) {
          let d = 0;
          for (let i = 0; i < hd; i++) d += q.y[t * qd + h * hd + i] * k.y[s * kvd + kh * hd + i];
          P[row + s] = d * sc;
          m = Math.max(m, d * sc);
        }
        let z = 0;
        for (let s = 0; s <= t; s++) {
          P[row + s] = Math.exp(P[row + s] - m);
          z += P[row + s];
        }
        for (let s = 0; s <= t; s++) {
          P[row + s] /= z;
          for (let i = 0; i < hd; i++) att[t * qd + h * hd + i] += P[row + s] * v.y[s * kvd + kh * hd + i];
        }
      }
    }
    const o = linFwd(att, T, qd, H, L.o, pairOf(adapter, l, 'o'));
    const h1 = new Float64Array(T * H);
    for (let i = 0; i < T * H; i++) h1[i] = x[i] + o.y[i];
    const { y: n2, rstd: rstd2 } = rmsFwd(h1, T, H, L.postNorm, cfg.rmsNormEps);
    const g = linFwd(n2, T, H, I, L.gate, pairOf(adapter, l, 'gate'));
    const u = linFwd(n2, T, H, I, L.up, pairOf(adapter, l, 'up'));
    const act = new Float64Array(T * I);
    for (let i = 0; i < T * I; i++) act[i] = g.y[i] * sigmoid(g.y[i]) * u.y[i];
    const d = linFwd(act, T, I, H, L.down, pairOf(adapter, l, 'down'));
    const xNext = new Float64Array(T * H);
    for (let i = 0; i < T * H; i++) xNext[i] = h1[i] + d.y[i];
    layers.push({ xIn: x, rstd1, n1, tq: q.t, tk: k.t, tv: v.t, q: q.y, k: k.y, v: v.y, P, att, to: o.t, h: h1, rstd2, n2, tg: g.t, tu: u.t, g: g.y, u: u.y, act, td: d.t });
    x = xNext;
  }
  const { y: nF, rstd: rstdF } = rmsFwd(x, T, H, w.finalNorm, cfg.rmsNormEps);
  const head = cfg.tieWordEmbeddings ? w.embed : w.lmHead;
  if (!head) throw new Error('cpuForward: an untied model needs lmHead');
  const from = Math.min(Math.max(0, Math.floor(logitsFrom)), T);
  const logits = new Float64Array(T * V);
  logits.set(linFwd(nF.subarray(from * H), T - from, H, V, { W: head }, undefined).y, from * V);
  const logprobs = new Float64Array(Math.max(0, T - 1));
  for (let t = from; t + 1 < T; t++) {
    let m = -Infinity;
    for (let j = 0; j < V; j++) m = Math.max(m, logits[t * V + j]);
    let z = 0;
    for (let j = 0; j < V; j++) z += Math.exp(logits[t * V + j] - m);
    logprobs[t] = logits[t * V + tokens[t + 1]] - m - Math.log(z);
  }
  return { tokens, logprobs, logits, layers, xLast: x, rstdF, nF };
}

/**
 * Accumulates into `grads` the gradient of Σ_t dlogp[t] · logprobs[t] with respect to the adapter's A and B
 * (dlogp has length T-1; zeros where the loss does not look).
 */
export function cpuBackward(cfg: Dims, w: HostQwen2Weights, f: CpuForward, dlogp: ArrayLike<number>, adapter: LoraAdapter, grads: LoraGrads): void {
  const { hiddenSize: H, intermediateSize: I, numHeads: nH, numKvHeads: nKV, headDim: hd, vocabSize: V } = cfg;
  const T = f.tokens.length;
  const qd = nH * hd;
  const kvd = nKV * hd;
  const group = nH / nKV;
  const angles = ropeAngles(T, hd, cfg.ropeTheta);
  // d logp_t / d logits_t = onehot(target) - softmax(logits_t)
  const dlogits = new Float64Array(T * V);
  for (let t = 0; t + 1 < T; t++) {
    const g = dlogp[t];
    if (g === 0) continue;
    let m = -Infinity;
    for (let j = 0; j < V; j++) m = Math.max(m, f.logits[t * V + j]);
    let z = 0;
    for (let j = 0; j < V; j++) z += Math.exp(f.logits[t * V + j] - m);
    for (let j = 0; j < V; j++) dlogits[t * V + j] = -g * (Math.exp(f.logits[t * V + j] - m) / z);
    dlogits[t * V + f.tokens[t + 1]] += g;
  }
  const head = cfg.tieWordEmbeddings ? w.embed : w.lmHead!;
  const dnF = new Float64Array(T * H);
  linBwd(dlogits, T, H, V, { W: head }, { x: f.nF }, undefined, undefined, dnF);
  let dx = new Float64Array(T * H);
  rmsBwd(dnF, f.xLast, f.rstdF, T, H, w.finalNorm, dx);
  for (let l = cfg.numLayers - 1; l >= 0; l--) {
    const L = w.layers[l];
    const c = f.layers[l];
    const gr = (m: LoraModule) => grads.get(loraKey(l, m));
    // MLP: x_out = h + down(silu(gate(n2)) * up(n2))
    const dh = Float64Array.from(dx);
    const dact = new Float64Array(T * I);
    linBwd(dx, T, I, H, L.down, { x: c.act, t: c.td }, pairOf(adapter, l, 'down'), gr('down'), dact);
    const dg = new Float64Array(T * I);
    const du = new Float64Array(T * I);
    for (let i = 0; i < T * I; i++) {
      const sg = sigmoid(c.g[i]);
      du[i] = dact[i] * c.g[i] * sg;
      dg[i] = dact[i] * c.u[i] * sg * (1 + c.g[i] * (1 - sg));
    }
    const dn2 = new Float64Array(T * H);
    linBwd(dg, T, H, I, L.gate, { x: c.n2, t: c.tg }, pairOf(adapter, l, 'gate'), gr('gate'), dn2);
    linBwd(du, T, H, I, L.up, { x: c.n2, t: c.tu }, pairOf(adapter, l, 'up'), gr('up'), dn2);
    rmsBwd(dn2, c.h, c.rstd2, T, H, L.postNorm, dh);
    // Attention: h = x + o(attn(q, k, v))
    const dxl = Float64Array.from(dh);
    const datt = new Float64Array(T * qd);
    linBwd(dh, T, qd, H, L.o, { x: c.att, t: c.to }, pairOf(adapter, l, 'o'), gr('o'), datt);
    const dq = new Float64Array(T * qd);
    const dk = new Float64Array(T * kvd);
    const dv = new Float64Array(T * kvd);
    const sc = 1 / Math.sqrt(hd);
    const dP = new Float64Array(T);
    for (let h = 0; h < nH; h++) {
      const kh = Math.floor(h / group);
      for (let t = 0; t < T; t++) {
        const row = (h * T + t) * T;
        let sum = 0;
        for (let s = 0; s <= t; s++) {
          let d = 0;
          for (let i = 0; i < hd; i++) {
            d += datt[t * qd + h * hd + i] * c.v[s * kvd + kh * hd + i];
            dv[s * kvd + kh * hd + i] += c.P[row + s] * datt[t * qd + h * hd + i];
          }
          dP[s] = d;
          sum += c.P[row + s] * d;
        }
        for (let s = 0; s <= t; s++) {
          const dS = c.P[row + s] * (dP[s] - sum) * sc;
          if (dS === 0) continue;
          for (let i = 0; i < hd; i++) {
            dq[t * qd + h * hd + i] += dS * c.k[s * kvd + kh * hd + i];
            dk[s * kvd + kh * hd + i] += dS * c.q[t * qd + h * hd + i];
          }
        }
      }
    }
    rope(dq, T, nH, hd, angles, true);
    rope(dk, T, nKV, hd, angles, true);
    const dn1 = new Float64Array(T * H);
    linBwd(dq, T, H, qd, L.q, { x: c.n1, t: c.tq }, pairOf(adapter, l, 'q'), gr('q'), dn1);
    linBwd(dk, T, H, kvd, L.k, { x: c.n1, t: c.tk }, pairOf(adapter, l, 'k'), gr('k'), dn1);
    linBwd(dv, T, H, kvd, L.v, { x: c.n1, t: c.tv }, pairOf(adapter, l, 'v'), gr('v'), dn1);
    rmsBwd(dn1, c.xIn, c.rstd1, T, H, L.inputNorm, dxl);
    dx = dxl;
  }
}

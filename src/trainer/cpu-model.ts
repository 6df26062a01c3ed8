// Float64 CPU forward and backward of a Qwen2 decoder with LoRA, for tiny models: the gradient of any
// per-token function of the logprobs with respect to the LoRA A/B tensors. It is the trainer's CPU
// backend (toy mode without a usable GPU, unit tests of the training loop) and an analytic reference for
// the GPU backward, itself checked against the PyTorch fixture gradients and finite differences.
// One sequence at a time, no KV cache; every intermediate the backward needs is kept (tiny models only). A
// sequence may also run as a segment after others' keys and values (a KvContext), which is how
// cpu-prefix-tree.ts computes a shared prompt once for every turn that starts with it.
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
  /** Position of tokens[0] (> 0 for a segment run after a shared prefix's context). */
  start: number;
  ctx?: KvContext;
  /** logprobs[t] = log p(tokens[t+1] | tokens[..t]), length T-1. */
  logprobs: Float64Array;
  /** [T, V] */
  logits: Float64Array;
  layers: LayerCache[];
  xLast: Float64Array;
  rstdF: Float64Array;
  nF: Float64Array;
}

// The loops below keep every sum in the order of the plain triple loop (each output's terms added one by one,
// i ascending), so results are bit-identical to it; they gain speed by computing four outputs per pass over an
// input row (one load of x serves four products) and by hoisting every array out of the inner loops.
/**
 * y[yo..yo+out) = W x[xo..xo+inp) (+ b) for W [out, inp]: each output's terms added in order (i ascending), four
 * outputs per pass over x. The training forward runs it per row and the decoder per token, so the two agree to the bit.
 */
export function matVecInto(W: ArrayLike<number>, b: ArrayLike<number> | undefined, x: Float64Array, xo: number, inp: number, y: Float64Array, yo: number, out: number): void {
  const out4 = out - (out % 4);
  let o = 0;
  for (; o < out4; o += 4) {
    let s0 = b ? b[o] : 0;
    let s1 = b ? b[o + 1] : 0;
    let s2 = b ? b[o + 2] : 0;
    let s3 = b ? b[o + 3] : 0;
    const w0 = o * inp;
    const w1 = w0 + inp;
    const w2 = w1 + inp;
    const w3 = w2 + inp;
    for (let i = 0; i < inp; i++) {
      const xi = x[xo + i];
      s0 += W[w0 + i] * xi;
      s1 += W[w1 + i] * xi;
      s2 += W[w2 + i] * xi;
      s3 += W[w3 + i] * xi;
    }
    y[yo + o] = s0;
    y[yo + o + 1] = s1;
    y[yo + o + 2] = s2;
    y[yo + o + 3] = s3;
  }
  for (; o < out; o++) {
    let s = b ? b[o] : 0;
    const wo = o * inp;
    for (let i = 0; i < inp; i++) s += W[wo + i] * x[xo + i];
    y[yo + o] = s;
  }
}

function linFwd(x: Float64Array, T: number, inp: number, out: number, lin: HostLinear, pair: LoraPair | undefined): { y: Float64Array; t?: Float64Array } {
  const y = new Float64Array(T * out);
  for (let r = 0; r < T; r++) matVecInto(lin.W, lin.b, x, r * inp, inp, y, r * out, out);
  if (!pair) return { y };
  const R = pair.r;
  const A = pair.A;
  const B = pair.B;
  const scale = pair.scale;
  const t = new Float64Array(T * R);
  for (let r = 0; r < T; r++) {
    const xo = r * inp;
    const to = r * R;
    for (let j = 0; j < R; j++) {
      let s = 0;
      const ao = j * inp;
      for (let i = 0; i < inp; i++) s += A[ao + i] * x[xo + i];
      t[to + j] = s;
    }
    const yo = r * out;
    for (let o = 0; o < out; o++) {
      let s = 0;
      const bo = o * R;
      for (let j = 0; j < R; j++) s += B[bo + j] * t[to + j];
      y[yo + o] += scale * s;
    }
  }
  return { y, t };
}

/** dx (added into `dx`) and LoRA grads of y = x W^T + b + s (x A^T) B^T, given dy. */
function linBwd(dy: Float64Array, T: number, inp: number, out: number, lin: HostLinear, c: LinCache, pair: LoraPair | undefined, grad: { A: Float64Array; B: Float64Array } | undefined, dx: Float64Array): void {
  const W = lin.W;
  const out4 = out - (out % 4);
  for (let r = 0; r < T; r++) {
    const xo = r * inp;
    const yo = r * out;
    let o = 0;
    for (; o < out4; o += 4) {
      const g0 = dy[yo + o];
      const g1 = dy[yo + o + 1];
      const g2 = dy[yo + o + 2];
      const g3 = dy[yo + o + 3];
      if (g0 !== 0 && g1 !== 0 && g2 !== 0 && g3 !== 0) {
        const w0 = o * inp;
        const w1 = w0 + inp;
        const w2 = w1 + inp;
        const w3 = w2 + inp;
        for (let i = 0; i < inp; i++) {
          let v = dx[xo + i];
          v += g0 * W[w0 + i];
          v += g1 * W[w1 + i];
          v += g2 * W[w2 + i];
          v += g3 * W[w3 + i];
          dx[xo + i] = v;
        }
        continue;
      }
      for (let k = o; k < o + 4; k++) {
        const g = dy[yo + k];
        if (g === 0) continue;
        const wo = k * inp;
        for (let i = 0; i < inp; i++) dx[xo + i] += g * W[wo + i];
      }
    }
    for (; o < out; o++) {
      const g = dy[yo + o];
      if (g === 0) continue;
      const wo = o * inp;
      for (let i = 0; i < inp; i++) dx[xo + i] += g * W[wo + i];
    }
  }
  if (!pair || !c.t) return;
  const R = pair.r;
  const s = pair.scale;
  const A = pair.A;
  const B = pair.B;
  const ct = c.t;
  const cx = c.x;
  const u = new Float64Array(R);
  for (let r = 0; r < T; r++) {
    u.fill(0);
    const yo = r * out;
    const to = r * R;
    for (let o = 0; o < out; o++) {
      const g = dy[yo + o];
      if (g === 0) continue;
      const bo = o * R;
      for (let j = 0; j < R; j++) {
        u[j] += g * B[bo + j];
        if (grad) grad.B[bo + j] += s * g * ct[to + j];
      }
    }
    const xo = r * inp;
    for (let j = 0; j < R; j++) {
      const uj = s * u[j];
      if (uj === 0) continue;
      const ao = j * inp;
      for (let i = 0; i < inp; i++) {
        dx[xo + i] += uj * A[ao + i];
        if (grad) grad.A[ao + i] += uj * cx[xo + i];
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

/** The angles of positions start .. start+T-1. */
function ropeAngles(T: number, hd: number, theta: number, start = 0): { cos: Float64Array; sin: Float64Array } {
  const half = hd / 2;
  const cos = new Float64Array(T * half);
  const sin = new Float64Array(T * half);
  for (let t = 0; t < T; t++) {
    for (let i = 0; i < half; i++) {
      const a = (start + t) * Math.pow(theta, (-2 * i) / hd);
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
 * The keys (after RoPE) and values of the positions before a segment, per layer, [length, numKvHeads·headDim]
 * each: what a segment's attention reads besides its own positions.
 */
export interface KvContext {
  length: number;
  k: Float64Array[];
  v: Float64Array[];
}

/** One decoder layer over T positions starting at `start`, attending to `ctx` (positions 0..start-1) and itself. */
function layerForward(cfg: Dims, L: HostQwen2Weights['layers'][number], x: Float64Array, T: number, start: number, ctxK: Float64Array | undefined, ctxV: Float64Array | undefined, angles: { cos: Float64Array; sin: Float64Array }, adapter: LoraAdapter | null, l: number): { cache: LayerCache; out: Float64Array } {
  const { hiddenSize: H, intermediateSize: I, numHeads: nH, numKvHeads: nKV, headDim: hd } = cfg;
  const qd = nH * hd;
  const kvd = nKV * hd;
  const group = nH / nKV;
  const total = start + T;
  const { y: n1, rstd: rstd1 } = rmsFwd(x, T, H, L.inputNorm, cfg.rmsNormEps);
  const q = linFwd(n1, T, H, qd, L.q, pairOf(adapter, l, 'q'));
  const k = linFwd(n1, T, H, kvd, L.k, pairOf(adapter, l, 'k'));
  const v = linFwd(n1, T, H, kvd, L.v, pairOf(adapter, l, 'v'));
  rope(q.y, T, nH, hd, angles, false);
  rope(k.y, T, nKV, hd, angles, false);
  // P rows are this segment's positions, columns every position up to the last (context first), in order, so a
  // segment's scores, softmax and weighted values are summed exactly as the whole sequence's forward sums them.
  const P = new Float64Array(nH * T * total);
  const att = new Float64Array(T * qd);
  const sc = 1 / Math.sqrt(hd);
  const qy = q.y;
  const ky = k.y;
  const vy = v.y;
  for (let h = 0; h < nH; h++) {
    const ko = Math.floor(h / group) * hd;
    for (let t = 0; t < T; t++) {
      let m = -Infinity;
      const row = (h * T + t) * total;
      const qt = t * qd + h * hd;
      for (let s = 0; s < start; s++) {
        let d = 0;
        const ks = s * kvd + ko;
        for (let i = 0; i < hd; i++) d += qy[qt + i] * ctxK![ks + i];
        const e = d * sc;
        P[row + s] = e;
        m = Math.max(m, e);
      }
      for (let s = 0; s <= t; s++) {
        let d = 0;
        const ks = s * kvd + ko;
        for (let i = 0; i < hd; i++) d += qy[qt + i] * ky[ks + i];
        const e = d * sc;
        P[row + start + s] = e;
        m = Math.max(m, e);
      }
      const end = start + t;
      let z = 0;
      for (let s = 0; s <= end; s++) {
        const e = Math.exp(P[row + s] - m);
        P[row + s] = e;
        z += e;
      }
      for (let s = 0; s < start; s++) {
        const p = P[row + s] / z;
        P[row + s] = p;
        const vs = s * kvd + ko;
        for (let i = 0; i < hd; i++) att[qt + i] += p * ctxV![vs + i];
      }
      for (let s = 0; s <= t; s++) {
        const p = P[row + start + s] / z;
        P[row + start + s] = p;
        const vs = s * kvd + ko;
        for (let i = 0; i < hd; i++) att[qt + i] += p * vy[vs + i];
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
  const out = new Float64Array(T * H);
  for (let i = 0; i < T * H; i++) out[i] = h1[i] + d.y[i];
  return { cache: { xIn: x, rstd1, n1, tq: q.t, tk: k.t, tv: v.t, q: q.y, k: k.y, v: v.y, P, att, to: o.t, h: h1, rstd2, n2, tg: g.t, tu: u.t, g: g.y, u: u.y, act, td: d.t }, out };
}

/**
 * The backward of layerForward: returns the gradient of its input given `dOut`'s. `extra` adds gradients of this
 * segment's keys (after RoPE) and values from later segments that attend to it; `dCtx` receives the gradients of
 * the context's keys and values (both [start, kvd]).
 */
function layerBackward(cfg: Dims, L: HostQwen2Weights['layers'][number], c: LayerCache, T: number, start: number, ctxK: Float64Array | undefined, ctxV: Float64Array | undefined, dOut: Float64Array, angles: { cos: Float64Array; sin: Float64Array }, adapter: LoraAdapter, grads: LoraGrads, l: number, extra?: { k: Float64Array; v: Float64Array }, dCtx?: { k: Float64Array; v: Float64Array }): Float64Array {
  const { hiddenSize: H, intermediateSize: I, numHeads: nH, numKvHeads: nKV, headDim: hd } = cfg;
  const qd = nH * hd;
  const kvd = nKV * hd;
  const group = nH / nKV;
  const total = start + T;
  const gr = (m: LoraModule) => grads.get(loraKey(l, m));
  // MLP: out = h + down(silu(gate(n2)) * up(n2))
  const dh = Float64Array.from(dOut);
  const dact = new Float64Array(T * I);
  linBwd(dOut, T, I, H, L.down, { x: c.act, t: c.td }, pairOf(adapter, l, 'down'), gr('down'), dact);
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
  const dx = Float64Array.from(dh);
  const datt = new Float64Array(T * qd);
  linBwd(dh, T, qd, H, L.o, { x: c.att, t: c.to }, pairOf(adapter, l, 'o'), gr('o'), datt);
  const dq = new Float64Array(T * qd);
  const dk = extra ? Float64Array.from(extra.k) : new Float64Array(T * kvd);
  const dv = extra ? Float64Array.from(extra.v) : new Float64Array(T * kvd);
  const sc = 1 / Math.sqrt(hd);
  const dP = new Float64Array(total);
  const cP = c.P;
  const cq = c.q;
  const ck = c.k;
  const cv = c.v;
  for (let h = 0; h < nH; h++) {
    const ko = Math.floor(h / group) * hd;
    for (let t = 0; t < T; t++) {
      const row = (h * T + t) * total;
      const qt = t * qd + h * hd;
      let sum = 0;
      for (let s = 0; s < start; s++) {
        let d = 0;
        const ks = s * kvd + ko;
        const p = cP[row + s];
        for (let i = 0; i < hd; i++) {
          const da = datt[qt + i];
          d += da * ctxV![ks + i];
          if (dCtx) dCtx.v[ks + i] += p * da;
        }
        dP[s] = d;
        sum += p * d;
      }
      for (let s = 0; s <= t; s++) {
        let d = 0;
        const ks = s * kvd + ko;
        const p = cP[row + start + s];
        for (let i = 0; i < hd; i++) {
          const da = datt[qt + i];
          d += da * cv[ks + i];
          dv[ks + i] += p * da;
        }
        dP[start + s] = d;
        sum += p * d;
      }
      for (let s = 0; s < start; s++) {
        const dS = cP[row + s] * (dP[s] - sum) * sc;
        if (dS === 0) continue;
        const ks = s * kvd + ko;
        for (let i = 0; i < hd; i++) {
          dq[qt + i] += dS * ctxK![ks + i];
          if (dCtx) dCtx.k[ks + i] += dS * cq[qt + i];
        }
      }
      for (let s = 0; s <= t; s++) {
        const dS = cP[row + start + s] * (dP[start + s] - sum) * sc;
        if (dS === 0) continue;
        const ks = s * kvd + ko;
        for (let i = 0; i < hd; i++) {
          dq[qt + i] += dS * ck[ks + i];
          dk[ks + i] += dS * cq[qt + i];
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
  rmsBwd(dn1, c.xIn, c.rstd1, T, H, L.inputNorm, dx);
  return dx;
}

/**
 * `logitsFrom`: the first position whose logits (and so logprobs) are wanted; earlier rows of `logits` and
 * `logprobs` are left 0. The LM head is most of a tiny model's forward, and training reads only the response's
 * rows, so the backend starts them at the prompt's last token.
 * `ctx`: the keys and values of positions before `tokens` (a shared prefix's, cpuContext), so `tokens` are a
 * segment at positions ctx.length..; rows, `logitsFrom` and logprobs are the segment's own. Every value it
 * computes is bit-identical to the whole sequence's forward.
 */
export function cpuForward(cfg: Dims, w: HostQwen2Weights, tokens: number[], adapter: LoraAdapter | null, logitsFrom = 0, ctx?: KvContext): CpuForward {
  const { hiddenSize: H, vocabSize: V } = cfg;
  const T = tokens.length;
  const start = ctx?.length ?? 0;
  const angles = ropeAngles(T, cfg.headDim, cfg.ropeTheta, start);
  let x: Float64Array = new Float64Array(T * H);
  tokens.forEach((id, t) => {
    if (!Number.isInteger(id) || id < 0 || id >= V) throw new Error(`cpuForward: token id ${id} at position ${start + t} is outside the vocabulary (size ${V})`);
    for (let i = 0; i < H; i++) x[t * H + i] = w.embed[id * H + i];
  });
  const layers: LayerCache[] = [];
  for (let l = 0; l < cfg.numLayers; l++) {
    const { cache, out } = layerForward(cfg, w.layers[l], x, T, start, ctx?.k[l], ctx?.v[l], angles, adapter, l);
    layers.push(cache);
    x = out;
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
  return { tokens, start, ...(ctx ? { ctx } : {}), logprobs, logits, layers, xLast: x, rstdF, nF };
}

/** The keys and values a segment after `f` attends to: `f`'s own context followed by `f`'s positions. */
export function cpuContext(f: CpuForward): KvContext {
  const n = f.start + f.tokens.length;
  const join = (before: Float64Array | undefined, own: Float64Array) => {
    if (!before) return own;
    const a = new Float64Array(before.length + own.length);
    a.set(before);
    a.set(own, before.length);
    return a;
  };
  return { length: n, k: f.layers.map((c, l) => join(f.ctx?.k[l], c.k)), v: f.layers.map((c, l) => join(f.ctx?.v[l], c.v)) };
}

/** One row's choices for the entropy bonus over choices: groups of token ids, each group one outcome of the draw. */
export type ChoiceGroups = ReadonlyArray<ArrayLike<number>>;

/**
 * d loss / d(final normed hidden) of a forward's rows, given dlogp (d loss / d logp_t; zeros where the loss does
 * not look) and, with an entropy bonus, dEntropy (d loss / d H_t, H_t the entropy of row t's distribution, or
 * with `choices[t]` set, of that distribution renormalised over those ids and summed within each group: the
 * bonus over choices).
 */
function headBackward(cfg: Dims, w: HostQwen2Weights, f: CpuForward, dlogp: ArrayLike<number>, dEntropy?: ArrayLike<number> | null, choices?: ReadonlyArray<ChoiceGroups | null> | null): Float64Array {
  const { hiddenSize: H, vocabSize: V } = cfg;
  const T = f.tokens.length;
  const dlogits = new Float64Array(T * V);
  const p = new Float64Array(V);
  for (let t = 0; t + 1 < T; t++) {
    const g = dlogp[t];
    const e = dEntropy ? dEntropy[t] : 0;
    if (g === 0 && e === 0) continue;
    let m = -Infinity;
    for (let j = 0; j < V; j++) m = Math.max(m, f.logits[t * V + j]);
    let z = 0;
    for (let j = 0; j < V; j++) z += (p[j] = Math.exp(f.logits[t * V + j] - m));
    const logZ = Math.log(z);
    for (let j = 0; j < V; j++) p[j] /= z;
    // d logp_t / d logits_t = onehot(target) - softmax(logits_t)
    for (let j = 0; j < V; j++) dlogits[t * V + j] = -g * p[j];
    dlogits[t * V + f.tokens[t + 1]] += g;
    const groups = choices?.[t];
    if (e !== 0 && groups) {
      // The same over the choices alone: q_j = p_j / Σ_S p over the ids S of the groups, Q_g = Σ_{j in g} q_j,
      // H = -Σ_g Q_g log Q_g, and dH / d logit_j = -q_j (log Q_g + H) for j in group g, 0 outside S (q does
      // not move with a logit outside S).
      let zS = 0;
      for (const g of groups) for (let i = 0; i < g.length; i++) zS += Math.exp(f.logits[t * V + g[i]] - m);
      const mass = groups.map((g) => {
        let z = 0;
        for (let i = 0; i < g.length; i++) z += Math.exp(f.logits[t * V + g[i]] - m);
        return z / zS;
      });
      let ent = 0;
      for (const Q of mass) if (Q > 0) ent -= Q * Math.log(Q);
      groups.forEach((g, k) => {
        if (!(mass[k] > 0)) return;
        const logQ = Math.log(mass[k]);
        for (let i = 0; i < g.length; i++) dlogits[t * V + g[i]] -= e * (Math.exp(f.logits[t * V + g[i]] - m) / zS) * (logQ + ent);
      });
    } else if (e !== 0) {
      // H = -Σ p log p; dH / d logit_j = -p_j (log p_j + H)
      let ent = 0;
      for (let j = 0; j < V; j++) if (p[j] > 0) ent -= p[j] * (f.logits[t * V + j] - m - logZ);
      for (let j = 0; j < V; j++) if (p[j] > 0) dlogits[t * V + j] -= e * p[j] * (f.logits[t * V + j] - m - logZ + ent);
    }
  }
  const head = cfg.tieWordEmbeddings ? w.embed : w.lmHead!;
  const dnF = new Float64Array(T * H);
  linBwd(dlogits, T, H, V, { W: head }, { x: f.nF }, undefined, undefined, dnF);
  const dx = new Float64Array(T * H);
  rmsBwd(dnF, f.xLast, f.rstdF, T, H, w.finalNorm, dx);
  return dx;
}

/**
 * Accumulates into `grads` the gradient of Σ_t dlogp[t] · logprobs[t] (+ Σ_t dEntropy[t] · H_t, H_t the entropy
 * of row t's next-token distribution, over the groups `choices[t]` alone where given) with respect to the adapter's A and B
 * (both of length T-1; zeros where the loss does not look).
 */
export function cpuBackward(cfg: Dims, w: HostQwen2Weights, f: CpuForward, dlogp: ArrayLike<number>, adapter: LoraAdapter, grads: LoraGrads, dEntropy?: ArrayLike<number> | null, choices?: ReadonlyArray<ChoiceGroups | null> | null): void {
  cpuSegmentBackward(cfg, w, f, dlogp, adapter, grads, undefined, undefined, dEntropy, choices);
}

/**
 * cpuBackward of one segment of a prefix tree (cpu-prefix-tree.ts): `dlogp` (and `dEntropy`, if any) of its own
 * rows (null: no loss on them), `extra[l]` the gradients of its layer-l keys (after RoPE) and values from the segments after it that
 * attend to it; `onContextGrad(l, dk, dv)` receives its context's (both [ctx.length, kvd]).
 */
export function cpuSegmentBackward(cfg: Dims, w: HostQwen2Weights, f: CpuForward, dlogp: ArrayLike<number> | null, adapter: LoraAdapter, grads: LoraGrads, extra?: ReadonlyArray<{ k: Float64Array; v: Float64Array }>, onContextGrad?: (l: number, dk: Float64Array, dv: Float64Array) => void, dEntropy?: ArrayLike<number> | null, choices?: ReadonlyArray<ChoiceGroups | null> | null): void {
  const T = f.tokens.length;
  const kvd = cfg.numKvHeads * cfg.headDim;
  const angles = ropeAngles(T, cfg.headDim, cfg.ropeTheta, f.start);
  let dx = dlogp ? headBackward(cfg, w, f, dlogp, dEntropy, choices) : new Float64Array(T * cfg.hiddenSize);
  for (let l = cfg.numLayers - 1; l >= 0; l--) {
    const dCtx = f.start > 0 && onContextGrad ? { k: new Float64Array(f.start * kvd), v: new Float64Array(f.start * kvd) } : undefined;
    dx = layerBackward(cfg, w.layers[l], f.layers[l], T, f.start, f.ctx?.k[l], f.ctx?.v[l], dx, angles, adapter, grads, l, extra?.[l], dCtx);
    if (dCtx) onContextGrad!(l, dCtx.k, dCtx.v);
  }
}

// Token-by-token float64 decoding of a tiny Qwen2 with LoRA, keeping each layer's keys and values, so a
// CPU planner generates a reply in one forward per token rather than one over the whole sequence per token.
// The arithmetic is cpu-model.ts's cpuForward, one position at a time (cpu-decode.test.ts checks they agree).
import type { Qwen2Config } from '../io/qwen2-config';
import { LORA_MODULES, loraKey, type LoraAdapter, type LoraModule, type LoraPair } from '../io/peft';
import { matVecInto, type HostLinear, type HostQwen2Weights } from './cpu-model';

type Dims = Pick<Qwen2Config, 'hiddenSize' | 'intermediateSize' | 'numHeads' | 'numKvHeads' | 'headDim' | 'numLayers' | 'vocabSize' | 'ropeTheta' | 'rmsNormEps' | 'tieWordEmbeddings'>;

export class CpuDecoder {
  /** Positions decoded so far. */
  length = 0;
  private keys: Float64Array[];
  private values: Float64Array[];
  private capacity = 64;
  /** The adapter's pair of each layer's module, looked up once (a key string and map lookup per call cost more than the LoRA's arithmetic). */
  private readonly pairs: Array<Partial<Record<LoraModule, LoraPair>>>;

  constructor(
    readonly cfg: Dims,
    readonly weights: HostQwen2Weights,
    readonly adapter: LoraAdapter | null,
  ) {
    const kvd = cfg.numKvHeads * cfg.headDim;
    this.pairs = Array.from({ length: cfg.numLayers }, (_, l) => Object.fromEntries(LORA_MODULES.flatMap((m) => {
      const p = adapter?.pairs.get(loraKey(l, m));
      return p ? [[m, p]] : [];
    })));
    this.keys = Array.from({ length: cfg.numLayers }, () => new Float64Array(this.capacity * kvd));
    this.values = Array.from({ length: cfg.numLayers }, () => new Float64Array(this.capacity * kvd));
  }

  /** A decoder holding this one's first `length` positions (its keys and values copied), to go on from there. */
  fork(length = this.length): CpuDecoder {
    if (!Number.isInteger(length) || length < 0 || length > this.length) throw new Error(`CpuDecoder.fork: length ${length} is not within the ${this.length} positions decoded`);
    const d = new CpuDecoder(this.cfg, this.weights, this.adapter);
    d.grow(Math.max(1, length));
    const n = length * this.cfg.numKvHeads * this.cfg.headDim;
    this.keys.forEach((k, l) => d.keys[l].set(k.subarray(0, n)));
    this.values.forEach((v, l) => d.values[l].set(v.subarray(0, n)));
    d.length = length;
    return d;
  }

  /** Feeds each token in turn; returns the logits after the last (the LM head runs for it alone). */
  feed(tokens: readonly number[]): Float64Array {
    if (!tokens.length) throw new Error('CpuDecoder.feed: no tokens');
    for (let i = 0; i + 1 < tokens.length; i++) this.step(tokens[i], false);
    return this.step(tokens[tokens.length - 1]);
  }

  /** Appends one token and returns the logits of the next (without `logits`, an empty array: the LM head is skipped). */
  step(token: number, logits = true): Float64Array {
    const { hiddenSize: H, intermediateSize: I, numHeads: nH, numKvHeads: nKV, headDim: hd, vocabSize: V } = this.cfg;
    if (!Number.isInteger(token) || token < 0 || token >= V) throw new Error(`CpuDecoder: token id ${token} at position ${this.length} is outside the vocabulary (size ${V})`);
    const pos = this.length;
    this.grow(pos + 1);
    const qd = nH * hd;
    const kvd = nKV * hd;
    const group = nH / nKV;
    const w = this.weights;
    const x = new Float64Array(H);
    for (let i = 0; i < H; i++) x[i] = w.embed[token * H + i];
    const cos = new Float64Array(hd / 2);
    const sin = new Float64Array(hd / 2);
    for (let i = 0; i < hd / 2; i++) {
      const a = pos * Math.pow(this.cfg.ropeTheta, (-2 * i) / hd);
      cos[i] = Math.cos(a);
      sin[i] = Math.sin(a);
    }
    for (let l = 0; l < this.cfg.numLayers; l++) {
      const L = w.layers[l];
      const n1 = rms(x, L.inputNorm, this.cfg.rmsNormEps);
      const q = this.lin(n1, L.q, qd, l, 'q');
      const k = this.lin(n1, L.k, kvd, l, 'k');
      const v = this.lin(n1, L.v, kvd, l, 'v');
      rope(q, nH, hd, cos, sin);
      rope(k, nKV, hd, cos, sin);
      this.keys[l].set(k, pos * kvd);
      this.values[l].set(v, pos * kvd);
      const K = this.keys[l];
      const Vc = this.values[l];
      const att = new Float64Array(qd);
      const sc = 1 / Math.sqrt(hd);
      const p = new Float64Array(pos + 1);
      for (let h = 0; h < nH; h++) {
        const ko = Math.floor(h / group) * hd;
        const qo = h * hd;
        let m = -Infinity;
        for (let s = 0; s <= pos; s++) {
          let d = 0;
          const ks = s * kvd + ko;
          for (let i = 0; i < hd; i++) d += q[qo + i] * K[ks + i];
          const e = d * sc;
          p[s] = e;
          if (e > m) m = e;
        }
        let z = 0;
        for (let s = 0; s <= pos; s++) z += p[s] = Math.exp(p[s] - m);
        for (let s = 0; s <= pos; s++) {
          const ps = p[s] / z;
          const vs = s * kvd + ko;
          for (let i = 0; i < hd; i++) att[qo + i] += ps * Vc[vs + i];
        }
      }
      const o = this.lin(att, L.o, H, l, 'o');
      for (let i = 0; i < H; i++) x[i] += o[i];
      const n2 = rms(x, L.postNorm, this.cfg.rmsNormEps);
      const g = this.lin(n2, L.gate, I, l, 'gate');
      const u = this.lin(n2, L.up, I, l, 'up');
      for (let i = 0; i < I; i++) g[i] = (g[i] / (1 + Math.exp(-g[i]))) * u[i];
      const d = this.lin(g, L.down, H, l, 'down');
      for (let i = 0; i < H; i++) x[i] += d[i];
    }
    this.length = pos + 1;
    if (!logits) return new Float64Array(0);
    const nF = rms(x, w.finalNorm, this.cfg.rmsNormEps);
    const head = this.cfg.tieWordEmbeddings ? w.embed : w.lmHead;
    if (!head) throw new Error('CpuDecoder: an untied model needs lmHead');
    return matVec(head, undefined, nF, V);
  }

  private lin(x: Float64Array, lin: HostLinear, out: number, layer: number, module: LoraModule): Float64Array {
    const inp = x.length;
    const y = matVec(lin.W, lin.b, x, out);
    const pair = this.pairs[layer][module];
    if (pair) {
      const R = pair.r;
      const A = pair.A;
      const B = pair.B;
      const t = new Float64Array(R);
      for (let j = 0; j < R; j++) {
        let s = 0;
        const ao = j * inp;
        for (let i = 0; i < inp; i++) s += A[ao + i] * x[i];
        t[j] = s;
      }
      for (let o = 0; o < out; o++) {
        let s = 0;
        const bo = o * R;
        for (let j = 0; j < R; j++) s += B[bo + j] * t[j];
        y[o] += pair.scale * s;
      }
    }
    return y;
  }

  private grow(n: number): void {
    if (n <= this.capacity) return;
    while (this.capacity < n) this.capacity *= 2;
    const kvd = this.cfg.numKvHeads * this.cfg.headDim;
    const widen = (a: Float64Array) => {
      const b = new Float64Array(this.capacity * kvd);
      b.set(a);
      return b;
    };
    this.keys = this.keys.map(widen);
    this.values = this.values.map(widen);
  }
}

function matVec(W: ArrayLike<number>, b: ArrayLike<number> | undefined, x: Float64Array, out: number): Float64Array {
  const y = new Float64Array(out);
  matVecInto(W, b, x, 0, x.length, y, 0, out);
  return y;
}

function rms(x: Float64Array, w: ArrayLike<number>, eps: number): Float64Array {
  let ss = 0;
  for (let i = 0; i < x.length; i++) ss += x[i] * x[i];
  const r = 1 / Math.sqrt(ss / x.length + eps);
  const y = new Float64Array(x.length);
  for (let i = 0; i < x.length; i++) y[i] = x[i] * r * w[i];
  return y;
}

/** Rotate-half RoPE of one position, in place. */
function rope(v: Float64Array, heads: number, hd: number, cos: Float64Array, sin: Float64Array): void {
  const half = hd / 2;
  for (let h = 0; h < heads; h++) {
    for (let i = 0; i < half; i++) {
      const p = h * hd + i;
      const x1 = v[p];
      const x2 = v[p + half];
      v[p] = x1 * cos[i] - x2 * sin[i];
      v[p + half] = x2 * cos[i] + x1 * sin[i];
    }
  }
}

// A random Qwen2 model as an MLC q4 build would store it (fused c_attn and gate_up_proj, quantized
// embedding), and the float64 reference weights that build means. Shared by the runtime and trainer tests.
import type { Qwen2RefConfig, Qwen2RefWeights } from './qwen2-ref';
import { toQwen2Config } from './random-qwen2';
import { dequantizeQ4, quantizeQ4, type Q4ScaleDtype } from '../../src/kernels/q4';
import { f16BitsToF32, toF16Array } from '../../src/util/half';
import { q4SourceFromRecords } from '../../src/engine/q4-source';
import type { Q4WeightSource } from '../../src/model/weights';

export type Rec = Uint32Array | Uint16Array | Float32Array;

/**
 * The model as an MLC build would store it, and the reference weights that build means: matrices
 * dequantized exactly in float64, vectors as stored (f16-rounded for q4f16_1).
 */
export function quantizeModel(c: Qwen2RefConfig, w: Qwen2RefWeights, scale: Q4ScaleDtype): { source: Q4WeightSource; ref: Qwen2RefWeights } {
  const H = c.hiddenSize;
  const qd = c.numHeads * c.headDim;
  const kvd = c.numKvHeads * c.headDim;
  const I = c.intermediateSize;
  const rec = new Map<string, Rec>();
  const cat = (...parts: ArrayLike<number>[]) => Float64Array.from(parts.flatMap((p) => Array.from(p)));
  const matrix = (name: string, W: ArrayLike<number>, out: number, inDim: number, split: number[] = [out]) => {
    const m = quantizeQ4(W, out, inDim, scale);
    rec.set(`${name}.q_weight`, m.qWeight);
    rec.set(`${name}.q_scale`, m.qScale);
    let at = 0;
    return split.map((rows) => Float32Array.from(dequantizeQ4(m, (at += rows) - rows, rows)));
  };
  const vector = (name: string, v: ArrayLike<number>, split: number[] = [v.length]) => {
    const bits = toF16Array(v);
    const stored = scale === 'f16' ? Float32Array.from(bits, (b) => f16BitsToF32(b)) : Float32Array.from(v);
    rec.set(name, scale === 'f16' ? bits : stored);
    let at = 0;
    return split.map((n) => stored.slice((at += n) - n, at));
  };
  const [embed] = matrix('model.embed_tokens', w.embed, c.vocabSize, H);
  const layers = w.layers.map((L, l) => {
    const p = `model.layers.${l}`;
    const [q, k, v] = matrix(`${p}.self_attn.c_attn`, cat(L.q.W, L.k.W, L.v.W), qd + 2 * kvd, H, [qd, kvd, kvd]);
    const [qb, kb, vb] = vector(`${p}.self_attn.c_attn.bias`, cat(L.q.b!, L.k.b!, L.v.b!), [qd, kvd, kvd]);
    const [gate, up] = matrix(`${p}.mlp.gate_up_proj`, cat(L.gate.W, L.up.W), 2 * I, H, [I, I]);
    return {
      inputNorm: vector(`${p}.input_layernorm.weight`, L.inputNorm)[0],
      postNorm: vector(`${p}.post_attention_layernorm.weight`, L.postNorm)[0],
      q: { W: q, b: qb },
      k: { W: k, b: kb },
      v: { W: v, b: vb },
      o: { W: matrix(`${p}.self_attn.o_proj`, L.o.W, H, qd)[0] },
      gate: { W: gate },
      up: { W: up },
      down: { W: matrix(`${p}.mlp.down_proj`, L.down.W, H, I)[0] },
    };
  });
  const finalNorm = vector('model.norm.weight', w.finalNorm)[0];
  const lmHead = c.tieWordEmbeddings ? undefined : matrix('lm_head', w.lmHead!, c.vocabSize, H)[0];
  const source = q4SourceFromRecords(toQwen2Config(c), scale === 'f16' ? 'q4f16_1' : 'q4f32_1', rec);
  return { source, ref: { embed, layers, finalNorm, lmHead } };
}

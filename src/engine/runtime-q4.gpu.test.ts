// The runtime on random in-memory 4-bit models (MLC layout: fused c_attn and gate_up_proj, quantized
// embedding) against the float64 reference over the exactly dequantized weights, on every weight path
// the adapter offers; and the GPU memory a 4-bit model takes against the same shapes in f16. Runs in
// Node/Dawn and in Chromium.
import { describe, expect, it } from 'vitest';
import { alsoInBrowser, gpuFor, weightPaths } from '../../tests/support/gpu';
import { maxAbsDiff } from '../../tests/support/compare';
import { qwen2RefForward, qwen2RefGreedy, type Qwen2RefAdapter, type Qwen2RefConfig, type Qwen2RefWeights } from '../../tests/support/qwen2-ref';
import { randomAdapter, randomQwen2, randomTokens, toLoraAdapter, toQwen2Config, type RandomQwen2Options } from '../../tests/support/random-qwen2';
import type { Q4ScaleDtype } from '../kernels/q4';
import { quantizeModel, type Rec } from '../../tests/support/q4-model';
import { f16BitsToF32, toF16Array } from '../util/half';
import { Rng } from '../util/rng';
import { expectedQwen2Tensors, type Qwen2Config } from '../io/qwen2-config';
import { q4SourceFromRecords } from './q4-source';
import { Qwen2Runtime } from './runtime';
import { isQ4, type TensorSource, type Q4WeightSource } from '../model/weights';

const SHAPES: Array<[string, RandomQwen2Options, Q4ScaleDtype, number | undefined]> = [
  ['q4f16_1, 4 heads / 2 KV, tied', { numHeads: 4, numKvHeads: 2, headDim: 16, intermediateSize: 96, vocabSize: 70, tie: true }, 'f16', undefined],
  // 16-row embedding / head chunks: the q4 embedding and LM head over several vocabulary windows.
  ['q4f32_1, 2 heads / 1 KV, untied, chunked vocabulary', { numHeads: 2, numKvHeads: 1, headDim: 16, intermediateSize: 64, vocabSize: 45, numLayers: 1, tie: false }, 'f32', 16 * 16],
];

const refLogprobs = (c: Qwen2RefConfig, w: Qwen2RefWeights, seqs: number[][], a?: Qwen2RefAdapter) => seqs.map((s) => qwen2RefForward(c, w, s, a).logprobs);

describe('Qwen2 runtime on random 4-bit models vs the float64 reference', async () => {
  for (const path of await weightPaths()) {
    // f32 scales read no f16, so the second shape's WGSL is the same on Dawn's two paths and in Chromium: the
    // browser runs the first (17 of its 42 s there were the second's).
    for (const [si, [name, shape, scale, maxChunkBytes]] of alsoInBrowser([...SHAPES.entries()], ([, [, , scale]]) => scale === 'f16')) {
      it(`${path}: ${name}: scoring with and without the adapter, greedy, KV cache = recompute`, async () => {
        const { config, weights } = randomQwen2(500 + si, shape);
        const { source, ref } = quantizeModel(config, weights, scale);
        const adapter = randomAdapter(600 + si, config, 4, 8);
        const rt = await Qwen2Runtime.create(await gpuFor(path), toQwen2Config(config), source, { maxContext: 64, maxBatchRows: 32, logitsRows: 8, maxChunkBytes });
        try {
          expect(isQ4(rt.weights.layers[0].up)).toBe(true);
          if (maxChunkBytes) expect(rt.weights.head.length).toBeGreaterThan(1);
          const rng = new Rng(700 + si);
          const seqs = [9, 1, 14, 5].map((n) => randomTokens(rng, n, config.vocabSize));
          const base = await rt.score(seqs);
          refLogprobs(config, ref, seqs).forEach((want, i) => expect(maxAbsDiff(base[i], want)).toBeLessThan(2e-3));
          await rt.addAdapter('a', toLoraAdapter(config, adapter));
          rt.setActiveAdapter('a');
          const ad = await rt.score(seqs);
          refLogprobs(config, ref, seqs, adapter).forEach((want, i) => expect(maxAbsDiff(ad[i], want)).toBeLessThan(2e-3));
          const prompt = seqs[0];
          const out = await rt.generate(prompt, { maxNewTokens: 6, temperature: 0 });
          expect(out.tokens).toEqual(qwen2RefGreedy(config, ref, prompt, 6, adapter));
          const [again] = await rt.score([[...prompt, ...out.tokens]]);
          expect(maxAbsDiff(out.logprobs, again.slice(prompt.length - 1))).toBeLessThan(1e-4);
        } finally {
          rt.destroy();
        }
      });
    }
  }

  it('a 4-bit build with a wrong dtype or size fails naming the tensor', async () => {
    const { config, weights } = randomQwen2(900, SHAPES[0][1]);
    const ctx = await gpuFor('packed');
    const wrongScale = quantizeModel(config, weights, 'f32').source;
    // f32 scales under a q4f16_1 label.
    const mislabelled = { ...wrongScale, quantization: 'q4f16_1' };
    await expect(Qwen2Runtime.create(ctx, toQwen2Config(config), mislabelled)).rejects.toThrow("'model.embed_tokens.q_scale' must be f16 [70, 2], got Float32Array");
    const good = quantizeModel(config, weights, 'f16').source;
    const short = { ...good, raw: (n: string) => (n === 'model.layers.1.mlp.down_proj.q_weight' ? new Uint32Array(8) : good.raw(n)) };
    await expect(Qwen2Runtime.create(ctx, toQwen2Config(config), short)).rejects.toThrow("'model.layers.1.mlp.down_proj.q_weight' must be uint32 [64, 12]");
    await expect(Qwen2Runtime.create(ctx, toQwen2Config(config), { ...good, quantization: 'q4f16_2' })).rejects.toThrow("quantization 'q4f16_2' is not supported");
  });

  it('a Qwen2.5-0.5B-shaped model takes about 4x less GPU memory in 4-bit than in f16', async () => {
    // The 0.5B model's layer shapes with 2 layers and a small vocabulary; values do not matter here.
    const config: Qwen2Config = {
      hiddenSize: 896, intermediateSize: 4864, numHeads: 14, numKvHeads: 2, headDim: 64, numLayers: 2, vocabSize: 2048,
      ropeTheta: 1e6, rmsNormEps: 1e-6, tieWordEmbeddings: true, maxPositionEmbeddings: 4096, bosTokenId: null, eosTokenIds: [], torchDtype: 'bfloat16',
    };
    const H = 896;
    const qkv = (14 + 2 * 2) * 64;
    const I = 4864;
    const rec = new Map<string, Rec>();
    let matrixElems = 0;
    let vectorElems = 0;
    const matrix = (name: string, out: number, inDim: number) => {
      rec.set(`${name}.q_weight`, new Uint32Array((out * inDim) / 8));
      rec.set(`${name}.q_scale`, new Uint16Array((out * inDim) / 32));
      matrixElems += out * inDim;
    };
    const vector = (name: string, n: number) => {
      rec.set(name, new Uint16Array(n));
      vectorElems += n;
    };
    matrix('model.embed_tokens', config.vocabSize, H);
    for (let l = 0; l < 2; l++) {
      const p = `model.layers.${l}`;
      vector(`${p}.input_layernorm.weight`, H);
      vector(`${p}.post_attention_layernorm.weight`, H);
      matrix(`${p}.self_attn.c_attn`, qkv, H);
      vector(`${p}.self_attn.c_attn.bias`, qkv);
      matrix(`${p}.self_attn.o_proj`, H, 14 * 64);
      matrix(`${p}.mlp.gate_up_proj`, 2 * I, H);
      matrix(`${p}.mlp.down_proj`, H, I);
    }
    vector('model.norm.weight', H);
    const f16 = new Map<string, TensorSource>();
    for (const [name, shape] of expectedQwen2Tensors(config)) {
      const n = shape.reduce((a, b) => a * b, 1);
      f16.set(name, { name, shape, f16: () => new Uint16Array(n), f32: () => new Float32Array(n) });
    }
    const ctx = await gpuFor('packed');
    const q4rt = await Qwen2Runtime.create(ctx, config, q4SourceFromRecords(config, 'q4f16_1', rec), { maxContext: 16 });
    const q4Bytes = q4rt.memory().weights;
    q4rt.destroy();
    const f16rt = await Qwen2Runtime.create(ctx, config, f16, { maxContext: 16 });
    const f16Bytes = f16rt.memory().weights;
    f16rt.destroy();
    // 4-bit: half a byte per weight plus an f16 scale per 32; f16: 2 bytes; norms and biases f32 in both.
    expect(q4Bytes).toBe((matrixElems * 9) / 16 + vectorElems * 4);
    expect(f16Bytes).toBe(matrixElems * 2 + vectorElems * 4);
    expect(f16Bytes / q4Bytes).toBeGreaterThan(3.5);
    expect(f16Bytes / q4Bytes).toBeLessThan(4);
  });
});

// The runtime on random in-memory Qwen2 models (head counts, GQA ratios, tied and untied heads, odd
// sizes) against the float64 CPU reference, on every f16 weight path the adapter offers. Runs in
// Node/Dawn and in Chromium.
import { describe, expect, it } from 'vitest';
import { gpuFor, weightPaths } from '../../tests/support/gpu';
import { maxAbsDiff } from '../../tests/support/compare';
import { qwen2RefForward, type Qwen2RefAdapter, type Qwen2RefConfig, type Qwen2RefWeights } from '../../tests/support/qwen2-ref';
import { randomAdapter, randomQwen2, randomTokens, toLoraAdapter, toQwen2Config, toWeightSource, type RandomQwen2Options } from '../../tests/support/random-qwen2';
import { Rng } from '../util/rng';
import { Qwen2Runtime } from './runtime';

const SHAPES: Array<[string, RandomQwen2Options]> = [
  ['4 heads / 2 KV, tied', { numHeads: 4, numKvHeads: 2, headDim: 8, intermediateSize: 40, vocabSize: 50, tie: true }],
  ['4 heads / 1 KV (MQA), untied, hidden != heads*hd', { hiddenSize: 40, numHeads: 4, numKvHeads: 1, headDim: 16, intermediateSize: 37, vocabSize: 61, tie: false }],
  ['3 heads / 3 KV (MHA), odd sizes, 3 layers', { numHeads: 3, numKvHeads: 3, headDim: 6, intermediateSize: 29, vocabSize: 47, numLayers: 3, tie: true }],
  ['6 heads / 2 KV, untied', { numHeads: 6, numKvHeads: 2, headDim: 4, intermediateSize: 24, vocabSize: 33, numLayers: 1, tie: false }],
];

async function makeRuntime(path: 'native' | 'packed', config: Qwen2RefConfig, weights: Qwen2RefWeights, opts = {}) {
  const ctx = await gpuFor(path);
  return Qwen2Runtime.create(ctx, toQwen2Config(config), toWeightSource(config, weights), { maxContext: 64, maxBatchRows: 32, logitsRows: 8, ...opts });
}

function refLogprobs(c: Qwen2RefConfig, w: Qwen2RefWeights, seqs: number[][], a?: Qwen2RefAdapter): number[][] {
  return seqs.map((s) => qwen2RefForward(c, w, s, a).logprobs);
}

describe('Qwen2 runtime vs the float64 reference on random models', async () => {
  const paths = await weightPaths();
  for (const path of paths) {
    for (const [si, [name, shape]] of SHAPES.entries()) {
      it(`${path}: ${name}: packed scoring and last logits, base and adapter`, async () => {
        const { config, weights } = randomQwen2(100 + si, shape);
        const adapter = randomAdapter(200 + si, config, 3, 6);
        const rt = await makeRuntime(path, config, weights);
        try {
          const rng = new Rng(300 + si);
          // Odd lengths, a one-token sequence (no targets), and more rows than one batch holds.
          const seqs = [7, 1, 12, 5, 19, 3].map((n) => randomTokens(rng, n, config.vocabSize));
          const base = await rt.score(seqs);
          const wantBase = refLogprobs(config, weights, seqs);
          seqs.forEach((s, i) => {
            expect(base[i].length).toBe(Math.max(0, s.length - 1));
            expect(maxAbsDiff(base[i], wantBase[i])).toBeLessThan(2e-3);
          });
          await rt.addAdapter('a', toLoraAdapter(config, adapter));
          rt.setActiveAdapter('a');
          const ad = await rt.score(seqs);
          const wantAd = refLogprobs(config, weights, seqs, adapter);
          seqs.forEach((_, i) => expect(maxAbsDiff(ad[i], wantAd[i])).toBeLessThan(2e-3));
          // The adapter must matter, or the comparison above says nothing about LoRA.
          expect(Math.max(...seqs.map((_, i) => maxAbsDiff(wantAd[i], wantBase[i])))).toBeGreaterThan(1e-2);
          const last = await rt.logitsLast(seqs[4]);
          const wantLast = qwen2RefForward(config, weights, seqs[4], adapter).logits[seqs[4].length - 1];
          expect(maxAbsDiff(last, wantLast)).toBeLessThan(2e-3);
        } finally {
          rt.destroy();
        }
      });
    }

    it(`${path}: embedding and LM head split into chunks give the same result`, async () => {
      const { config, weights } = randomQwen2(21, SHAPES[1][1]);
      // 61 rows x 40 cols x 2 bytes: 400-byte chunks hold 4 rows, so 16 chunks, the last one short.
      const rt = await makeRuntime(path, config, weights, { maxChunkBytes: 400 });
      try {
        expect(rt.weights.embed.length).toBe(16);
        expect(rt.weights.head.length).toBe(16);
        const seqs = [[0, 60, 3, 59, 4, 58, 33], [12, 1]];
        const got = await rt.score(seqs);
        const want = refLogprobs(config, weights, seqs);
        seqs.forEach((_, i) => expect(maxAbsDiff(got[i], want[i])).toBeLessThan(2e-3));
      } finally {
        rt.destroy();
      }
    });

    it(`${path}: score from a position gives the same entries there and NaN before`, async () => {
      const { config, weights } = randomQwen2(21, SHAPES[1][1]);
      const rt = await makeRuntime(path, config, weights);
      try {
        // Three sequences in one packed batch: the spans start mid-sequence, at 0, and past the last entry.
        const seqs = [[0, 60, 3, 59, 4, 58, 33], [12, 1, 7], [5, 6]];
        const from = [4, 0, 9];
        const all = await rt.score(seqs);
        const part = await rt.score(seqs, { from });
        seqs.forEach((s, i) => {
          expect(part[i].length).toBe(s.length - 1);
          const f = Math.min(from[i], s.length - 1);
          expect(part[i].slice(0, f).every(Number.isNaN)).toBe(true);
          // Chunks of other row counts pick other LM-head tilings: equal up to f32 rounding, not to the bit.
          expect(maxAbsDiff(part[i].slice(f), all[i].slice(f))).toBeLessThan(1e-5);
        });
        await expect(rt.score(seqs, { from: [1, 2] })).rejects.toThrow(/from has 2 entries for 3 sequences/);
        await expect(rt.score(seqs, { from: [1, -1, 0] })).rejects.toThrow(/from\[1\] must be a non-negative integer/);
      } finally {
        rt.destroy();
      }
    });

    it(`${path}: KV-cache decode gives the logits of recomputing the whole sequence`, async () => {
      const { config, weights } = randomQwen2(7, SHAPES[1][1]);
      const adapter = randomAdapter(8, config);
      const rt = await makeRuntime(path, config, weights);
      try {
        await rt.addAdapter('a', toLoraAdapter(config, adapter));
        rt.setActiveAdapter('a');
        const prompt = randomTokens(new Rng(9), 5, config.vocabSize);
        const stepLogits: Float32Array[] = [];
        const out = await rt.generate(prompt, { maxNewTokens: 7, temperature: 1, seed: 42, onLogits: (l) => void stepLogits.push(l.slice()) });
        expect(out.tokens.length).toBe(7);
        expect(stepLogits.length).toBe(7);
        for (let i = 0; i < out.tokens.length; i++) {
          const seq = [...prompt, ...out.tokens.slice(0, i)];
          expect(maxAbsDiff(stepLogits[i], await rt.logitsLast(seq))).toBeLessThan(1e-3);
          expect(maxAbsDiff(stepLogits[i], qwen2RefForward(config, weights, seq, adapter).logits[seq.length - 1])).toBeLessThan(2e-3);
        }
        // Same seed, same tokens; the reported logprobs are the model's (temperature 1) for those tokens.
        const again = await rt.generate(prompt, { maxNewTokens: 7, temperature: 1, seed: 42 });
        expect(again.tokens).toEqual(out.tokens);
        const scored = await rt.score([[...prompt, ...out.tokens]]);
        expect(maxAbsDiff(out.logprobs, scored[0].slice(prompt.length - 1))).toBeLessThan(2e-3);
      } finally {
        rt.destroy();
      }
    });

    it(`${path}: a prompt longer than one batch is prefilled in chunks through the KV cache`, async () => {
      const { config, weights } = randomQwen2(41, SHAPES[0][1]);
      const rt = await makeRuntime(path, config, weights, { maxBatchRows: 8 });
      try {
        const prompt = randomTokens(new Rng(42), 21, config.vocabSize);
        const seen: Float32Array[] = [];
        const out = await rt.generate(prompt, { maxNewTokens: 3, temperature: 0, onLogits: (l) => void seen.push(l.slice()) });
        for (let i = 0; i < 3; i++) {
          const seq = [...prompt, ...out.tokens.slice(0, i)];
          expect(maxAbsDiff(seen[i], qwen2RefForward(config, weights, seq).logits[seq.length - 1])).toBeLessThan(2e-3);
        }
        // The activation plan never grew past one chunk for generation.
        expect(rt.batchRows).toBe(8);
      } finally {
        rt.destroy();
      }
    });

    it(`${path}: past 64 rows a prefill is padded to a multiple of 64 rows, not to a power of two`, async () => {
      const { config, weights } = randomQwen2(43, SHAPES[0][1]);
      const rt = await makeRuntime(path, config, weights, { maxContext: 256, maxBatchRows: 512 });
      try {
        const prompt = randomTokens(new Rng(44), 130, config.vocabSize);
        const seen: Float32Array[] = [];
        await rt.generate(prompt, { maxNewTokens: 1, temperature: 0, onLogits: (l) => void seen.push(l.slice()) });
        expect(rt.batchRows).toBe(192);
        expect(maxAbsDiff(seen[0], qwen2RefForward(config, weights, prompt).logits[prompt.length - 1])).toBeLessThan(2e-3);
      } finally {
        rt.destroy();
      }
    });

    it(`${path}: switches between two adapters and the base model without reloading`, async () => {
      const { config, weights } = randomQwen2(11, SHAPES[0][1]);
      const a = randomAdapter(12, config, 4, 8);
      // The second adapter has a larger rank and touches only attention, so plans must grow.
      const b = randomAdapter(13, config, 6, 3, ['q', 'v', 'o']);
      const rt = await makeRuntime(path, config, weights);
      try {
        const seqs = [randomTokens(new Rng(14), 9, config.vocabSize), randomTokens(new Rng(15), 4, config.vocabSize)];
        await rt.addAdapter('a', toLoraAdapter(config, a));
        await rt.addAdapter('b', toLoraAdapter(config, b));
        const weightBytes = rt.memory().weights;
        for (const [id, ref] of [[null, undefined], ['a', a], ['b', b], ['a', a], [null, undefined], ['b', b]] as const) {
          rt.setActiveAdapter(id);
          const got = await rt.score(seqs);
          const want = refLogprobs(config, weights, seqs, ref);
          seqs.forEach((_, i) => expect(maxAbsDiff(got[i], want[i])).toBeLessThan(2e-3));
          expect(rt.activeAdapterId).toBe(id);
        }
        expect(rt.memory().weights).toBe(weightBytes);
        expect(() => rt.setActiveAdapter('missing')).toThrow(/no adapter 'missing'.*a, b/);
      } finally {
        rt.destroy();
      }
    });
  }
});

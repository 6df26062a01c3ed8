// Decoding with the token drawn on the GPU (steps encoded ahead of the read-back) must give exactly what
// the in-step path gives (the CPU draws from read-back candidates; an onLogits callback forces it): same
// tokens, logprobs, stops and KV-cache state, including the tokens the GPU leaves to the CPU.
import { describe, expect, it } from 'vitest';
import { gpuFor, weightPaths } from '../../tests/support/gpu';
import { maxAbsDiff } from '../../tests/support/compare';
import { randomAdapter, randomQwen2, randomTokens, toLoraAdapter, toQwen2Config, toWeightSource } from '../../tests/support/random-qwen2';
import { Rng } from '../util/rng';
import { Qwen2Runtime, type GenerateTokensOptions } from './runtime';

describe('decode ahead: GPU-drawn tokens = CPU-drawn tokens', async () => {
  const paths = await weightPaths();
  // A vocabulary larger than the 64 GPU candidates, so pure temperature sampling at a high temperature
  // often falls past their mass (the GPU's tail draw decides it), and a wide top-p nucleus reaches past
  // them (the CPU must redraw).
  const { config, weights } = randomQwen2(61, { numHeads: 4, numKvHeads: 2, headDim: 8, intermediateSize: 40, vocabSize: 300, tie: true });
  const adapter = randomAdapter(62, config, 4, 8);
  const prompt = randomTokens(new Rng(63), 6, config.vocabSize);
  const cases: Array<[string, GenerateTokensOptions]> = [
    ['greedy', { temperature: 0 }],
    ['T=1', { temperature: 1, seed: 5 }],
    ['T=4 (often past the candidates)', { temperature: 4, seed: 6 }],
    ['T=20 (nearly uniform: mostly past the candidates)', { temperature: 20, seed: 10 }],
    ['T=20 top-p 0.95 (a nucleus wider than the candidates)', { temperature: 20, topP: 0.95, seed: 12 }],
    ['T=0.8 top-k 20 top-p 0.9', { temperature: 0.8, topK: 20, topP: 0.9, seed: 7 }],
    ['T=1.5 top-p 0.7', { temperature: 1.5, topP: 0.7, seed: 8 }],
  ];
  for (const path of paths) {
    it(`${path}: same tokens and logprobs on both paths, for greedy, temperature, top-k and top-p`, async () => {
      const rt = await Qwen2Runtime.create(await gpuFor(path), toQwen2Config(config), toWeightSource(config, weights), { maxContext: 64, maxBatchRows: 16 });
      try {
        await rt.addAdapter('a', toLoraAdapter(config, adapter));
        rt.setActiveAdapter('a');
        let redrawn = 0;
        for (const [name, o] of cases) {
          // No prefix reuse: a prompt row computed in another batch may differ in the last bits of f32.
          const inStep = await rt.generate(prompt, { ...o, maxNewTokens: 12, reusePrefix: false, onLogits: () => undefined });
          const ahead = await rt.generate(prompt, { ...o, maxNewTokens: 12, reusePrefix: false });
          expect(inStep.redrawnTokens, name).toBe(0);
          expect(ahead.tokens, name).toEqual(inStep.tokens);
          // Both are log p(token) in float64 from the same f32 logit and running max / sum.
          expect(ahead.logprobs, name).toEqual(inStep.logprobs);
          expect(ahead.tokens.length).toBe(12);
          redrawn += ahead.redrawnTokens;
          // Pure temperature past the candidates' mass is drawn on the GPU (the tail draw): no redraws.
          if (name === 'greedy' || !o.topP) expect(ahead.redrawnTokens, name).toBe(0);
          // Every nucleus reaches past the candidates: once 4 of the latest 8 tokens were redrawn the rest goes
          // in-step (no more redraws), and the tokens above still matched across that switch.
          if (name.startsWith('T=20 top-p')) expect(ahead.redrawnTokens, 'redraws, then the switch to in-step').toBe(4);
        }
        expect(redrawn).toBeLessThan(7 * 12);
        // The logprobs are the model's: scoring the sequence gives them back.
        const g = await rt.generate(prompt, { temperature: 1, seed: 9, maxNewTokens: 8 });
        const scored = await rt.score([[...prompt, ...g.tokens]]);
        expect(maxAbsDiff(g.logprobs, scored[0].slice(prompt.length - 1))).toBeLessThan(2e-3);
      } finally {
        rt.destroy();
      }
    });

    it(`${path}: stops (EOS id, onToken, abort) end both paths at the same token, and the cache holds what it claims`, async () => {
      const rt = await Qwen2Runtime.create(await gpuFor(path), toQwen2Config(config), toWeightSource(config, weights), { maxContext: 64, maxBatchRows: 16 });
      try {
        const free = await rt.generate(prompt, { temperature: 1, seed: 3, maxNewTokens: 10 });
        const stopAt = free.tokens[4];
        const first = free.tokens.indexOf(stopAt);
        for (const ahead of [false, true]) {
          const extra: GenerateTokensOptions = ahead ? {} : { onLogits: () => undefined };
          const byId = await rt.generate(prompt, { temperature: 1, seed: 3, maxNewTokens: 10, stopIds: [stopAt], ...extra });
          expect(byId.tokens).toEqual(free.tokens.slice(0, first + 1));
          expect(byId.finishReason).toBe('stop');
          const seen: number[] = [];
          const byCallback = await rt.generate(prompt, { temperature: 1, seed: 3, maxNewTokens: 10, onToken: (id) => seen.push(id) === 3, ...extra });
          expect(byCallback.tokens).toEqual(free.tokens.slice(0, 3));
          expect(seen).toEqual(byCallback.tokens);
          const ctl = new AbortController();
          const aborted = await rt.generate(prompt, { temperature: 1, seed: 3, maxNewTokens: 10, signal: ctl.signal, onToken: () => ctl.abort(), ...extra });
          expect(aborted.finishReason).toBe('abort');
          expect(aborted.tokens).toEqual(free.tokens.slice(0, 1));
        }
        // After a GPU-drawn generate that stopped early, the cache holds the prompt and all tokens but the
        // last (steps in flight past the stop wrote rows beyond them): reusing it gives the logits of a full
        // prefill.
        const stopped = await rt.generate(prompt, { temperature: 1, seed: 3, maxNewTokens: 10, stopIds: [stopAt] });
        const next = [...prompt, ...stopped.tokens, 7];
        const reused = await rt.generate(next, { temperature: 0, maxNewTokens: 4 });
        expect(reused.reusedPrefixTokens).toBe(prompt.length + stopped.tokens.length - 1);
        const fresh = await rt.generate(next, { temperature: 0, maxNewTokens: 4, reusePrefix: false });
        expect(reused.tokens).toEqual(fresh.tokens);
        expect(maxAbsDiff(reused.logprobs, fresh.logprobs)).toBeLessThan(1e-4);
      } finally {
        rt.destroy();
      }
    });
  }
});

// Finite weights whose activations leave f32's range (issue 25, item 3). A residual stream too big to
// square must still give the float64 answer (RMSNorm pre-scales it), on the f16 and the fused 4-bit decode
// paths; one that overflows outright must fail naming the position and the layer, never return numbers.
import { describe, expect, it } from 'vitest';
import { gpuFor } from '../../tests/support/gpu';
import { maxAbsDiff } from '../../tests/support/compare';
import { bigActivationQwen2, infActivationQwen2, OVERFLOW_TOKEN } from '../../tests/support/overflow-models';
import { quantizeModel } from '../../tests/support/q4-model';
import { qwen2RefForward, type Qwen2RefConfig, type Qwen2RefWeights } from '../../tests/support/qwen2-ref';
import { toQwen2Config, toWeightSource } from '../../tests/support/random-qwen2';
import { NonFiniteActivationError } from './non-finite';
import { Qwen2Runtime } from './runtime';
import { isQ4 } from '../model/weights';

const SEQS = [[3, 9, 14, 2, 30, 5], [1, 2, 3], [44, 0, 17, 8]];

/** Each generated token's log-prob against float64 given the tokens before it (whichever token it is). */
function refGenLogprobs(c: Qwen2RefConfig, w: Qwen2RefWeights, prompt: number[], tokens: number[]): number[] {
  const lp = qwen2RefForward(c, w, prompt.concat(tokens)).logprobs;
  return tokens.map((_, i) => lp[prompt.length - 1 + i]);
}

describe('activations too big to square (finite weights)', () => {
  const { config, weights } = bigActivationQwen2();
  const flat = -Math.log(config.vocabSize);

  for (const kind of ['f16', 'q4'] as const) {
    it(`${kind}: score and generate match float64, not the flat log(1/V) of zeroed norms`, async () => {
      const q = kind === 'q4' ? quantizeModel(config, weights, 'f32') : null;
      const ref = q ? q.ref : weights;
      const rt = await Qwen2Runtime.create(await gpuFor('packed'), toQwen2Config(config), q ? q.source : toWeightSource(config, weights), { maxContext: 32 });
      try {
        if (q) expect(isQ4(rt.weights.layers[0].down)).toBe(true);
        // The reference itself is far from flat, so a zeroed norm cannot pass.
        const want = SEQS.map((s) => qwen2RefForward(config, ref, s).logprobs);
        expect(Math.max(...want.flat().map((v) => Math.abs(v - flat)))).toBeGreaterThan(0.5);
        const got = await rt.score(SEQS);
        want.forEach((w, i) => expect(maxAbsDiff(got[i], w), `sequence ${i}`).toBeLessThan(2e-3));
        for (const temperature of [0, 1]) {
          const g = await rt.generate([3, 9, 14], { maxNewTokens: 6, temperature, seed: 5 });
          expect(g.tokens.length).toBe(6);
          expect(maxAbsDiff(g.logprobs, refGenLogprobs(config, ref, [3, 9, 14], g.tokens)), `temperature ${temperature}`).toBeLessThan(2e-3);
        }
      } finally {
        rt.destroy();
      }
    });
  }
});

describe('activations that overflow f32 (finite weights)', () => {
  const { config, weights } = infActivationQwen2();
  const bad = OVERFLOW_TOKEN;

  it('score, generate, generateBatch and logitsLast fail naming the position and layer 0\'s MLP; later calls work', async () => {
    const rt = await Qwen2Runtime.create(await gpuFor('packed'), toQwen2Config(config), toWeightSource(config, weights), { maxContext: 32 });
    try {
      // Without the token every value is finite, before and after the failures below.
      const good = await rt.generate([1, 2, 3], { maxNewTokens: 5, temperature: 0 });
      expect(good.logprobs.every(Number.isFinite)).toBe(true);

      const e1 = await rt.score([[1, 2, 3], [4, 5, bad, 6, 8]]).catch((e: unknown) => e);
      expect(e1).toBeInstanceOf(NonFiniteActivationError);
      expect((e1 as Error).message).toMatch(/^score: sequence 1, position 2: the hidden state became NaN or infinite in layer 0's MLP/);
      expect(e1).toMatchObject({ category: 'non-finite', position: 2, sequence: 1, site: { layer: 0, part: 'MLP' } });

      // Prefill: the prompt's last row is the token itself.
      await expect(rt.generate([1, bad], { maxNewTokens: 3 })).rejects.toThrow(/^generate: position 1: .*layer 0's MLP/);
      // Earlier in the prompt: later rows go NaN through attention, the first non-finite position is still named.
      await expect(rt.generate([bad, 4, 5], { maxNewTokens: 3, temperature: 1, seed: 2 })).rejects.toThrow(/^generate: position 2: .*layer 1's attention/);
      await expect(
        rt.generateBatch([{ prompt: [1, 2, 3], options: { maxNewTokens: 2 } }, { prompt: [2, bad, 9], options: { maxNewTokens: 2 } }]),
      ).rejects.toThrow(/^generateBatch: request 1, position 2: .*layer 1's attention/);
      await expect(rt.logitsLast([5, bad])).rejects.toThrow(/^logitsLast: position 1: .*layer 0's MLP/);

      expect(await rt.generate([1, 2, 3], { maxNewTokens: 5, temperature: 0 })).toMatchObject({ tokens: good.tokens, logprobs: good.logprobs });
      expect((await rt.score([[1, 2, 3]]))[0].every(Number.isFinite)).toBe(true);
    } finally {
      rt.destroy();
    }
  });
});

// KV-cache prefix reuse between generate() calls: a planner turn's prompt repeats the previous one's
// front (system prompt, tool cards, query; a Flow-GRPO group repeats the whole first prompt), so only the
// new tail is prefilled. Checked against the float64 reference model, and for staleness: a switched,
// replaced or retrained adapter must not reuse rows computed with other weights.
import { describe, expect, it } from 'vitest';
import { writeBuffer } from '../gpu/buffers';
import { gpuFor, weightPaths } from '../../tests/support/gpu';
import { maxAbsDiff } from '../../tests/support/compare';
import { qwen2RefForward, type Qwen2RefAdapter, type Qwen2RefConfig, type Qwen2RefWeights } from '../../tests/support/qwen2-ref';
import { randomAdapter, randomQwen2, randomTokens, toLoraAdapter, toQwen2Config, toWeightSource } from '../../tests/support/random-qwen2';
import { Rng } from '../util/rng';
import { Qwen2Runtime } from './runtime';

const paths = await weightPaths();

async function makeRuntime(path: 'native' | 'packed', config: Qwen2RefConfig, weights: Qwen2RefWeights) {
  // maxBatchRows 8: prompts and tails span several prefill chunks.
  return Qwen2Runtime.create(await gpuFor(path), toQwen2Config(config), toWeightSource(config, weights), { maxContext: 64, maxBatchRows: 8, logitsRows: 8 });
}

/** Greedy generation recording the logits each token came from. */
async function greedy(rt: Qwen2Runtime, prompt: number[], n: number, reusePrefix?: boolean) {
  const logits: Float32Array[] = [];
  const out = await rt.generate(prompt, { maxNewTokens: n, temperature: 0, reusePrefix, onLogits: (l) => void logits.push(l.slice()) });
  return { ...out, logits };
}

function expectReference(c: Qwen2RefConfig, w: Qwen2RefWeights, a: Qwen2RefAdapter | undefined, prompt: number[], g: { tokens: number[]; logits: Float32Array[] }) {
  g.logits.forEach((l, i) => {
    const seq = [...prompt, ...g.tokens.slice(0, i)];
    expect(maxAbsDiff(l, qwen2RefForward(c, w, seq, a).logits[seq.length - 1]), `step ${i}`).toBeLessThan(2e-3);
  });
}

describe.each(paths)('%s weights: KV prefix reuse', (path) => {
  it('prefills only the tail a new prompt adds, with the logits of a full prefill', async () => {
    const { config, weights } = randomQwen2(21, { numLayers: 2, vocabSize: 50 });
    const adapter = randomAdapter(22, config);
    const rt = await makeRuntime(path, config, weights);
    try {
      await rt.addAdapter('a', toLoraAdapter(config, adapter));
      rt.setActiveAdapter('a');
      const first = randomTokens(new Rng(23), 13, config.vocabSize);
      const g1 = await greedy(rt, first, 4);
      expect(g1.reusedPrefixTokens).toBe(0);
      // The next turn: the previous prompt, what was generated, and new text.
      const second = [...first, ...g1.tokens, ...randomTokens(new Rng(24), 6, config.vocabSize)];
      const g2 = await greedy(rt, second, 3);
      // The cache held the first prompt and the three tokens decode steps ran (the fourth never ran).
      expect(g2.reusedPrefixTokens).toBe(first.length + 3);
      expectReference(config, weights, adapter, second, g2);
      // Without reuse: the same tokens, and logits equal up to f32 summation order.
      const full = await greedy(rt, second, 3, false);
      expect(full.reusedPrefixTokens).toBe(0);
      expect(full.tokens).toEqual(g2.tokens);
      full.logits.forEach((l, i) => expect(maxAbsDiff(l, g2.logits[i])).toBeLessThan(1e-3));
      // The same prompt again (a Flow-GRPO group's rollouts): all but its last token come from the cache.
      const again = await greedy(rt, second, 3);
      expect(again.reusedPrefixTokens).toBe(second.length - 1);
      expect(again.tokens).toEqual(g2.tokens);
      // A prompt that leaves the cached path early reuses only the common front.
      const branch = [...first.slice(0, 5), (first[5] + 1) % config.vocabSize, ...first.slice(6)];
      const g3 = await greedy(rt, branch, 2);
      expect(g3.reusedPrefixTokens).toBe(5);
      expectReference(config, weights, adapter, branch, g3);
    } finally {
      rt.destroy();
    }
  });

  it('never reuses rows computed with other weights: switched, replaced or retrained adapters', async () => {
    const { config, weights } = randomQwen2(31, { numLayers: 2, vocabSize: 50 });
    const a = randomAdapter(32, config, 4, 16);
    const b = randomAdapter(33, config, 4, 16);
    const rt = await makeRuntime(path, config, weights);
    try {
      await rt.addAdapter('a', toLoraAdapter(config, a));
      rt.setActiveAdapter('a');
      const prompt = randomTokens(new Rng(34), 11, config.vocabSize);
      await greedy(rt, prompt, 2);
      expect((await greedy(rt, prompt, 2)).reusedPrefixTokens).toBe(prompt.length - 1);

      // Base model: rows made with adapter 'a' do not count.
      rt.setActiveAdapter(null);
      const base = await greedy(rt, prompt, 2);
      expect(base.reusedPrefixTokens).toBe(0);
      expectReference(config, weights, undefined, prompt, base);

      // Replaced under the same id (new buffers): nothing reused.
      rt.setActiveAdapter('a');
      await greedy(rt, prompt, 2);
      await rt.addAdapter('a', toLoraAdapter(config, b));
      const replaced = await greedy(rt, prompt, 2);
      expect(replaced.reusedPrefixTokens).toBe(0);
      expectReference(config, weights, b, prompt, replaced);

      // Rewritten in place, as the trainer's AdamW step does, which bumps the adapter's version: the rows
      // made with the old values are not reused, and the logits are those of the new values.
      const gpu = rt.adapters.get('a')!;
      const lora = toLoraAdapter(config, a);
      for (const p of lora.pairs.values()) {
        const pair = gpu.layers[p.layer][p.module]!;
        writeBuffer(rt.ctx, pair.A, p.A);
        writeBuffer(rt.ctx, pair.B, p.B);
      }
      gpu.version++;
      const retrained = await greedy(rt, prompt, 2);
      expect(retrained.reusedPrefixTokens).toBe(0);
      expectReference(config, weights, a, prompt, retrained);
    } finally {
      rt.destroy();
    }
  });
});

// The split-K attention as the engine uses it: decode over a KV cache longer than ATTN_SPLIT_MIN_KEYS.
// (The runtime's own decode tests use short caches, which keep the single-pass kernel.)
import { describe, expect, it } from 'vitest';
import { gpuFor } from '../../../tests/support/gpu';
import { maxAbsDiff } from '../../../tests/support/compare';
import { qwen2RefForward } from '../../../tests/support/qwen2-ref';
import { randomQwen2, randomTokens, toQwen2Config, toWeightSource } from '../../../tests/support/random-qwen2';
import { Rng } from '../../util/rng';
import { ActivationPlan } from '../../model/activations';
import { recordForward } from '../../model/forward';
import { KvCache } from '../../model/kv-cache';
import { Qwen2Runtime } from '../../engine/runtime';
import { Qwen2Weights } from '../../model/weights';
import { ATTN_SPLIT_MIN_KEYS } from './attention.split';

// GQA 4/2 with head dim 16, the qwen2-tiny fixture's attention shape.
const SHAPE = { numHeads: 4, numKvHeads: 2, headDim: 16, intermediateSize: 40, vocabSize: 50, numLayers: 2, tie: true };
const LONG = ATTN_SPLIT_MIN_KEYS + 76;

describe('split-K attention in the decode forward', () => {
  it('decode over a long cache records the split kernels; a short cache and prefill batches keep the single pass', async () => {
    const ctx = await gpuFor('packed');
    const { config, weights } = randomQwen2(3, SHAPE);
    const cfg = toQwen2Config(config);
    const w = await Qwen2Weights.upload(ctx, cfg, toWeightSource(config, weights));
    const plans = [await ActivationPlan.create(ctx, cfg, { rows: 1 }), await ActivationPlan.create(ctx, cfg, { rows: 32 })];
    const caches = [await KvCache.create(ctx, cfg, LONG), await KvCache.create(ctx, cfg, ATTN_SPLIT_MIN_KEYS)];
    try {
      const labels = async (plan: ActivationPlan, kv: KvCache) =>
        (await recordForward(ctx, { plan, weights: w, adapter: null, n: plan.rows, cache: { kv } })).flatMap((s) => (s.kind === 'dispatch' ? [s.d.label ?? ''] : []));
      const count = (ls: string[], l: string) => ls.filter((x) => x === l).length;
      const decodeLong = await labels(plans[0], caches[0]);
      expect(count(decodeLong, 'attention_split_partials')).toBe(config.numLayers);
      expect(count(decodeLong, 'attention_split_combine')).toBe(config.numLayers);
      expect(count(decodeLong, 'attention')).toBe(0);
      for (const ls of [await labels(plans[0], caches[1]), await labels(plans[1], caches[0])]) {
        expect(count(ls, 'attention')).toBe(config.numLayers);
        expect(count(ls, 'attention_split_partials')).toBe(0);
      }
    } finally {
      for (const x of [...plans, ...caches, w]) x.destroy();
    }
  });

  it('KV-cache decode past 256 keys (two slices) gives the logits of recomputing the sequence', async () => {
    const ctx = await gpuFor('packed');
    const { config, weights } = randomQwen2(5, SHAPE);
    const rt = await Qwen2Runtime.create(ctx, toQwen2Config(config), toWeightSource(config, weights), { maxContext: LONG, maxBatchRows: 272, logitsRows: 8 });
    try {
      // 261 and 262 keys: a full 256-key slice plus a short one (more slices are the kernel tests' job:
      // prefill is slow on software GPUs). 272-row batches hold every sequence without padding to 512.
      const prompt = randomTokens(new Rng(6), 260, config.vocabSize);
      const seen: Float32Array[] = [];
      const out = await rt.generate(prompt, { maxNewTokens: 3, temperature: 0, onLogits: (l) => void seen.push(l.slice()) });
      expect(out.tokens.length).toBe(3);
      // Step 0's logits come from the prefill; steps 1 and 2 from decode through the split kernels.
      for (const i of [1, 2]) {
        const seq = [...prompt, ...out.tokens.slice(0, i)];
        expect(maxAbsDiff(seen[i], await rt.logitsLast(seq))).toBeLessThan(1e-3);
        expect(maxAbsDiff(seen[i], qwen2RefForward(config, weights, seq).logits[seq.length - 1])).toBeLessThan(2e-3);
      }
    } finally {
      rt.destroy();
    }
  });
});

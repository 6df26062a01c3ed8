// The float64 CPU reference (tests/support/qwen2-ref.ts) against the PyTorch float64 outputs in the
// shared fixture: if this fails, every GPU-vs-reference test downstream is meaningless.
import { describe, expect, it } from 'vitest';
import { argmax, qwen2RefForward, qwen2RefGreedy } from '../../tests/support/qwen2-ref';
import { readExpected, readFixtureAdapter, readFixtureWeights } from '../../tests/support/qwen2-fixture';
import { maxAbsDiff } from '../../tests/support/compare';

describe('float64 Qwen2 reference vs the PyTorch fixture', () => {
  const { config, weights } = readFixtureWeights();
  const adapter = readFixtureAdapter(undefined, config.numLayers);
  const expected = readExpected();

  it('has the fixture adapter on all seven modules of every layer', () => {
    expect(adapter.scale).toBe(2);
    for (const l of adapter.layers) expect(Object.keys(l).sort()).toEqual(['down', 'gate', 'k', 'o', 'q', 'up', 'v']);
  });

  for (const [i, f] of expected.forward.entries()) {
    it(`sequence ${i} (${f.tokens.length} tokens): logprobs and last logits, base and adapter`, () => {
      const base = qwen2RefForward(config, weights, f.tokens);
      expect(base.logprobs.length).toBe(f.tokens.length - 1);
      expect(maxAbsDiff(base.logprobs, f.logprobs_base)).toBeLessThan(1e-6);
      expect(maxAbsDiff(base.logits[f.tokens.length - 1], f.logits_base_last)).toBeLessThan(1e-6);
      const ad = qwen2RefForward(config, weights, f.tokens, adapter);
      expect(maxAbsDiff(ad.logprobs, f.logprobs_adapter)).toBeLessThan(1e-6);
      expect(maxAbsDiff(ad.logits[f.tokens.length - 1], f.logits_adapter_last)).toBeLessThan(1e-6);
      // The adapter must change the output, or the comparison above proves nothing about LoRA.
      expect(maxAbsDiff(ad.logprobs, base.logprobs)).toBeGreaterThan(1e-3);
    });
  }

  it('greedy continuation with the adapter', () => {
    const g = expected.greedy;
    expect(qwen2RefGreedy(config, weights, g.prompt, g.continuation.length, g.adapter ? adapter : undefined)).toEqual(g.continuation);
  });

  it('rejects an out-of-range token id naming it', () => {
    expect(() => qwen2RefForward(config, weights, [1, 320])).toThrow(/320.*size 320/);
    expect(argmax([1, 3, 2])).toBe(1);
  });
});

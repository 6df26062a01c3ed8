import { describe, expect, it } from 'vitest';
import { Rng } from '../util/rng';
import { sampleFromLogits } from './token-policy';

describe('sampleFromLogits', () => {
  it('samples from softmax(logits / T) and reports log p at temperature 1', () => {
    const logits = [Math.log(0.5), Math.log(0.3), Math.log(0.2)];
    const rng = new Rng(1);
    const counts = [0, 0, 0];
    for (let i = 0; i < 20000; i++) {
      const s = sampleFromLogits(logits, 1, rng);
      counts[s.token]++;
      expect(s.logprob).toBeCloseTo(logits[s.token], 12);
    }
    expect(counts[0] / 20000).toBeCloseTo(0.5, 1);
    expect(counts[2] / 20000).toBeCloseTo(0.2, 1);
    // T = 0.01 is nearly greedy
    expect(sampleFromLogits(logits, 0.01, rng).token).toBe(0);
  });
});

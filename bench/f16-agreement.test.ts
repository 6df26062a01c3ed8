import { describe, expect, it } from 'vitest';
import { AGREE_RELATIVE, AGREE_SGM_RELATIVE, comparePaths } from './f16-agreement';

describe('f16-agreement comparePaths', () => {
  const ref = { logits: new Float32Array([1, -4, 2]), logprobs: [-1, -2, -3], tokens: [5, 6, 7] };

  it('measures the logit gap against the largest |logit| of the reference, and the score and greedy gaps', () => {
    const r = comparePaths({ logits: new Float32Array([1, -4.01, 2]), logprobs: [-1, -2.5, -3], tokens: [5, 6, 8] }, ref, AGREE_SGM_RELATIVE);
    expect(r.logitsMaxAbs).toBe(4);
    expect(r.logitsMaxAbsDiff).toBeCloseTo(0.01, 5);
    expect(r.logitsRelative).toBeCloseTo(0.0025, 5);
    expect(r).toMatchObject({ argmaxSame: true, scoreMaxAbsDiff: 0.5, greedySameTokens: 2, greedyTokens: 3, agree: true, agreeRelative: AGREE_SGM_RELATIVE });
  });

  it('disagrees past the bound and reports a changed argmax', () => {
    const r = comparePaths({ logits: new Float32Array([1, -4, 2.1]), logprobs: [-1, -2, -3], tokens: [5, 6, 7] }, ref, AGREE_RELATIVE);
    expect(r).toMatchObject({ agree: false, argmaxSame: true });
    expect(comparePaths({ logits: new Float32Array([3, -4, 2]), logprobs: [-1, -2, -3], tokens: [] }, ref, AGREE_SGM_RELATIVE)).toMatchObject({ argmaxSame: false, agree: false, greedySameTokens: 0 });
  });
});

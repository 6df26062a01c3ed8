// The single-pass attention kernel is shared text with the split-K kernel (attention.split.wgsl.ts), so
// edits to the shared pieces would silently change prefill/scoring arithmetic, on which the e2e suite's
// sampling seeds depend. Its generated source is pinned; change the hash only with a deliberate kernel change.
// Last change: a key block costs two barriers, not two barrier trees (the max taken by each thread, the
// exp-sum's tree added by thread 0 in the tree's order, then shared once after the loop); before it, the V accumulation went dims outer,
// keys inner. Both kept the same adds in the same order: outputs checked bit for bit against the previous
// source on lavapipe and SwiftShader, and the e2e seeds give the same runs.
import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { attentionWgsl } from './attention.wgsl';

describe('single-pass attention WGSL', () => {
  it('is the source the e2e seeds were recorded with', () => {
    expect(createHash('sha256').update(attentionWgsl()).digest('hex')).toBe('47d9aeb67d20a74ab3dd0066077734517a2ab918e60968f1d15a1b5a16266d84');
  });
});

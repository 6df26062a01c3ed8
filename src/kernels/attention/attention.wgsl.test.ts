// The single-pass attention kernel is shared text with the split-K kernel (attention.split.wgsl.ts), so
// edits to the shared pieces would silently change prefill/scoring arithmetic, on which the e2e suite's
// sampling seeds depend. Its generated source is pinned; change the hash only with a deliberate kernel change.
// Last change: a key block costs two barriers, not two barrier trees (the max taken by each thread, the
// exp-sum's tree added by one thread in the tree's order); before it, the V accumulation went dims outer,
// keys inner. Both kept the same adds in the same order: outputs checked bit for bit against the previous
// source on lavapipe and SwiftShader, and the e2e seeds give the same runs.
import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { attentionWgsl } from './attention.wgsl';

describe('single-pass attention WGSL', () => {
  it('is the source the e2e seeds were recorded with', () => {
    expect(createHash('sha256').update(attentionWgsl()).digest('hex')).toBe('3f51badfbbabef38b6264d025301ec42f6b46cc0cd28cb06ace879a93c54a10f');
  });
});

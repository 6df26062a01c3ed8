// The single-pass attention kernel is shared text with the split-K kernel (attention.split.wgsl.ts), so
// edits to the shared pieces would silently change prefill/scoring arithmetic, on which the e2e suite's
// sampling seeds depend. Its generated source is pinned; change the hash only with a deliberate kernel change.
import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { attentionWgsl } from './attention.wgsl';

describe('single-pass attention WGSL', () => {
  it('is the source the e2e seeds were recorded with', () => {
    expect(createHash('sha256').update(attentionWgsl()).digest('hex')).toBe('15d866620ede02be2a242aebdf3fa2b1ce15d1cc5ef6cd0aaf35d7ed5392654f');
  });
});

// The single-pass attention kernel is shared text with the split-K kernel (attention.split.wgsl.ts), so
// edits to the shared pieces would silently change prefill/scoring arithmetic, on which the e2e suite's
// sampling seeds depend. Its generated source is pinned; change the hash only with a deliberate kernel change.
// Last change: the V accumulation loops dims outer, keys inner (same adds in the same order; its outputs were
// checked bit for bit against the previous source on lavapipe, and the e2e seeds give the same runs).
import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { attentionWgsl } from './attention.wgsl';

describe('single-pass attention WGSL', () => {
  it('is the source the e2e seeds were recorded with', () => {
    expect(createHash('sha256').update(attentionWgsl()).digest('hex')).toBe('fd19e0acc419317c0483ecb153ad844236f9ea19d1602a55387ef7fd79d5dd23');
  });
});

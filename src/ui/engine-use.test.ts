import { describe, expect, it } from 'vitest';
import { describeUses, manyUses, type EngineUse } from './engine-use';

const use = (what: string, plural?: boolean): EngineUse => ({ what, kept: '', plural, stop: async () => undefined });

describe('engine uses in words', () => {
  it('joins what runs and says whether it is one thing or more', () => {
    expect(describeUses([use('a training run')])).toBe('a training run');
    expect(describeUses([use('a'), use('b'), use('c')])).toBe('a, b and c');
    expect(manyUses([use('a training run')])).toBe(false);
    expect(manyUses([use('a'), use('b')])).toBe(true);
    // The chat's answer and its training run, stopped together as one use, are still two things.
    expect(manyUses([use('a chat answer and a training run', true)])).toBe(true);
  });
});

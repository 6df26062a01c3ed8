import { describe, expect, it } from 'vitest';
import { packSequences, unpackLogprobs } from './batch';

describe('packing sequences into rows', () => {
  it('lays out ids, positions, causal key ranges and next-token targets; pads the rest', () => {
    const b = packSequences([[5, 6, 7], [8], [9, 10]], 8);
    expect(b.tokens).toBe(6);
    expect([...b.ids]).toEqual([5, 6, 7, 8, 9, 10, 0, 0]);
    expect([...b.pos]).toEqual([0, 1, 2, 0, 0, 1, 0, 0]);
    expect([...b.ranges]).toEqual([0, 1, 0, 2, 0, 3, 3, 4, 4, 5, 4, 6, 6, 7, 7, 8]);
    expect([...b.targets]).toEqual([6, 7, 0, 0, 10, 0, 0, 0]);
    expect(b.starts).toEqual([0, 3, 4]);
    expect(unpackLogprobs(b, [0.1, 0.2, 9, 9, 0.5, 9, 9, 9])).toEqual([[0.1, 0.2], [], [0.5]]);
  });

  it('refuses more tokens than rows', () => {
    expect(() => packSequences([[1, 2, 3]], 2)).toThrow(/3 tokens do not fit in 2 rows/);
  });
});

import { describe, expect, it } from 'vitest';
import { decodeRowBucket, GENERAL_DECODE_ROWS, MAX_DECODE_ROWS } from './runtime';

describe('decodeRowBucket (the rows a decode step of n sequences computes)', () => {
  it('rounds up to 1, 2, 4 or 8, never past the runtime bound, never below n', () => {
    expect(MAX_DECODE_ROWS).toBe(8);
    expect(GENERAL_DECODE_ROWS).toBe(4);
    expect([1, 2, 3, 4, 5, 6, 7, 8].map((n) => decodeRowBucket(n, MAX_DECODE_ROWS))).toEqual([1, 2, 4, 4, 8, 8, 8, 8]);
    expect([1, 2, 3, 4].map((n) => decodeRowBucket(n, GENERAL_DECODE_ROWS))).toEqual([1, 2, 4, 4]);
    // A bound that is not a power of two caps the padding; n itself is never cut.
    expect(decodeRowBucket(5, 6)).toBe(6);
    expect(decodeRowBucket(7, 4)).toBe(7);
  });
});

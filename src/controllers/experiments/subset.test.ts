import { describe, expect, it } from 'vitest';
import { summarize } from './experiment-store';
import { parseSubset } from './experiment-subset';

describe('experiment subset and summary', () => {
  it('parses 1-based ranges and rejects bad parts by name', () => {
    expect(parseSubset('', 4)).toEqual([0, 1, 2, 3]);
    expect(parseSubset('1-3, 7, 2', 8)).toEqual([0, 1, 2, 6]);
    expect(() => parseSubset('2-9', 5)).toThrow(/'2-9' is outside 1-5/);
    expect(() => parseSubset('x', 5)).toThrow(/'x' is not a number/);
  });

  it('counts accuracy over all items and tool calls by tool', () => {
    const s = summarize([
      { experimentId: 'e', index: 0, pid: 'a', query: 'q', reference: '1', answer: '1', correct: true, toolCalls: { python: 2 }, errors: [] },
      { experimentId: 'e', index: 1, pid: 'b', query: 'q', reference: '2', answer: '3', correct: false, toolCalls: { python: 1, wikipedia: 1 }, errors: ['x'] },
      { experimentId: 'e', index: 2, pid: 'c', query: 'q', reference: '2', errors: ['stopped'] },
    ]);
    expect(s).toMatchObject({ items: 3, answered: 2, correct: 1, toolCalls: 4, errors: 2, 'tool:python': 3, 'tool:wikipedia': 1 });
    expect(s.accuracy).toBeCloseTo(1 / 3, 12);
  });
});

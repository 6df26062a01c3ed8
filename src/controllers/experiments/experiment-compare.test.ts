import { describe, expect, it } from 'vitest';
import type { ExperimentItemRecord } from '../../store/records';
import { compareRuns, describeComparison, distinctLabels } from './experiment-compare';

const item = (experimentId: string, number: number | undefined, pid: string, query: string, correct?: boolean): ExperimentItemRecord => ({
  experimentId,
  index: 0,
  ...(number === undefined ? {} : { number }),
  pid,
  query,
  reference: '"x"',
  ...(correct === undefined ? {} : { correct, answer: correct ? 'x' : 'y' }),
});

describe('compareRuns', () => {
  it('matches items by benchmark item, in benchmark order, and says how each fared', () => {
    const a = [item('A', 3, 'p3', 'three', true), item('A', 1, 'p1', 'one', false), item('A', 2, 'p2', 'two', true)];
    const b = [item('B', 1, 'p1', 'one', true), item('B', 2, 'p2', 'two', false), item('B', 4, 'p4', 'four', false)];
    const { rows, counts } = compareRuns(a, b);
    expect(rows.map((r) => [r.label, r.query, r.change, r.a?.experimentId ?? null, r.b?.experimentId ?? null])).toEqual([
      ['1', 'one', 'right-in-b', 'A', 'B'],
      ['2', 'two', 'right-in-a', 'A', 'B'],
      ['3', 'three', 'only-in-a', 'A', null],
      ['4', 'four', 'only-in-b', null, 'B'],
    ]);
    expect(counts).toEqual({ 'both-right': 0, 'both-wrong': 0, 'right-in-a': 1, 'right-in-b': 1, 'only-in-a': 1, 'only-in-b': 1, unscored: 0 });
    expect(describeComparison(counts)).toBe('Item by item: 1 right only in A, 1 right only in B, 1 only in run A, 1 only in run B.');
  });

  it('does not take items of another benchmark with the same id for the same item; unnumbered items come last', () => {
    const { rows } = compareRuns([item('A', undefined, '1', 'What is 2+2?', true)], [item('B', undefined, '1', 'Name a colour.', true), item('B', 1, 'x', 'first', false)]);
    expect(rows.map((r) => [r.label, r.change])).toEqual([
      ['1', 'only-in-b'],
      ['1', 'only-in-a'],
      ['1', 'only-in-b'],
    ]);
    expect(rows.map((r) => r.query)).toEqual(['first', 'What is 2+2?', 'Name a colour.']);
  });

  it('counts both right, both wrong and unscored items, and says so in one sentence', () => {
    const a = [item('A', 1, 'p1', 'q1', true), item('A', 2, 'p2', 'q2', false), item('A', 3, 'p3', 'q3')];
    const b = [item('B', 1, 'p1', 'q1', true), item('B', 2, 'p2', 'q2', false), item('B', 3, 'p3', 'q3', true)];
    const { counts } = compareRuns(a, b);
    expect(describeComparison(counts)).toBe('Item by item: 1 right in both, 1 wrong in both, 1 not scored in one of them.');
    expect(describeComparison(compareRuns([], []).counts)).toBe('Neither run has items yet.');
  });
});

describe('compareRuns with repeated items (runs stored before the import dropped repeats)', () => {
  it('counts the repeats it leaves out, so rows plus repeats add up to each run\'s items', () => {
    const a = [item('A', 1, 'p1', 'q1', true), item('A', 2, 'p1', 'q1', false), item('A', 3, 'p2', 'q2', false)];
    const b = [item('B', 1, 'p1', 'q1', false), item('B', 2, 'p2', 'q2', true), item('B', 3, 'p2', 'q2', true), item('B', 4, 'p2', 'q2', false)];
    const { rows, counts, repeated } = compareRuns(a, b);
    expect(rows.map((r) => [r.a?.number, r.b?.number, r.change])).toEqual([
      [1, 1, 'right-in-a'],
      [3, 2, 'right-in-b'],
    ]);
    expect(repeated).toEqual({ a: 1, b: 2 });
    const inA = counts['both-right'] + counts['both-wrong'] + counts['right-in-a'] + counts['right-in-b'] + counts.unscored + counts['only-in-a'];
    const inB = counts['both-right'] + counts['both-wrong'] + counts['right-in-a'] + counts['right-in-b'] + counts.unscored + counts['only-in-b'];
    expect([inA + repeated.a, inB + repeated.b]).toEqual([a.length, b.length]);
    expect(describeComparison(counts, repeated)).toBe(
      'Item by item: 1 right only in A, 1 right only in B. 1 item of run A left out as repeats of an earlier item (same pid and question); 2 items of run B left out as repeats of an earlier item (same pid and question).',
    );
    expect(compareRuns([item('A', 1, 'p1', 'q1', true)], [item('B', 1, 'p1', 'q1', true)]).repeated).toEqual({ a: 0, b: 0 });
  });
});

describe('distinctLabels', () => {
  it('keeps the parts of run names that tell them apart', () => {
    expect(distinctLabels(['qwen · bench × 5 · 2026-11-26 00:11', 'qwen + adapter “mine” · bench × 5 · 2026-11-27 00:40'])).toEqual(['qwen · 2026-11-26 00:11', 'qwen + adapter “mine” · 2026-11-27 00:40']);
    // Runs of one day differ in their time, and runs of one minute in the " (2)" that tells their names apart.
    expect(distinctLabels(['qwen · bench × 5 · 3 turns · 2026-11-26 00:11', 'qwen · bench × 5 · 3 turns · 2026-11-26 00:11 (2)', 'qwen · bench × 5 · 3 turns · 2026-11-26 00:40'])).toEqual(['00:11', '00:11 (2)', '00:40']);
    expect(distinctLabels(['demo · b × 1 · d', 'demo · b × 2 · d'])).toEqual(['b × 1', 'b × 2']);
    // Names of another shape, one name, or names all alike stay whole.
    expect(distinctLabels(['a · b', 'c'])).toEqual(['a · b', 'c']);
    expect(distinctLabels(['x · y'])).toEqual(['x · y']);
    expect(distinctLabels(['x · y', 'x · y'])).toEqual(['x · y', 'x · y']);
  });
});

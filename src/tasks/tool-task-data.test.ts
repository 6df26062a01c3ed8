// The tool-choice task's questions: seeded, four kinds, a held-out split of other questions (and other fact
// entities), every query read back into the parts its answer is made of.
import { describe, expect, it } from 'vitest';
import { CAPITALS, convertUnits, evaluateExpression, formatNumber, SYMBOLS } from '../tools/offline-tables';
import { itemOf, KINDS, parseQuestion, toolTaskSplits } from './tool-task-data';

describe('toolTaskSplits', () => {
  it('draws the same splits from a seed, other ones from another seed', () => {
    expect(toolTaskSplits(4)).toEqual(toolTaskSplits(4));
    expect(toolTaskSplits(4).train.map((i) => i.query)).not.toEqual(toolTaskSplits(5).train.map((i) => i.query));
  });

  it('has every kind in both splits, no query in both, and no fact entity of a held-out question in training', () => {
    for (const seed of [1, 2, 3]) {
      const { train, heldOut } = toolTaskSplits(seed, { trainPerKind: 20, heldOutPerKind: 10 });
      for (const k of KINDS) {
        expect(train.filter((i) => i.kind === k)).toHaveLength(20);
        expect(heldOut.filter((i) => i.kind === k)).toHaveLength(10);
      }
      const trainQueries = new Set(train.map((i) => i.query));
      expect(trainQueries.size).toBe(train.length);
      expect(heldOut.filter((i) => trainQueries.has(i.query))).toEqual([]);
      const entities = (items: typeof train) => new Set(items.flatMap((i) => (parseQuestion(i.query) ?? []).flatMap((p) => (p.tool === 'lookup' ? [p.entity] : []))));
      const trained = entities(train);
      expect([...entities(heldOut)].filter((e) => trained.has(e))).toEqual([]);
    }
  });

  it('refuses split sizes out of range, naming the setting', () => {
    expect(() => toolTaskSplits(1, { trainPerKind: 0 })).toThrow(/'trainPerKind' must be an integer from 1 to 200, got 0/);
    expect(() => toolTaskSplits(1, { heldOutPerKind: 1.5 })).toThrow(/'heldOutPerKind'/);
    expect(() => toolTaskSplits(1, { trainCounts: { 'two-part': 0 } })).toThrow('trainCounts.two-part must be an integer from 1 to 200, got 0');
    expect(() => toolTaskSplits(1, { trainCounts: { riddle: 3 } as never })).toThrow("trainCounts names 'riddle', not a question kind");
  });

  it('draws the kinds trainCounts names that many times for training, the others trainPerKind, the held-out split as before in size', () => {
    const s = toolTaskSplits(4, { trainPerKind: 6, heldOutPerKind: 3, trainCounts: { 'two-part': 20 } });
    const count = (items: typeof s.train) => Object.fromEntries(KINDS.map((k) => [k, items.filter((i) => i.kind === k).length]));
    expect(count(s.train)).toEqual({ arithmetic: 6, fact: 6, conversion: 6, 'two-part': 20 });
    expect(count(s.heldOut)).toEqual({ arithmetic: 3, fact: 3, conversion: 3, 'two-part': 3 });
    expect(new Set([...s.train, ...s.heldOut].map((i) => i.query)).size).toBe(s.train.length + s.heldOut.length);
  });

  it('reads every query back into parts whose answers make the item answer; two-part queries need two different tools', () => {
    const { train, heldOut } = toolTaskSplits(7);
    for (const item of [...train, ...heldOut]) {
      const parts = parseQuestion(item.query);
      expect(parts, item.query).not.toBeNull();
      expect(itemOf(item.pid, item.kind, parts!)).toEqual(item);
      if (item.kind === 'two-part') expect(new Set(parts!.map((p) => p.tool)).size).toBe(2);
      else expect(parts).toHaveLength(1);
    }
  });
});

describe('the task data', () => {
  it('answers as the tools do', () => {
    expect(itemOf('a', 'arithmetic', [{ tool: 'python', expression: '64 - 12 * 63' }]).answer).toBe('-692');
    expect(itemOf('b', 'fact', [{ tool: 'lookup', entity: 'Peru', attribute: 'capital' }]).answer).toBe('Lima');
    expect(itemOf('c', 'conversion', [{ tool: 'convert', value: 5, from: 'mi', to: 'km' }]).answer).toBe('8.05');
    expect(itemOf('d', 'two-part', [{ tool: 'lookup', entity: 'gold', attribute: 'symbol' }, { tool: 'python', expression: '2 + 3' }])).toMatchObject({ query: 'What is the chemical symbol of gold, and what is 2 + 3?', answer: 'Au; 5' });
    expect(evaluateExpression('2 + 3 * 4')).toBe(14);
    expect(evaluateExpression('20 - 3 * 4')).toBe(8);
    expect(() => evaluateExpression('2 + 3 * 4 - 5')).toThrow(/not an arithmetic question's expression/);
    expect(formatNumber(2.005)).toBe('2.01');
    expect(formatNumber(-0.001)).toBe('0');
    expect(convertUnits(1, 'kg', 'km')).toEqual({ ok: false, error: 'cannot convert mass (kg) to length (km)' });
    expect(convertUnits(1, 'stone', 'kg')).toMatchObject({ ok: false, error: expect.stringMatching(/unknown unit 'stone'/) });
  });

  it('reads nothing else as a question of the task', () => {
    for (const q of ['What is the capital of Atlantis?', 'What is 2 / 3?', 'How many furlongs are 3 m?', 'what is 2 + 3', 'Tell me a joke?', '']) expect(parseQuestion(q)).toBeNull();
    expect(Object.keys(CAPITALS).length + Object.keys(SYMBOLS).length).toBeGreaterThan(40);
  });
});

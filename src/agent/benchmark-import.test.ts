import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { importBenchmark } from './benchmark-import';

const read = (name: string) => readFileSync(new URL(`../../../shared/benchmarks/${name}`, import.meta.url), 'utf8');

describe('importBenchmark', () => {
  it('imports every AgentFlow data.json file whole, with the reward kind for its name', () => {
    const expected: Record<string, [number, string]> = {
      'bamboogle.json': [125, 'exact'],
      '2wiki.json': [200, 'exact'],
      'hotpotqa.json': [100, 'exact'],
      'musique.json': [200, 'exact'],
      'aime24.json': [30, 'numeric'],
      'amc23.json': [40, 'numeric'],
      'gameof24.json': [300, 'gameof24'],
    };
    for (const [file, [count, kind]] of Object.entries(expected)) {
      const raw = JSON.parse(read(file)) as Array<Record<string, unknown>>;
      const b = importBenchmark(read(file), file);
      expect(b.problems, file).toEqual([]);
      expect(b.items.length, file).toBe(count);
      expect(b.kind, file).toBe(kind);
      b.items.forEach((item, i) => {
        expect(item.answer).toEqual(raw[i].answer);
        expect(item.query).toBe(typeof raw[i].query === 'string' ? raw[i].query : raw[i].question);
        expect(item.pid).toBe(String(raw[i].pid));
      });
    }
    const g = importBenchmark(read('gameof24.json'), 'gameof24.json');
    expect(g.items[0].numbers).toEqual([1, 1, 1, 8]);
  });

  it('imports JSONL, reporting malformed lines by number and keeping the rest', () => {
    const lines = [
      '{"pid": "a", "question": "2+2?", "answer": "4"}',
      '',
      '{"pid": "b", "question": "broken", "answer": ',
      '{"pid": "c", "query": "Capital of France?", "answer": ["Paris"]}',
      '[1, 2]',
      '{"pid": "d", "answer": "x"}',
      '{"question": "Which?", "answer": "B", "options": ["x", "y"]}',
    ].join('\n');
    const b = importBenchmark(lines, 'mine.jsonl');
    expect(b.name).toBe('mine');
    expect(b.items.map((i) => [i.pid, i.query, i.answer])).toEqual([
      ['a', '2+2?', '4'],
      ['c', 'Capital of France?', ['Paris']],
      ['5', 'Which?', 'B'],
    ]);
    expect(b.items[2].options).toEqual(['x', 'y']);
    expect(b.problems.map((p) => p.line)).toEqual([3, 5, 6]);
    expect(b.problems[0].message).toMatch(/^line 3 of mine\.jsonl is not valid JSON/);
    expect(b.problems[1].message).toBe('line 5 is not an object');
    expect(b.problems[2].message).toBe("line 6 has no 'query' or 'question' text");
  });

  it('names the file when a JSON array is broken or the file is empty', () => {
    expect(importBenchmark('[{"query": "x"', 'data.json').problems[0].message).toMatch(/^data\.json is not valid JSON/);
    expect(importBenchmark('  ', 'e.json').problems).toEqual([{ message: 'e.json is empty' }]);
  });
});

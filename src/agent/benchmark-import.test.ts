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

describe('importBenchmark: hostile or machine-made files', () => {
  it('reports and skips answers that are not a string, finite number or list of them, by line and field', () => {
    const lines = [
      '{"pid": "1", "question": "q1", "answer": {"toString": "boom"}}',
      '{"pid": "2", "question": "q2", "answer": {"a": 1}}',
      '{"pid": "3", "question": "q3", "answer": 1e400}',
      '{"pid": "4", "question": "q4", "answers": ["ok", {"a": 1}]}',
      '{"pid": "5", "question": "q5", "answer": [["nested"]]}',
      '{"pid": "6", "question": "q6", "answer": true}',
      '{"pid": "7", "question": "q7", "answer": []}',
      '{"pid": "8", "question": "q8", "reference": -1e999}',
      '{"pid": {"toString": "boom"}, "question": "q9", "answer": "x"}',
      '{"pid": "10", "question": "q10", "answer": ["Paris", 2, 0.5]}',
      '{"pid": 11, "question": "q11", "answer": 42}',
      '{"pid": "12", "question": "q12"}',
      '{"pid": "13", "question": "q13", "answer": null}',
    ].join('\n');
    let b!: ReturnType<typeof importBenchmark>;
    expect(() => (b = importBenchmark(lines, 'hostile.jsonl'))).not.toThrow();
    expect(b.items.map((i) => [i.pid, i.answer])).toEqual([
      ['10', ['Paris', 2, 0.5]],
      ['11', 42],
      ['12', undefined],
      ['13', undefined],
    ]);
    expect(b.problems.map((p) => [p.line, p.message])).toEqual([
      [1, `line 1 of hostile.jsonl: 'answer' is an object ({"toString":"boom"}); an answer is a string, a number or a list of them`],
      [2, `line 2 of hostile.jsonl: 'answer' is an object ({"a":1}); an answer is a string, a number or a list of them`],
      [3, "line 3 of hostile.jsonl: 'answer' is a number beyond a double's range (read as Infinity); an answer is a string, a number or a list of them"],
      [4, `line 4 of hostile.jsonl: 'answers'[1] is an object ({"a":1}); an answer is a string, a number or a list of them`],
      [5, `line 5 of hostile.jsonl: 'answer'[0] is a list (["nested"]); an answer is a string, a number or a list of them`],
      [6, "line 6 of hostile.jsonl: 'answer' is a boolean (true); an answer is a string, a number or a list of them"],
      [7, "line 7 of hostile.jsonl: 'answer' is an empty list; an answer is a string, a number or a list of them"],
      [8, "line 8 of hostile.jsonl: 'reference' is a number beyond a double's range (read as -Infinity); an answer is a string, a number or a list of them"],
      [9, `line 9 of hostile.jsonl: 'pid' is an object ({"toString":"boom"}), not a string or number`],
    ]);
  });

  it('names the item of a JSON array, and a huge answer object is cut short in the message', () => {
    const big = { a: 'x'.repeat(10_000) };
    const b = importBenchmark(JSON.stringify([{ pid: 'a', query: 'q', answer: 'fine' }, { pid: 'b', query: 'q', answer: big }]), 'data.json');
    expect(b.items.map((i) => i.pid)).toEqual(['a']);
    expect(b.problems).toHaveLength(1);
    expect(b.problems[0].index).toBe(1);
    expect(b.problems[0].message).toMatch(/^item 1 of data\.json: 'answer' is an object \(\{"a":"x+…\)/);
    expect(b.problems[0].message.length).toBeLessThan(200);
  });

  it('keeps the first of items with the same pid and question and reports each repeat with where the first was', () => {
    const lines = [
      '{"pid": "a", "question": "2+2?", "answer": "4"}',
      '{"pid": "a", "question": "3+3?", "answer": "6"}',
      '{"pid": "b", "question": "2+2?", "answer": "4"}',
      '{"pid": "a", "question": "2+2?", "answer": "five"}',
      '{"pid": "a", "question": "2+2?", "answer": "4"}',
    ].join('\n');
    const b = importBenchmark(lines, 'dups.jsonl');
    expect(b.items.map((i) => [i.pid, i.query, i.answer])).toEqual([
      ['a', '2+2?', '4'],
      ['a', '3+3?', '6'],
      ['b', '2+2?', '4'],
    ]);
    expect(b.problems.map((p) => [p.line, p.message])).toEqual([
      [4, 'line 4 of dups.jsonl: repeats pid "a" with the same question as line 1; only the first is kept'],
      [5, 'line 5 of dups.jsonl: repeats pid "a" with the same question as line 1; only the first is kept'],
    ]);
    const j = importBenchmark(JSON.stringify([{ pid: 1, query: 'q' }, { pid: '1', query: 'q' }]), 'd.json');
    expect(j.items).toHaveLength(1);
    expect(j.problems[0].message).toBe('item 1 of d.json: repeats pid "1" with the same question as item 0; only the first is kept');
  });

  it('reports a Game of 24 item without its numbers, which its reward cannot score', () => {
    const b = importBenchmark(
      ['{"pid": "0", "question": [4, 6, 1, 1], "query": "Make 24", "answer": ["4×6×1×1"]}', '{"pid": "1", "question": "Make 24 from 1 2 3 4", "answer": "(1+2+3)×4"}', '{"pid": "2", "question": [1e400, 1, 1, 1], "query": "Make 24", "answer": "x"}'].join('\n'),
      'gameof24-mine.jsonl',
    );
    expect(b.kind).toBe('gameof24');
    expect(b.items.map((i) => [i.pid, i.numbers])).toEqual([['0', [4, 6, 1, 1]]]);
    expect(b.problems.map((p) => p.message)).toEqual([
      "line 2 of gameof24-mine.jsonl: 'question' is not the puzzle's numbers (a list of numbers), which the Game of 24 reward needs",
      "line 3 of gameof24-mine.jsonl: 'question' is not the puzzle's numbers (a list of numbers), which the Game of 24 reward needs",
    ]);
  });
});

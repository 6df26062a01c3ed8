// The file form of an evaluation run: a tab run exported and read back is the same run, results.jsonl with
// summary.json imports as a run Compare matches item by item, and a bad line is named.
import { describe, expect, it } from 'vitest';
import type { ExperimentItemRecord, ExperimentRecord } from '../store/records';
import { compareRuns } from '../controllers/experiments/experiment-compare';
import { experimentFile, parseExperimentFile, resultsJsonl, summaryOf } from './experiment-file';

const exp: ExperimentRecord = { id: 'tab', createdAt: 1, name: 'Qwen · bamboogle × 2 · 3 turns · 2026-01-01 10:00', status: 'done', config: { benchmark: 'bamboogle', rewardKind: 'exact', engines: ['planner:Qwen', 'shared:Qwen'], adapter: null, maxTurns: 3, tools: ['python'] }, total: 2 };
const items: ExperimentItemRecord[] = [
  { experimentId: 'tab', index: 0, number: 1, pid: '1', query: 'q1', reference: 'a', answer: 'a', correct: true, toolCalls: { python: 2 }, errors: [], turns: 2, seconds: 1.5, scoring: { rule: 'exact-text' } },
  { experimentId: 'tab', index: 1, number: 2, pid: '2', query: 'q2', reference: 'b', answer: 'c', correct: false, toolCalls: {}, errors: ['turn 1: x'], turns: 1, seconds: 0.5 },
];

describe('experiment files', () => {
  it('an exported tab run reads back with the same items and summary', () => {
    const run = parseExperimentFile(experimentFile(exp, items), 'experiment.json', 'new');
    expect(run.items).toEqual(items.map((i) => ({ ...i, experimentId: 'new' })));
    expect(run.experiment).toMatchObject({ id: 'new', name: exp.name, total: 2, summary: { items: 2, correct: 1, accuracy: 0.5, toolCalls: 2 }, config: { maxTurns: 3, benchmark: 'bamboogle' } });
  });

  it('results.jsonl with summary.json (several samples) imports as a run that Compare matches on its first sample', () => {
    const cli: ExperimentItemRecord[] = [
      { ...items[0], experimentId: 'cli', correct: false, sample: 0 },
      { ...items[0], experimentId: 'cli', index: 1, correct: true, sample: 1 },
      { ...items[1], experimentId: 'cli', index: 2, correct: true, sample: 0 },
      { ...items[1], experimentId: 'cli', index: 3, correct: true, sample: 1 },
    ];
    const summary = summaryOf({ ...exp, id: 'cli', name: 'cli run', config: { ...exp.config, adapter: { id: '/a', name: 'mine' } } }, cli);
    expect(summary).toMatchObject({ items: 4, correct: 3, accuracy: 0.75, distinctItems: 2, samplesPerItem: 2, model: 'Qwen', adapter: 'mine' });
    const run = parseExperimentFile(resultsJsonl(cli), 'results.jsonl', 'b', JSON.stringify(summary));
    expect(run.experiment).toMatchObject({ name: 'cli run', summary: { accuracy: 0.75 }, config: { adapter: { name: 'mine' } } });
    const cmp = compareRuns(items, run.items);
    expect(cmp.counts).toMatchObject({ 'right-in-a': 1, 'right-in-b': 1, 'only-in-a': 0, 'only-in-b': 0 });
    expect(cmp.repeated).toEqual({ a: 0, b: 0 });
  });

  it('names a line that is not a result, and refuses a summary alone', () => {
    expect(() => parseExperimentFile('{"pid": "1", "question": "q", "expected": "a", "given": null, "correct": null, "tools": {}}\n{"pid": "2"}\n', 'r.jsonl', 'x')).toThrow(/line 2 of r\.jsonl: "question" must be a string/);
    expect(() => parseExperimentFile('not json\n', 'r.jsonl', 'x')).toThrow(/line 1 of r\.jsonl is not valid JSON/);
    expect(() => parseExperimentFile('{"accuracy": 0.5, "items": 2}', 'summary.json', 'x')).toThrow(/is a summary\.json: import results\.jsonl with it/);
    expect(() => parseExperimentFile('{"format": "agentflow-experiment", "version": 9}', 'e.json', 'x')).toThrow(/version 9/);
  });
});

// `cli eval` as a user runs it (a separate process, Dawn on lavapipe): bad flags are refused before anything is
// written; on the qwen2-tiny fixture it writes results.jsonl (a line per item and sample), summary.json and
// experiment.json, with accuracy = correct / lines, and experiment.json reads back as the Experiments tab's run.
import { describe, expect, it } from 'vitest';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { tinyChatModelDir } from '../../tests/support/tiny-chat-model';
import { parseExperimentFile, type ResultLine } from '../agent/experiment-file';
import { runCli } from './cli-spawn';

const tmp = (p: string) => mkdtempSync(join(tmpdir(), `agentflow-eval-${p}-`));

describe('cli eval', () => {
  it('refuses a bad flag or file, naming it, with exit 2 and nothing written', async () => {
    const dir = tmp('bad');
    const data = join(dir, 'd.jsonl');
    writeFileSync(data, '{"pid": "1", "query": "q", "answer": "a"}\n');
    const out = join(dir, 'out');
    const held = join(dir, 'held');
    mkdirSync(held);
    writeFileSync(join(held, 'results.jsonl'), '');
    const cases: Array<[string[], RegExp]> = [
      [['--data', data, '--out', out], /'eval' needs --model DIR/],
      [['--model', '/no/such', '--data', data, '--out', out], /--model directory '\/no\/such' does not exist/],
      [['--model', tmpdir(), '--data', '/no/such.json', '--out', out], /--data file '\/no\/such\.json' does not exist/],
      [['--model', tmpdir(), '--data', data, '--out', out, '--samples', '0'], /--samples must be an integer from 1 to 1024 \(runs of each item\), got 0/],
      [['--model', tmpdir(), '--data', data, '--out', out, '--samples', '0x2'], /--samples must be an integer in decimal digits, got '0x2'/],
      [['--model', tmpdir(), '--data', data, '--out', out, '--temperature', '3'], /--temperature must be from 0 to 2, got 3/],
      [['--model', tmpdir(), '--data', data, '--out', out, '--max-turns', '1', '--max-turns', '2'], /--max-turns is given twice/],
      [['--model', tmpdir(), '--data', data, '--out', out, '--steps', '2'], /'eval' has no flag --steps/],
      [['--model', tmpdir(), '--data', data, '--out', out, '--constrain-replies', 'maybe'], /--constrain-replies must be on or off, got 'maybe'/],
      [['--model', tmpdir(), '--data', data, '--out', held], /already holds an evaluation \(results\.jsonl\)/],
    ];
    for (const [args, message] of cases) {
      const r = await runCli(['eval', ...args]);
      expect(r.code, `${args.join(' ')}\n${r.stderr}`).toBe(2);
      expect(r.stdout).toBe('');
      expect(r.stderr).toMatch(message);
    }
    expect(existsSync(out)).toBe(false);
  }, 120_000);

  it('writes a result line per item and sample, and a summary whose accuracy is correct / lines', async () => {
    const model = tinyChatModelDir();
    const dir = tmp('run');
    const data = join(dir, 'tiny.jsonl');
    // Greedily, with 4 new tokens, the tiny planner's generator answers this question "mmmm": the same question
    // under two pids, one expecting that answer and one not, gives one item right and one wrong.
    writeFileSync(data, '{"pid": "a", "query": "What is 4 times 5?", "answer": "mmmm"}\n{"pid": "b", "question": "What is 4 times 5?", "answer": "20"}\n');
    const out = join(dir, 'out');
    const r = await runCli(['eval', '--model', model, '--data', data, '--out', out, '--max-turns', '1', '--max-new-tokens', '4', '--tools', 'base_generator', '--samples', '2']);
    expect(r.code, r.stderr).toBe(0);
    const text = readFileSync(join(out, 'results.jsonl'), 'utf8');
    expect(text.endsWith('\n')).toBe(true);
    const lines = text.split('\n').filter(Boolean).map((l) => JSON.parse(l) as ResultLine);
    expect(lines.map((l) => [l.pid, l.sample])).toEqual([['a', 0], ['a', 1], ['b', 0], ['b', 1]]);
    for (const l of lines) {
      expect(Object.keys(l)).toEqual(expect.arrayContaining(['pid', 'question', 'expected', 'given', 'correct', 'turns', 'tools', 'seconds']));
      expect(l.turns).toBe(1);
      expect(l.seconds).toBeGreaterThan(0);
    }
    expect(lines.map((l) => l.correct)).toEqual([true, true, false, false]);
    const summary = JSON.parse(readFileSync(join(out, 'summary.json'), 'utf8'));
    expect(summary).toMatchObject({ items: 4, correct: 2, accuracy: 0.5, distinctItems: 2, samplesPerItem: 2, adapter: null, benchmark: 'tiny', status: 'done' });
    expect(summary.settings).toMatchObject({ maxTurns: 1, samples: 2, temperature: 0, tools: ['base_generator'] });
    expect(JSON.parse(r.stdout)).toMatchObject({ accuracy: 0.5, out });
    const run = parseExperimentFile(readFileSync(join(out, 'experiment.json'), 'utf8'), 'experiment.json', 'x');
    expect(run.experiment.summary).toMatchObject({ items: 4, correct: 2, accuracy: 0.5 });
    expect(run.items.map((i) => [i.pid, i.sample, i.correct, i.answer])).toEqual([['a', 0, true, 'mmmm'], ['a', 1, true, 'mmmm'], ['b', 0, false, 'mmmm'], ['b', 1, false, 'mmmm']]);
  }, 300_000);
});

// `cli train --eval-data/--eval-every` refused before anything is written, naming the flag at fault (a new
// run and a resumed one), without a GPU: every check runs before the model loads.
import { existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { tinyChatModelDir } from '../../tests/support/tiny-chat-model';
import { parseArgs } from './args';
import { runCli } from './cli-spawn';
import { TRAIN_FLAGS } from './train';
import { checkEvalResume, evaluationFlags } from './train-eval';
import type { RunSpec } from '../trainer/run/run-store';

const tmp = (p: string) => mkdtempSync(join(tmpdir(), `agentflow-train-eval-${p}-`));
const args = (...a: string[]) => parseArgs(['train', ...a], { train: TRAIN_FLAGS });

describe('cli train --eval-data / --eval-every', () => {
  const dir = tmp('flags');
  const data = join(dir, 'train.jsonl');
  const held = join(dir, 'held.jsonl');
  writeFileSync(data, '{"pid": "1", "query": "What is 2 times 3?", "answer": "6"}\n');
  writeFileSync(held, '{"pid": "h1", "query": "What is 4 times 5?", "answer": "20"}\n{"pid": "h2", "query": "No answer"}\n');

  it('reads the schedule: default every 10, the file\'s rule unless --reward names one, answered items only', () => {
    expect(evaluationFlags(args('--out', dir))).toBeUndefined();
    expect(evaluationFlags(args('--eval-data', held))).toEqual({ every: 10, dataset: 'held', kind: 'exact', items: [{ pid: 'h1', query: 'What is 4 times 5?', answer: '20' }] });
    expect(evaluationFlags(args('--eval-data', held, '--eval-every', '3'), 'numeric')).toMatchObject({ every: 3, kind: 'numeric' });
  });

  it('on --resume keeps the stored schedule: the same flags pass, different ones are refused naming both', () => {
    const spec = { evaluation: evaluationFlags(args('--eval-data', held, '--eval-every', '3')) } as RunSpec;
    expect(() => checkEvalResume(args('--eval-data', held, '--eval-every', '3'), spec)).not.toThrow();
    expect(() => checkEvalResume(args('--eval-data', held), spec)).not.toThrow();
    expect(() => checkEvalResume(args(), spec)).not.toThrow();
    expect(() => checkEvalResume(args('--eval-every', '4'), spec)).toThrow("--resume: --eval-every 4 (the run has 1 items named 'held', every 3 steps)");
    expect(() => checkEvalResume(args('--eval-data', data), spec)).toThrow("--resume: --eval-data gives 1 items named 'train', every 3 steps (the run has 1 items named 'held', every 3 steps)");
    expect(() => checkEvalResume(args('--eval-data', held), {} as RunSpec)).toThrow('(the run has no held-out evaluation)');
  });

  it('refuses bad flags before anything is written, exit 2', async () => {
    const model = tinyChatModelDir();
    const out = join(dir, 'run');
    const cases: Array<[string[], RegExp]> = [
      [['--model', model, '--data', data, '--out', out, '--eval-every', '2'], /--eval-every needs --eval-data FILE/],
      [['--model', model, '--data', data, '--out', out, '--eval-data', '/no/such.json'], /--eval-data file '\/no\/such\.json' does not exist/],
      [['--model', model, '--data', data, '--out', out, '--eval-data', held, '--eval-every', '0'], /--eval-every must be a positive integer/],
      [['--task', 'toy', '--out', out, '--eval-data', held], /--eval-data does not apply to --task toy/],
    ];
    for (const [a, message] of cases) {
      const r = await runCli(['train', ...a]);
      expect(r.code, `${a.join(' ')}\n${r.stderr}`).toBe(2);
      expect(r.stderr).toMatch(message);
      expect(existsSync(out)).toBe(false);
    }
  });
});

// `cli train --task tools` and `cli eval --task tools`: the tool-choice task from the command line (no model, no
// GPU): its flags are checked before anything is written, a run writes its adapter and its held-out evaluations,
// --resume takes the run's own flags, and `cli eval` scores that adapter on the held-out split.
import { describe, expect, it } from 'vitest';
import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runCli } from './cli-spawn';

const tmp = () => mkdtempSync(join(tmpdir(), 'agentflow-tool-task-'));

describe('cli train --task tools', () => {
  it('refuses flags that do not apply, naming them, and writes nothing', async () => {
    const out = join(tmp(), 'run');
    const cases: Array<[string[], RegExp]> = [
      [['--model', tmp()], /--model does not apply to --task tools/],
      [['--eval-data', 'x.jsonl'], /--eval-data does not apply to --task tools/],
      [['--rank', '33'], /--rank must be at most 32 \(the tool-task planner's hidden size is 32\)/],
      [['--lr', '2'], /--lr must be > 0 and <= 1, got 2/],
    ];
    for (const [more, message] of cases) {
      const r = await runCli(['train', '--task', 'tools', '--out', out, ...more]);
      expect(r.code, r.stderr).toBe(2);
      expect(r.stderr).toMatch(message);
      expect(existsSync(out)).toBe(false);
    }
  }, 120_000);

  it('trains, evaluates the held-out split, resumes with its own flags, and cli eval scores its adapter', async () => {
    const dir = tmp();
    const out = join(dir, 'run');
    const flags = ['train', '--task', 'tools', '--out', out, '--group', '4', '--queries-per-step', '2', '--eval-every', '1'];
    const r = await runCli([...flags, '--steps', '1']);
    expect(r.code, r.stderr).toBe(0);
    const evals = readFileSync(join(out, 'eval.jsonl'), 'utf8').trim().split('\n').map((l) => JSON.parse(l) as { step: number; total: number });
    expect(evals.map((e) => [e.step, e.total])).toEqual([[0, 32], [1, 32]]);
    expect(existsSync(join(out, 'adapter', 'adapter_model.safetensors'))).toBe(true);
    const resumed = await runCli([...flags, '--steps', '2', '--resume']);
    expect(resumed.code, resumed.stderr).toBe(0);
    expect((JSON.parse(resumed.stdout) as { steps: number }).steps).toBe(2);
    const refused = await runCli([...flags.map((f) => (f === '4' ? '6' : f)), '--resume']);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toMatch(/--group 6 \(the run has 4\)/);
    const evalOut = join(dir, 'eval');
    const e = await runCli(['eval', '--task', 'tools', '--adapter', join(out, 'adapter'), '--out', evalOut]);
    expect(e.code, e.stderr).toBe(0);
    const summary = JSON.parse(readFileSync(join(evalOut, 'summary.json'), 'utf8')) as { items: number; accuracy: number; benchmark: string };
    expect(summary).toMatchObject({ items: 32, benchmark: 'tool-task-1-held-out' });
    expect(readFileSync(join(evalOut, 'results.jsonl'), 'utf8').trim().split('\n')).toHaveLength(32);
  }, 600_000);
});

// `cli train --task tools` and `cli eval --task tools`: the tool-choice task from the command line (no model, no
// GPU): its flags are checked before anything is written, a run writes its adapter and its held-out evaluations,
// --resume takes the run's own flags, and `cli eval` scores that adapter on the held-out split.
import { describe, expect, it } from 'vitest';
import { cpSync, existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runCli } from './cli-spawn';
import { toolTaskBaseModel } from '../tasks/tool-task';

const tmp = () => mkdtempSync(join(tmpdir(), 'agentflow-tool-task-'));

describe('cli train --task tools', () => {
  it('refuses flags that do not apply, naming them, and writes nothing', async () => {
    const out = join(tmp(), 'run');
    const cases: Array<[string[], RegExp]> = [
      [['--model', tmp()], /--model does not apply to --task tools/],
      [['--eval-data', 'x.jsonl'], /--eval-data does not apply to --task tools/],
      [['--rank', '65'], /--rank must be at most 64 \(the tool-task planner's hidden size is 64\)/],
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
    // The run was made with the task's default (no trust region): naming a bound is refused, naming none is not.
    const bounded = await runCli([...flags, '--max-update-kl', '0.05', '--resume']);
    expect(bounded.code).toBe(2);
    expect(bounded.stderr).toMatch(/--max-update-kl 0.05 \(the run has 0\)/);
    expect((await runCli([...flags, '--max-update-kl', '0', '--resume'])).code).toBe(0);
    const evalOut = join(dir, 'eval');
    const e = await runCli(['eval', '--task', 'tools', '--adapter', join(out, 'adapter'), '--out', evalOut]);
    expect(e.code, e.stderr).toBe(0);
    const summary = JSON.parse(readFileSync(join(evalOut, 'summary.json'), 'utf8')) as { items: number; accuracy: number; benchmark: string };
    expect(summary).toMatchObject({ items: 32, benchmark: 'tool-task-1-held-out' });
    const questions = (file: string) => readFileSync(file, 'utf8').trim().split('\n').map((l) => (JSON.parse(l) as { question: string }).question).sort();
    expect(questions(join(evalOut, 'results.jsonl'))).toHaveLength(32);
    // Without --adapter, the untrained planner is scored on the same held-out questions as the run's (its "before").
    const untrained = await runCli(['eval', '--task', 'tools', '--out', join(dir, 'eval0')]);
    expect(untrained.code, untrained.stderr).toBe(0);
    expect(questions(join(dir, 'eval0', 'results.jsonl'))).toEqual(questions(join(evalOut, 'results.jsonl')));

    // The adapter names the task it was trained on; eval rebuilds that one, and refuses flags or adapters that disagree.
    const config = JSON.parse(readFileSync(join(out, 'adapter', 'adapter_config.json'), 'utf8')) as Record<string, unknown>;
    expect(config.base_model_name_or_path).toBe(toolTaskBaseModel({ seed: 1 }));
    const wrongSeed = await runCli(['eval', '--task', 'tools', '--adapter', join(out, 'adapter'), '--task-seed', '2', '--out', join(dir, 'eval2')]);
    expect(wrongSeed.code).toBe(2);
    expect(wrongSeed.stderr).toMatch(/--task-seed 2: --adapter .* was trained on the questions of seed 1/);
    const other = join(dir, 'other-adapter');
    cpSync(join(out, 'adapter'), other, { recursive: true });
    writeFileSync(join(other, 'adapter_config.json'), JSON.stringify({ ...config, base_model_name_or_path: 'Qwen/Qwen2.5-0.5B-Instruct' }));
    const foreign = await runCli(['eval', '--task', 'tools', '--adapter', other, '--out', join(dir, 'eval3')]);
    expect(foreign.code).toBe(2);
    expect(foreign.stderr).toMatch(/was trained for base model “Qwen\/Qwen2.5-0.5B-Instruct”, not the tool-choice task's planner/);
    writeFileSync(join(other, 'adapter_config.json'), JSON.stringify({ ...config, base_model_name_or_path: 'agentflow-tool-task?seed=1' }));
    const torn = await runCli(['eval', '--task', 'tools', '--adapter', other, '--out', join(dir, 'eval4')]);
    expect(torn.code).toBe(2);
    expect(torn.stderr).toMatch(/base model “agentflow-tool-task\?seed=1” has no/);
    expect([2, 3, 4].some((k) => existsSync(join(dir, `eval${k}`)))).toBe(false);
    // An adapter from before the base model named the task is evaluated with the settings runs had then (the
    // first shape, 32 wide): this run's adapter (the third shape, 64 wide) does not fit it, and the error names
    // the tensor, its shape and the file instead of scoring a wrong planner.
    writeFileSync(join(other, 'adapter_config.json'), JSON.stringify({ ...config, base_model_name_or_path: 'agentflow-tool-task' }));
    const old = await runCli(['eval', '--task', 'tools', '--adapter', other, '--task-seed', '1', '--out', join(dir, 'eval5')]);
    expect(old.code).not.toBe(0);
    expect(old.stderr).toMatch(/adapter_model\.safetensors: 'base_model\.model\.model\.layers\.0\.self_attn\.q_proj\.lora_A\.weight' has shape/);
    expect(existsSync(join(dir, 'eval5', 'results.jsonl'))).toBe(false);
  }, 600_000);
});

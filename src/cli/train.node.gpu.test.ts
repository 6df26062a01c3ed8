// `cli train` as a user runs it (a separate process, Dawn on lavapipe): bad flags and files are refused before
// anything is written; the toy task's reward rises through the same TrainingRun the Training tab uses; a real
// agent run on the qwen2-tiny fixture writes the PEFT adapter (which `score --adapter` loads), rollouts.jsonl,
// metrics.jsonl and checkpoints; and a run killed with SIGKILL mid-run resumes, losing at most the step it was in.
import { describe, expect, it } from 'vitest';
import { existsSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { tinyChatModelDir } from '../../tests/support/tiny-chat-model';
import { runCli, spawnCli } from './cli-spawn';

const tmp = (p: string) => mkdtempSync(join(tmpdir(), `agentflow-train-${p}-`));

function jsonl<T>(file: string): T[] {
  const text = readFileSync(file, 'utf8');
  // Every line complete: the file ends with a newline and each line parses.
  if (text) expect(text.endsWith('\n')).toBe(true);
  return text.split('\n').filter(Boolean).map((l) => JSON.parse(l) as T);
}

interface Metrics {
  step: number;
  reward: number;
  rewardStd: number;
  loss: number;
  kl: number;
  gradNorm: number;
  clipFraction: number;
  plannerTokens: number;
  rolloutSeconds: number;
  updateSeconds: number;
  noSignal?: string;
  extraRollouts?: number;
}

describe('cli train: bad input is refused before anything is written', () => {
  it('names the flag, file or value at fault and exits 2', async () => {
    const out = join(tmp('bad'), 'run');
    const data = join(tmp('data'), 'nothing.jsonl');
    writeFileSync(data, '{"pid": "1", "query": "no answer here"}\nnot json\n');
    const cases: Array<[string[], RegExp]> = [
      [['--task', 'toy'], /'train' needs --out DIR/],
      [['--task', 'toy', '--out', out, '--colour', 'red'], /'train' has no flag --colour/],
      [['--task', 'toy', '--out', out, '--steps', '0'], /--steps must be an integer from 1 to 1000000, got 0/],
      [['--task', 'toy', '--out', out, '--group', '1'], /--group must be an integer from 2 to 256 \(advantages compare the rollouts of a group\), got 1/],
      [['--task', 'toy', '--out', out, '--lr', '5'], /--lr must be > 0 and <= 1, got 5/],
      [['--task', 'toy', '--out', out, '--data', data], /--data does not apply to --task toy/],
      [['--out', out, '--data', data], /'train' needs --model DIR/],
      [['--model', '/no/such/model', '--out', out, '--data', data], /--model directory '\/no\/such\/model' does not exist/],
      [['--model', tmpdir(), '--out', out, '--data', '/no/such.json'], /--data file '\/no\/such\.json' does not exist/],
      [['--model', tmpdir(), '--out', out, '--data', data], /nothing\.jsonl has no item with a reference answer/],
      [['--model', tmpdir(), '--out', out, '--data', data, '--reward', 'vibes'], /--reward must be one of exact, numeric, choice, gameof24, judge, got 'vibes'/],
      [['--out', out, '--resume'], /--resume: .* holds no run/],
    ];
    for (const [args, message] of cases) {
      const r = await runCli(['train', ...args]);
      expect(r.code, `${args.join(' ')}\n${r.stderr}`).toBe(2);
      expect(r.stdout).toBe('');
      expect(r.stderr).toMatch(message);
    }
    // The malformed line was reported by number on the way.
    const r = await runCli(['train', '--model', tmpdir(), '--out', out, '--data', data]);
    expect(r.stderr).toMatch(/--data: line 2 of nothing\.jsonl is not valid JSON.*\(skipped\)/);
    expect(existsSync(out)).toBe(false);
  }, 180_000);
});

describe('cli train on the toy task', () => {
  it('raises the reward through the library run, writes every file, and refuses to overwrite the run', async () => {
    const out = tmp('toy');
    const r = await runCli(['train', '--task', 'toy', '--out', out, '--steps', '30', '--group', '8', '--lr', '0.01', '--seed', '3']);
    expect(r.code, r.stderr).toBe(0);
    const summary = JSON.parse(r.stdout) as { status: string; steps: number; firstReward: number; lastReward: number; result: { step: number; reason: string }; adapter: string };
    expect(summary).toMatchObject({ status: 'done', steps: 30 });
    const metrics = jsonl<Metrics>(join(out, 'metrics.jsonl'));
    expect(metrics.map((m) => m.step)).toEqual([...Array(30).keys()].map((i) => i + 1));
    const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
    const first = mean(metrics.slice(0, 5).map((m) => m.reward));
    const last = mean(metrics.slice(-5).map((m) => m.reward));
    console.info(`[cli train toy] reward, first 5 steps ${first.toFixed(3)}, last 5 ${last.toFixed(3)}; curve ${metrics.map((m) => m.reward.toFixed(2)).join(' ')}`);
    expect(last).toBeGreaterThan(first + 0.25);
    for (const m of metrics) for (const k of ['loss', 'gradNorm', 'clipFraction', 'rewardStd', 'rolloutSeconds', 'updateSeconds'] as const) expect(Number.isFinite(m[k]), k).toBe(true);
    // The toy trains at beta 0, where the KL is not in the objective and not measured (no reference pass): JSON null.
    for (const m of metrics) expect(m.kl, `step ${m.step}`).toBeNull();
    // 6 queries × 8 rollouts × 2 planner turns per step, plus 2 per extra rollout of a group with no success.
    const rollouts = jsonl<{ step: number; reward: number; advantage: number; group_id: string; prompt_token_ids: number[]; completion_token_ids: number[]; logprobs: number[] }>(join(out, 'rollouts.jsonl'));
    expect(rollouts.length).toBe(30 * 6 * 8 * 2 + 2 * metrics.reduce((n, m) => n + (m.extraRollouts ?? 0), 0));
    for (const x of rollouts.slice(0, 96)) {
      expect(x.completion_token_ids.length).toBe(x.logprobs.length);
      expect(typeof x.advantage).toBe('number');
    }
    expect(readdirSync(join(out, 'adapter')).sort()).toEqual(['adapter_config.json', 'adapter_model.safetensors']);
    expect(JSON.parse(readFileSync(join(out, 'adapter', 'adapter_config.json'), 'utf8'))).toMatchObject({ peft_type: 'LORA', r: 4 });
    // The newest three checkpoints and the best one are kept.
    const kept = readdirSync(join(out, 'checkpoints')).filter((n) => n.startsWith('step-'));
    expect(kept.length).toBeLessThanOrEqual(4);
    expect(kept).toContain('step-000030');
    expect(kept).toContain(`step-${String(summary.result.step).padStart(6, '0')}`);

    const again = await runCli(['train', '--task', 'toy', '--out', out]);
    expect(again.code).toBe(2);
    expect(again.stderr).toMatch(/already holds a run \(run\.json\); pass --resume/);
    const resumeWithSettings = await runCli(['train', '--out', out, '--resume', '--group', '4']);
    expect(resumeWithSettings.code).toBe(2);
    expect(resumeWithSettings.stderr).toMatch(/--resume continues the run stored in .*, and these flags differ from its settings: --group 4 \(the run has 8\)/);
  }, 300_000);

  it('--backend gpu trains with the default group (its micro-batch of 764 rows fits the runtime)', async () => {
    const out = tmp('toy-gpu');
    const r = await runCli(['train', '--task', 'toy', '--backend', 'gpu', '--out', out, '--steps', '2']);
    expect(r.code, r.stderr).toBe(0);
    expect(jsonl<Metrics>(join(out, 'metrics.jsonl')).map((m) => m.step)).toEqual([1, 2]);
  }, 300_000);

  it('a run killed with SIGKILL mid-run resumes from its checkpoint, losing at most the step it was in, with no torn line', async () => {
    const out = tmp('kill');
    const p = spawnCli(['train', '--task', 'toy', '--out', out, '--steps', '40', '--group', '8', '--seed', '5']);
    const metricsFile = join(out, 'metrics.jsonl');
    const lines = () => (existsSync(metricsFile) ? readFileSync(metricsFile, 'utf8').split('\n').filter(Boolean).length : 0);
    await expect.poll(lines, { timeout: 120_000, interval: 20 }).toBeGreaterThanOrEqual(5);
    p.child.kill('SIGKILL');
    const killed = await p.done;
    expect(killed.code).toBeNull();
    const before = jsonl<Metrics>(metricsFile);
    expect(before.length).toBeGreaterThanOrEqual(5);
    expect(before.length).toBeLessThan(40);

    const r = await runCli(['train', '--out', out, '--resume']);
    expect(r.code, r.stderr).toBe(0);
    // At most the step in progress is redone: the notes name none, or one step.
    expect(r.stderr).not.toMatch(/steps \d+–\d+ ran after the last checkpoint/);
    expect(JSON.parse(r.stdout)).toMatchObject({ status: 'done', steps: 40 });
    const after = jsonl<Metrics>(metricsFile);
    expect(after.map((m) => m.step)).toEqual([...Array(40).keys()].map((i) => i + 1));
    // Every step finished before the kill but (at most) the last is kept as it was.
    const same = (m: Metrics) => [m.step, m.reward, m.loss, m.gradNorm];
    expect(after.slice(0, before.length - 1).map(same)).toEqual(before.slice(0, before.length - 1).map(same));
    // The rollouts of each step are there once.
    const rollouts = jsonl<{ step: number; conversation_id: string; turn: number }>(join(out, 'rollouts.jsonl'));
    const keys = rollouts.map((x) => `${x.conversation_id}#${x.turn}`);
    expect(new Set(keys).size).toBe(keys.length);
    expect(rollouts.length).toBe(40 * 6 * 8 * 2 + 2 * after.reduce((n, m) => n + (m.extraRollouts ?? 0), 0));
  }, 300_000);
});

describe('cli train on the real planner (qwen2-tiny)', () => {
  it('runs the agent loop with the planner serving every module and writes a PEFT adapter that score --adapter loads', async () => {
    const model = tinyChatModelDir();
    const dir = tmp('agent');
    const data = join(dir, 'mult.jsonl');
    writeFileSync(data, '{"pid": "1", "query": "What is 2 times 3?", "answer": "6"}\n{"pid": "2", "question": "What is 4 times 5?", "answer": "20"}\n');
    const out = join(dir, 'run');
    const r = await runCli(['train', '--model', model, '--data', data, '--out', out, '--steps', '2', '--group', '2', '--queries-per-step', '1', '--max-turns', '1', '--max-new-tokens', '4', '--tools', 'base_generator', '--rank', '2', '--extra-rollouts', '0']);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toMatch(/step 2\/2: reward/);
    expect(JSON.parse(r.stdout)).toMatchObject({ status: 'done', steps: 2, adapter: join(out, 'adapter') });
    const metrics = jsonl<Metrics>(join(out, 'metrics.jsonl'));
    expect(metrics.map((m) => m.step)).toEqual([1, 2]);
    for (const m of metrics) expect(m.plannerTokens).toBeGreaterThan(0);
    const rollouts = jsonl<{ step: number; rollout: number; turn: number; prompt: Array<{ role: string; content: string }>; completion: Array<{ content: string }>; prompt_token_ids: number[]; completion_token_ids: number[]; logprobs: number[]; adapter_id: string; reward: number; advantage: number }>(join(out, 'rollouts.jsonl'));
    // One planner call per rollout (one turn), two rollouts per step: the tiny model never answers right, and
    // --extra-rollouts 0 keeps dynamic sampling from adding 8 rollouts to each all-failed group (4× the time).
    for (const m of metrics) expect(m.extraRollouts ?? 0).toBe(0);
    expect(rollouts.map((x) => [x.step, x.rollout, x.turn])).toEqual([
      [1, 0, 1],
      [1, 1, 1],
      [2, 0, 1],
      [2, 1, 1],
    ]);
    for (const x of rollouts) {
      expect(x.prompt[0].role).toBe('system');
      expect(x.prompt_token_ids.length).toBeGreaterThan(100);
      expect(x.completion_token_ids.length).toBe(x.logprobs.length);
      expect(x.adapter_id).toMatch(/^training:agent-/);
    }
    const score = join(dir, 'seq.json');
    writeFileSync(score, JSON.stringify({ sequences: [[rollouts[0].prompt_token_ids.slice(0, 20)].flat()] }));
    const scored = await runCli(['score', '--model', model, '--adapter', join(out, 'adapter'), '--input', score]);
    expect(scored.code, scored.stderr).toBe(0);
    expect(JSON.parse(scored.stdout).logprobs[0]).toHaveLength(19);
  }, 600_000);
});

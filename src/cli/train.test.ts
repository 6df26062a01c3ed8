// `cli train --out DIR` as a directory one process owns (toy task on the CPU: no GPU needed): flags are read
// strictly and bounded before anything is written; a second process is refused while the first runs, and a
// dead one's lock is taken over; --resume accepts the run's own flags and refuses others naming both values;
// a damaged run.json or checkpoint is named; run.json keeps paths relative, so a copied run is whole.
import { describe, expect, it, onTestFinished } from 'vitest';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { TINY } from '../../tests/support/qwen2-fixture';
import { runCli, spawnCli } from './cli-spawn';

const tmp = () => mkdtempSync(join(tmpdir(), 'agentflow-train-dir-'));
const toy = (out: string, ...more: string[]) => ['train', '--task', 'toy', '--out', out, '--group', '4', '--seed', '2', ...more];
const runJson = (out: string) => JSON.parse(readFileSync(join(out, 'run.json'), 'utf8')) as { status: string; spec: { steps: number; grpo: { lrDecaySteps?: number } }; result: { adapterId: string } | null };

describe('cli train: flags are read strictly and bounded before anything is written', () => {
  it('exits 2 naming the flag, and writes nothing', async () => {
    const dir = tmp();
    const out = join(dir, 'run');
    const data = join(dir, 'data.jsonl');
    writeFileSync(data, '{"pid": "1", "query": "2 times 3?", "answer": "6"}\n{"pid": "2", "query": "4 times 5?", "answer": "20"}\n');
    const agent = ['train', '--model', TINY, '--data', data, '--out', out];
    const cases: Array<[string[], RegExp]> = [
      [[...toy(out), '--steps', '0x10'], /--steps must be an integer in decimal digits, got '0x10'/],
      [['train', '--task', 'toy', '--out', out, '--seed', '1e300'], /--seed must be an integer in decimal digits, got '1e300'/],
      [['train', '--task', 'toy', '--out', out, '--seed', '4294967296'], /--seed must be an integer from 0 to 4294967295/],
      [[...toy(out), '--steps', '1', '--steps', '2'], /--steps is given twice \('1' and '2'\)/],
      [['train', '--task', 'toy', '--out', out, '--group', '1000000000'], /--group must be an integer from 2 to 256/],
      [[...toy(out), '--steps', '1000001'], /--steps must be an integer from 1 to 1000000/],
      [[...toy(out), '--rank', '33'], /--rank must be at most 32 \(the toy planner's hidden size is 32\)/],
      [[...toy(out), '--lr', '0x1'], /--lr must be a decimal number, got '0x1'/],
      [[...toy(out), '--extra-rollouts', '-1'], /--extra-rollouts must be an integer/],
      [[...toy(out), '--extra-rollouts', '4097'], /--extra-rollouts must be an integer from 0 to 4096/],
      [[...toy(out), '--max-update-kl', '-0.1'], /--max-update-kl must be >= 0 \(0: no bound\), got -0.1/],
      [[...toy(out), '--max-update-kl', 'none'], /--max-update-kl must be a decimal number, got 'none'/],
      [['train', '--model', TINY, '--data', dir, '--out', out], /--data '.*' is a directory, not a file/],
      [[...agent, '--rank', '65'], /--rank must be at most 64 \(--model .*qwen2-tiny's hidden size is 64\)/],
      [[...agent, '--adapter', join(TINY, 'adapter'), '--rank', '4'], /--rank does not apply with --adapter/],
      [[...agent, '--group', '256', '--max-turns', '1000', '--micro-batch-tokens', '100000'], /a step would hold about .* GB of rollouts in memory \(--group 256 × --queries-per-step 2 × --max-turns 1000 × 512 tokens per planner turn/],
    ];
    for (const [args, message] of cases) {
      const r = await runCli(args);
      expect(r.code, `${args.join(' ')}\n${r.stderr}`).toBe(2);
      expect(r.stdout).toBe('');
      expect(r.stderr).toMatch(message);
      expect(existsSync(out), args.join(' ')).toBe(false);
    }
  }, 300_000);
});

describe('cli train: one process per output directory', () => {
  it('a second process exits 2 naming the first, which goes on; SIGTERM pauses it and frees the directory', async () => {
    const out = join(tmp(), 'run');
    const first = spawnCli(toy(out, '--steps', '100000'));
    // A failed expectation must not leave a 100000-step run behind.
    onTestFinished(() => void (first.child.exitCode === null && first.child.kill('SIGKILL')));
    const metrics = join(out, 'metrics.jsonl');
    await expect.poll(() => existsSync(metrics) && readFileSync(metrics, 'utf8').split('\n').length > 3, { timeout: 60_000, interval: 50 }).toBe(true);
    for (const args of [['train', '--out', out, '--resume'], toy(out)]) {
      const second = await runCli(args);
      expect(second.code, second.stderr).toBe(2);
      expect(second.stderr).toContain(`in use by another 'cli train' (pid ${first.child.pid} on ${hostname()}`);
      expect(second.stderr).toContain(join(out, 'train.lock'));
    }
    const before = readFileSync(metrics, 'utf8').split('\n').length;
    await expect.poll(() => readFileSync(metrics, 'utf8').split('\n').length, { timeout: 60_000, interval: 50 }).toBeGreaterThan(before);
    first.child.kill('SIGTERM');
    const ended = await first.done;
    expect(ended.code, ended.stderr).toBe(130);
    expect(ended.stderr).toMatch(/SIGTERM: pausing after a checkpoint/);
    expect(runJson(out).status).toBe('paused');
    expect(existsSync(join(out, 'train.lock'))).toBe(false);
  }, 180_000);

  it("a dead process's lock is taken over with a note", async () => {
    const out = join(tmp(), 'run');
    expect((await runCli(toy(out, '--steps', '2'))).code).toBe(0);
    const dead = spawnSync(process.execPath, ['-e', '0']).pid;
    writeFileSync(join(out, 'train.lock'), JSON.stringify({ pid: dead, host: hostname(), startedAt: '2020-01-01T00:00:00.000Z' }));
    const r = await runCli(['train', '--out', out, '--resume', '--steps', '3']);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toContain(`note: took over ${join(out, 'train.lock')} from pid ${dead} (started 2020-01-01T00:00:00.000Z), which is no longer running`);
    expect(existsSync(join(out, 'train.lock'))).toBe(false);
  }, 120_000);
});

describe('cli train --resume', () => {
  it("accepts the run's own flags, refuses others naming both values, extends but never shortens a run", async () => {
    const out = join(tmp(), 'run');
    expect((await runCli(toy(out, '--steps', '3', '--lr', '0.01', '--max-update-kl', '1e-4'))).code).toBe(0);
    // The bound is the run's: stored in its spec, and each update that ran says what it kept.
    expect(runJson(out).spec).toMatchObject({ grpo: { maxUpdateKl: 1e-4 } });
    const kept = readFileSync(join(out, 'metrics.jsonl'), 'utf8').trim().split('\n').map((l) => JSON.parse(l) as { updateKl?: number; updateScale?: number; optimizerSteps: number });
    const updated = kept.filter((m) => m.updateKl !== undefined);
    expect(updated.length).toBeGreaterThan(0);
    for (const m of updated) expect(m.updateScale).toBeGreaterThan(0);
    const same = await runCli(toy(out, '--steps', '3', '--lr', '0.01', '--max-update-kl', '0.0001', '--resume'));
    expect(same.code, same.stderr).toBe(0);
    expect(JSON.parse(same.stdout)).toMatchObject({ status: 'done', steps: 3, stepsRun: 0 });

    const other = await runCli(['train', '--out', out, '--resume', '--group', '8', '--seed', '2', '--extra-rollouts', '0', '--max-update-kl', '0', '--backend', 'gpu']);
    expect(other.code).toBe(2);
    expect(other.stderr).toMatch(/flags differ from its settings: --group 8 \(the run has 4\); --extra-rollouts 0 \(the run has 32\); --max-update-kl 0 \(the run has 0.0001\); --backend gpu \(the run has cpu\)/);

    const runBefore = readFileSync(join(out, 'run.json'), 'utf8');
    const shorter = await runCli(['train', '--out', out, '--resume', '--steps', '2']);
    expect(shorter.code).toBe(2);
    expect(shorter.stderr).toMatch(/--steps 2 is fewer than the run's 3 steps/);
    expect(readFileSync(join(out, 'run.json'), 'utf8')).toBe(runBefore);

    const longer = await runCli(['train', '--out', out, '--resume', '--steps', '5']);
    expect(longer.code, longer.stderr).toBe(0);
    expect(longer.stderr).toMatch(/note: extending the run from 3 to 5 steps; its learning rate now decays over 5 steps/);
    expect(JSON.parse(longer.stdout)).toMatchObject({ status: 'done', steps: 5, stepsRun: 2 });
    expect(runJson(out).spec).toMatchObject({ steps: 5, grpo: { lrDecaySteps: 5 } });
    // The optimizer took steps 4 and 5 on the new schedule.
    const state = JSON.parse(readFileSync(join(out, 'checkpoints', 'step-000005', 'trainer_state.json'), 'utf8')) as { config: { lrDecaySteps: number } };
    expect(state.config.lrDecaySteps).toBe(5);
  }, 180_000);

  it('a garbage run.json is named', async () => {
    const out = join(tmp(), 'run');
    mkdirSync(out);
    writeFileSync(join(out, 'run.json'), '{"id": ');
    const r = await runCli(['train', '--out', out, '--resume']);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(`${join(out, 'run.json')} is not valid JSON`);
    writeFileSync(join(out, 'run.json'), '{"id": "x", "status": "done"}');
    const r2 = await runCli(['train', '--out', out, '--resume']);
    expect(r2.code).toBe(2);
    expect(r2.stderr).toContain(`${join(out, 'run.json')} is not a training run's record`);
  }, 60_000);

  it("a flipped bit in the newest checkpoint's adapter is caught by its hash: resume falls back to the one before and says so", async () => {
    const out = join(tmp(), 'run');
    expect((await runCli(toy(out, '--steps', '3'))).code).toBe(0);
    const file = join(out, 'checkpoints', 'step-000003', 'adapter_model.safetensors');
    const bytes = readFileSync(file);
    bytes[bytes.length - 3] ^= 0x01; // a mantissa bit of the last weight: the file still parses
    writeFileSync(file, bytes);
    const r = await runCli(['train', '--out', out, '--resume', '--steps', '4']);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toMatch(/note: resumed from the checkpoint of step 2: newer ones could not be read \(.*step-000003.*adapter_model\.safetensors does not match its sha256/);
    expect(JSON.parse(r.stdout)).toMatchObject({ status: 'done', steps: 4, stepsRun: 2 });
  }, 120_000);

  it('run.json keeps the result relative to the directory: a copied run resumes and publishes from its own checkpoints', async () => {
    const dir = tmp();
    const out = join(dir, 'run');
    expect((await runCli(toy(out, '--steps', '2'))).code).toBe(0);
    expect(runJson(out).result!.adapterId).toMatch(/^checkpoints\/step-00000\d$/);
    const copy = join(dir, 'copy');
    cpSync(out, copy, { recursive: true });
    const r = await runCli(['train', '--out', copy, '--resume', '--steps', '3']);
    expect(r.code, r.stderr).toBe(0);
    const summary = JSON.parse(r.stdout) as { result: { adapterId: string }; adapter: string };
    expect(summary.result.adapterId.startsWith(copy)).toBe(true);
    expect(summary.adapter).toBe(join(copy, 'adapter'));
  }, 120_000);

  it('--task toy with no other flag reaches a rolling reward of 0.9, and stderr and metrics.jsonl say which steps had no reward signal', async () => {
    const out = join(tmp(), 'run');
    const r = await runCli(['train', '--task', 'toy', '--out', out]);
    expect(r.code, r.stderr).toBe(0);
    const summary = JSON.parse(r.stdout) as { status: string; steps: number; learned: boolean; noLearning?: string; result: { rollingReward: number } };
    expect(summary).toMatchObject({ status: 'done', steps: 150, learned: true });
    expect(summary.noLearning).toBeUndefined();
    const metrics = readFileSync(join(out, 'metrics.jsonl'), 'utf8').trim().split('\n').map((l) => JSON.parse(l) as { step: number; rollingReward: number; noSignal?: string });
    expect(metrics.at(-1)!.rollingReward).toBeGreaterThanOrEqual(0.9);
    expect(summary.result.rollingReward).toBeGreaterThanOrEqual(0.9);
    // Once solved, a step whose groups all succeed has no reward signal and (beta 0) takes no update: said on both.
    const quiet = metrics.filter((m) => m.noSignal);
    expect(quiet.length).toBeGreaterThan(0);
    expect(quiet[0].noSignal).toBe("every group's rewards were equal (6 all 1): no update");
    expect(r.stderr).toContain(`step ${quiet[0].step}/150: `);
    expect(r.stderr).toMatch(new RegExp(`step ${quiet[0].step}/150: .*no reward signal: every group's rewards were equal \\(6 all 1\\): no update`));
    expect(r.stderr).not.toMatch(/learned anything/);
  }, 180_000);
});

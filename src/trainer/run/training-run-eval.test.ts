// Held-out evaluation on a run's schedule (spec.evaluation + RunDeps.evaluator), with the memory store and
// scripted collector, optimizer and evaluator: which steps are evaluated and with which checkpoint, a failed
// evaluation recorded while the run goes on, a pause mid-evaluation redone on resume, and the stores' files.
import 'fake-indexeddb/auto';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { resolveGrpoConfig } from '../grpo-config';
import type { StepStats } from '../grpo-step';
import type { PolicyTrainer } from '../training-host';
import type { RolloutCollector } from './collector';
import type { EvalPoint } from './metrics';
import { EVAL_FILE, DirRunStore } from './run-store-dir';
import { IdbRunStore } from './run-store-idb';
import { MemoryRunStore } from './run-store-memory';
import type { RunSpec, RunStore } from './run-store';
import type { CollectedGroup } from './rollout-samples';
import { checkSpec, TrainingRun, type RunEvaluator } from './training-run';

const collector: RolloutCollector = {
  items: 1,
  async collect(plans) {
    return plans.map((p): CollectedGroup => ({
      groupId: p.groupId,
      item: p.item,
      trajectories: p.rollouts.map((r, g) => ({
        rolloutId: r.id,
        rollout: g,
        reward: g === 0 ? 1 : 0,
        status: 'done',
        answer: null,
        skipped: [],
        turns: [{ turn: 1, promptTokens: [1, 2], responseTokens: [3], logprobs: [-0.5], adapterId: 'a', prompt: 'p', completion: 'c' }],
      })),
    }));
  },
};

/** An optimizer whose checkpoints outlive it (`saved`), so a second one resumes from the newest. */
function trainer(saved: number[], log: string[] = []): PolicyTrainer {
  let step = 0;
  return {
    async trainStart(o) {
      step = o.resume ? (saved.at(-1) ?? 0) : 0;
      return { runId: o.runId, adapterId: 'training:a', step, optimizerSteps: step, resumed: !!o.resume, config: resolveGrpoConfig(o.config ?? {}), skippedCheckpoints: [] };
    },
    async trainStep(samples) {
      step++;
      log.push(`train ${step}`);
      const stats: StepStats = { step, optimizerSteps: step, rewardMean: 0.5, loss: 0.1, kl: 0, clipFraction: 0, ratioMean: 1, gradNorm: 1, samples: samples.length, responseTokens: samples.length, tokens: 3 * samples.length, groups: 1, noGradientGroups: 0, groupStats: [], tokensPerSecond: 1, ms: { oldLogprobs: 0, refLogprobs: 0, update: 0, total: 0 } };
      return stats;
    },
    async trainCheckpoint() {
      if (saved.at(-1) !== step) saved.push(step);
      return { step, adapterId: `ckpt-${step}` };
    },
    trainStop: () => void log.push('stop'),
  };
}

const items = [{ query: 'q1', answer: '1' }, { query: 'q2', answer: '2' }];
// No checkpoint cadence (0): only evaluated, best and last steps are checkpointed; the window is the run.
const spec = (o: Partial<RunSpec> = {}): RunSpec => ({
  task: 'agent',
  label: 'test',
  dataset: 'd',
  steps: 5,
  grpo: { groupSize: 2, queriesPerStep: 1, checkpointEvery: 0 },
  adapter: { kind: 'fresh', rank: 2, alpha: 4, targets: ['q'] },
  keepCheckpoints: 2,
  bestWindow: 5,
  collector: {},
  evaluation: { every: 2, dataset: 'held-out.jsonl', kind: 'exact', items },
  ...o,
});

/** Scores `correct(step)` of the 2 items; logs each call, so its order against the updates shows. */
function evaluator(log: string[], correct: (step: number) => number | Error, before?: (step: number) => void): RunEvaluator {
  return {
    async evaluate({ step, onItem }) {
      log.push(`eval ${step}`);
      before?.(step);
      const c = correct(step);
      if (c instanceof Error) throw c;
      onItem?.(1, 2);
      onItem?.(2, 2);
      return { correct: c, total: 2, errors: 0 };
    },
  };
}

describe('TrainingRun: held-out evaluation', () => {
  it('evaluates the start adapter, every K-th step and the last step, each with its own checkpoint, before the optimizer stops', async () => {
    const log: string[] = [];
    const store = new MemoryRunStore();
    const seen: EvalPoint[] = [];
    const progress: string[] = [];
    const run = await TrainingRun.start('e', spec(), { collector, policy: trainer([], log), store, evaluator: evaluator(log, (s) => (s >= 4 ? 2 : s >= 2 ? 1 : 0)) });
    const summary = await run.run({ onEval: (p) => seen.push(p), onEvalProgress: (p) => progress.push(`${p.step}:${p.done}/${p.total}`) });
    expect(log).toEqual(['eval 0', 'train 1', 'train 2', 'eval 2', 'train 3', 'train 4', 'eval 4', 'train 5', 'eval 5', 'stop']);
    expect(run.evals.map((p) => [p.step, p.accuracy, p.correct, p.total, p.adapter])).toEqual([
      [0, 0, 0, 2, 'fresh LoRA adapter (rank 2, B = 0)'],
      [2, 0.5, 1, 2, 'ckpt-2'],
      [4, 1, 2, 2, 'ckpt-4'],
      [5, 1, 2, 2, 'ckpt-5'],
    ]);
    expect(seen).toEqual(run.evals);
    expect(progress.slice(0, 2)).toEqual(['0:1/2', '0:2/2']);
    for (const p of run.evals) expect(p.seconds).toBeGreaterThanOrEqual(0);
    expect(summary.evals?.map((p) => p.step)).toEqual([0, 2, 4, 5]);
    expect((await store.load('e'))!.evals).toEqual(run.evals);
  });

  it('records a failed evaluation with its error and goes on training', async () => {
    const log: string[] = [];
    const seen: EvalPoint[] = [];
    const run = await TrainingRun.start('f', spec(), { collector, policy: trainer([], log), store: new MemoryRunStore(), evaluator: evaluator(log, (s) => (s === 2 ? new Error('python tool crashed') : 1)) });
    const summary = await run.run({ onEval: (p) => seen.push(p) });
    expect(summary.status).toBe('done');
    expect(run.history).toHaveLength(5);
    const failed = run.evals.find((p) => p.step === 2)!;
    expect(failed).toMatchObject({ step: 2, error: 'python tool crashed', accuracy: 0, correct: 0, total: 0, adapter: 'ckpt-2' });
    expect(seen.find((p) => p.step === 2)?.error).toBe('python tool crashed');
    expect(run.evals.map((p) => p.step)).toEqual([0, 2, 4, 5]);
  });

  it.each([
    ['memory', () => new MemoryRunStore()],
    // The scripted checkpoints have no PEFT files to publish.
    ['a directory (eval.jsonl)', () => Object.assign(new DirRunStore(mkdtempSync(join(tmpdir(), 'agentflow-eval-resume-'))), { publish: undefined })],
  ] as Array<[string, () => RunStore]>)('in %s: an evaluation cut off by pause() is not stored and runs first on resume; evaluations after the checkpoint are forgotten', async (_where, makeStore) => {
    const saved: number[] = [];
    const store = makeStore();
    const log: string[] = [];
    let run!: TrainingRun;
    const ev = evaluator(log, () => 1, (s) => s === 4 && run.pause());
    run = await TrainingRun.start('p', spec(), { collector, policy: trainer(saved, log), store, evaluator: ev });
    const first = await run.run();
    expect(first.status).toBe('paused');
    expect(run.evals.map((p) => p.step)).toEqual([0, 2]);
    expect((await store.load('p'))!.evals?.map((p) => p.step)).toEqual([0, 2]);

    log.length = 0;
    const again = await TrainingRun.resume('p', { collector, policy: trainer(saved, log), store, evaluator: ev });
    await again.run();
    expect(log).toEqual(['eval 4', 'train 5', 'eval 5', 'stop']);
    expect(again.evals.map((p) => p.step)).toEqual([0, 2, 4, 5]);

    // A run resumed from an older checkpoint (newer ones unreadable) drops the evaluations of the steps it redoes.
    await store.appendEval((await store.load('p'))!, { step: 6, accuracy: 1, correct: 2, total: 2, seconds: 0, adapter: 'x' });
    const older = await TrainingRun.resume('p', { collector, policy: trainer([2], []), store, evaluator: ev });
    expect(older.evals.map((p) => p.step)).toEqual([0, 2]);
    expect((await store.load('p'))!.evals?.map((p) => p.step)).toEqual([0, 2]);
  });

  it('without an evaluator a scheduled run trains as before and says the evaluation is skipped', async () => {
    const run = await TrainingRun.start('n', spec(), { collector, policy: trainer([]), store: new MemoryRunStore() });
    expect(run.notes).toContain('this run has a held-out evaluation schedule, but no evaluator was given: it is skipped');
    const s = await run.run();
    expect(s.status).toBe('done');
    expect(run.evals).toEqual([]);
  });

  it('refuses a bad schedule, naming it', () => {
    expect(() => checkSpec(spec({ evaluation: { every: 0, dataset: 'h', kind: 'exact', items } }))).toThrow('training: evaluate every N steps needs a positive integer N, got 0');
    expect(() => checkSpec(spec({ evaluation: { every: 1, dataset: 'h.jsonl', kind: 'exact', items: [] } }))).toThrow('the held-out data “h.jsonl” has no item');
  });
});

describe('run stores keep evaluations', () => {
  const point = (step: number): EvalPoint => ({ step, accuracy: 0.5, correct: 1, total: 2, seconds: 0.1, adapter: `ckpt-${step}` });

  async function roundTrip(store: RunStore) {
    const run = { id: 'r', createdAt: 1, updatedAt: 1, status: 'paused' as const, spec: spec(), history: [], result: null };
    await store.save(run);
    for (const s of [0, 2, 4]) await store.appendEval(run, point(s));
    // Saving the record again (each step does) keeps them.
    await store.save(run);
    expect((await store.load('r'))!.evals).toEqual([point(0), point(2), point(4)]);
    await store.truncate('r', 3);
    expect((await store.load('r'))!.evals).toEqual([point(0), point(2)]);
  }

  it('in memory', () => roundTrip(new MemoryRunStore()));

  it('in IndexedDB', () => roundTrip(new IdbRunStore(`eval-store-${Math.random()}`)));

  it('in a directory: one eval.jsonl line per evaluation, kept by run.json rewrites, cut by truncate', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'agentflow-eval-store-'));
    await roundTrip(new DirRunStore(dir));
    const lines = readFileSync(join(dir, EVAL_FILE), 'utf8').split('\n');
    expect(lines.filter(Boolean).map((l) => (JSON.parse(l) as EvalPoint).step)).toEqual([0, 2]);
    expect(lines.at(-1)).toBe('');
    expect(JSON.parse(readFileSync(join(dir, 'run.json'), 'utf8'))).not.toHaveProperty('evals');
  });
});

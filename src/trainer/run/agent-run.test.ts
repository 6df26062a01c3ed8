// Agent-rollout runs without a model (scripted and probe engines, a trainer that records what it is asked):
// the spec from the Training tab's settings (start adapter, rollout concurrency bounds), what the optimizer is
// asked when a run starts and resumes, a step's groups played concurrently and trained on in rollout order,
// and the planner's batching figure from its decode counters.
import 'fake-indexeddb/auto';
import { describe, expect, it } from 'vitest';
import { multiplyTool } from '../../../tests/support/test-tools';
import { ProbeEngine, type ProbeReplyFn } from '../../agent/probe-engine';
import { ScriptedEngine } from '../../agent/scripted-engine';
import { openAgentDb } from '../../store/db';
import { resolveGrpoConfig } from '../grpo-config';
import type { StepStats } from '../grpo-step';
import type { TurnSample } from '../../model/samples';
import type { PolicyTrainer, TrainSessionInfo } from '../training-host';
import { agentRunData, agentRunDeps, agentRunSpec, type AgentBudget, type AgentRunSettings } from './agent-run';
import type { StepMetrics } from './metrics';
import { IdbRunStore } from './run-store-idb';
import { TrainingRun } from './training-run';

/** Records trainStart's arguments and answers like a session that has not stepped yet. */
function recordingTrainer(): PolicyTrainer & { starts: Array<Parameters<PolicyTrainer['trainStart']>[0]> } {
  const starts: Array<Parameters<PolicyTrainer['trainStart']>[0]> = [];
  return {
    starts,
    async trainStart(o) {
      starts.push(structuredClone(o));
      const info: TrainSessionInfo = { runId: o.runId, adapterId: `training:${o.runId}`, step: 0, optimizerSteps: 0, resumed: false, config: resolveGrpoConfig(o.config ?? {}), skippedCheckpoints: [] };
      return info;
    },
    trainStep: () => Promise.reject(new Error('not stepped in this test')),
    trainCheckpoint: () => Promise.reject(new Error('not checkpointed in this test')),
    trainStop: () => undefined,
  };
}

const settings: AgentRunSettings = { benchmark: { name: 'mini', kind: 'exact', items: [{ query: 'What is 2+2?', answer: '4' }] }, planner: 'planner:test', groupSize: 2, steps: 3, learningRate: 2e-5, adapter: { kind: 'fresh', rank: 4, alpha: 8, targets: ['q', 'v'] } };

function env(o: { trainer: PolicyTrainer; engines: { planner: import('../../engine/chat-engine').ChatEngine; shared: import('../../engine/chat-engine').ChatEngine }; dbName: string; decodeStats?: () => Promise<{ steps: number; rows: number }> }) {
  return { engines: o.engines, tools: [multiplyTool], policy: o.trainer, store: new IdbRunStore(o.dbName), dbName: o.dbName, ...(o.decodeStats ? { decodeStats: o.decodeStats } : {}) };
}

async function start(id: string, s: AgentRunSettings, o: Parameters<typeof env>[0]): Promise<TrainingRun> {
  const spec = agentRunSpec(s);
  return TrainingRun.start(id, spec, agentRunDeps(id, spec, env(o)));
}

async function resume(id: string, o: Parameters<typeof env>[0]): Promise<TrainingRun> {
  const stored = await new IdbRunStore(o.dbName).load(id);
  return TrainingRun.resume(id, agentRunDeps(id, stored!.spec, env(o)));
}

describe('agent runs from a stored adapter', () => {
  it('asks the optimizer for the stored adapter, names it in the label and the stored spec, and resumes from it before any checkpoint', async () => {
    const dbName = `agent-start-${Math.random()}`;
    const engines = { planner: new ScriptedEngine({}, 'planner:test'), shared: new ScriptedEngine({}, 'shared:test') };
    const trainer = recordingTrainer();
    const run = await start('run-s', { ...settings, adapter: { kind: 'stored', id: 'run-a@step-10', name: 'run-a step 10' } }, { trainer, engines, dbName });
    expect(trainer.starts).toHaveLength(1);
    expect(trainer.starts[0]).toMatchObject({ runId: 'run-s', adapter: { adapterId: 'run-a@step-10' }, config: { learningRate: 2e-5 } });
    expect(run.spec.label).toBe('Planner on agent rollouts of “mini” (planner:test), from adapter “run-a step 10”');
    expect((await new IdbRunStore(dbName).load('run-s'))!.spec.adapter).toEqual({ kind: 'stored', id: 'run-a@step-10', name: 'run-a step 10' });
    // A reload: the optimizer is asked to resume; it falls back to the start adapter only while no checkpoint exists.
    await resume('run-s', { trainer, engines, dbName });
    expect(trainer.starts[1]).toMatchObject({ runId: 'run-s', adapter: { adapterId: 'run-a@step-10' }, resume: true });
  });

  it('starts a fresh adapter from the rank and targets when no stored adapter is chosen', async () => {
    const dbName = `agent-fresh-${Math.random()}`;
    const engines = { planner: new ScriptedEngine({}, 'planner:test'), shared: new ScriptedEngine({}, 'shared:test') };
    const trainer = recordingTrainer();
    const run = await start('run-f', settings, { trainer, engines, dbName });
    expect(trainer.starts[0].adapter).toEqual({ rank: 4, alpha: 8, targets: ['q', 'v'] });
    expect(run.spec.label).toBe('Planner on agent rollouts of “mini” (planner:test)');
  });

  it('refuses to continue a run with another planner loaded', async () => {
    const dbName = `agent-other-${Math.random()}`;
    const trainer = recordingTrainer();
    await start('run-o', settings, { trainer, engines: { planner: new ScriptedEngine({}, 'planner:test'), shared: new ScriptedEngine({}, 's') }, dbName });
    await expect(resume('run-o', { trainer, engines: { planner: new ScriptedEngine({}, 'planner:other'), shared: new ScriptedEngine({}, 's') }, dbName })).rejects.toThrow(
      'training run “Planner on agent rollouts of “mini” (planner:test)” trains planner planner:test, but planner:other is loaded; load that planner to continue it',
    );
  });
});

// Replies that depend only on the call: the planner multiplies 7 by its seed; the verifier stops at an odd
// product or after two turns. Seeds ≡ 0 (mod 3) reply more slowly, so concurrent rollouts finish out of order.
const byCall: ProbeReplyFn = (module, messages, options) => {
  const user = messages[messages.length - 1].content;
  const plan = (seed: number) => JSON.stringify({ justification: `seed ${seed}`, context: '', sub_goal: `Multiply 7 by ${seed}`, tool_name: 'Multiply_Tool' });
  switch (module) {
    case 'planner':
      return { text: plan(options.seed!), delayMs: options.seed! % 3 === 0 ? 15 : 1 };
    case 'executor': {
      const [, a, b] = /Sub-goal: Multiply (\d+) by (\d+)/.exec(user) ?? [];
      return `{"a": ${a}, "b": ${b}}`;
    }
    case 'verifier': {
      const results = [...user.matchAll(/Result: (\d+)/g)].map((m) => Number(m[1]));
      return results.some((r) => r % 2 === 1) || results.length >= 2 ? '{"verdict": "STOP"}' : '{"verdict": "CONTINUE"}';
    }
    case 'generator':
      return `<answer>${/Result: (\d+)/.exec(user)?.[1] ?? 'none'}</answer>`;
    default:
      return 'Multiply.';
  }
};

const budget: AgentBudget = { maxTurns: 3, plannerTokens: 64, moduleTokens: 64, queriesPerStep: 1, microBatchTokens: 1024 };

/** Takes steps without a model: records each batch and answers with finite statistics. */
function steppingTrainer() {
  const batches: TurnSample[][] = [];
  const trainer: PolicyTrainer = {
    async trainStart(o) {
      return { runId: o.runId, adapterId: `training:${o.runId}`, step: 0, optimizerSteps: 0, resumed: false, config: resolveGrpoConfig(o.config ?? {}), skippedCheckpoints: [] };
    },
    async trainStep(samples) {
      batches.push(samples);
      const rewardMean = samples.reduce((a, s) => a + s.reward, 0) / samples.length;
      const stats: StepStats = {
        step: batches.length,
        optimizerSteps: batches.length,
        rewardMean,
        loss: 0,
        kl: 0,
        clipFraction: 0,
        ratioMean: 1,
        gradNorm: 0,
        samples: samples.length,
        responseTokens: 0,
        tokens: 0,
        groups: 1,
        noGradientGroups: 0,
        groupStats: [],
        tokensPerSecond: 0,
        ms: { oldLogprobs: 0, refLogprobs: 0, update: 0, total: 0 },
      };
      return stats;
    },
    async trainCheckpoint() {
      return { step: batches.length, adapterId: `ckpt-${batches.length}` };
    },
    trainStop: () => undefined,
  };
  return { trainer, batches };
}

describe('agent runs: rollout concurrency and batching figures', () => {
  const mult = { name: 'mult', kind: 'numeric' as const, items: [{ query: 'What is 7 times 6?', answer: '42' }] };
  const base: AgentRunSettings = { ...settings, benchmark: mult, planner: 'probe' };

  it('defaults to min(group size, 8), keeps a given value, and rejects one that is not an integer from 1 to 8', () => {
    const conc = (groupSize: number, b: Partial<AgentBudget> = {}) => agentRunData(agentRunSpec({ ...base, groupSize, budget: b })).budget.rolloutConcurrency;
    expect(conc(2)).toBe(2);
    expect(conc(6)).toBe(6);
    expect(conc(12)).toBe(8);
    expect(conc(6, { rolloutConcurrency: 1 })).toBe(1);
    expect(conc(12, { rolloutConcurrency: 8 })).toBe(8);
    for (const bad of [0, 2.5, -3]) expect(() => conc(2, { rolloutConcurrency: bad })).toThrow(`training: rolloutConcurrency must be a positive integer, got ${bad}`);
    for (const many of [9, 16]) expect(() => conc(16, { rolloutConcurrency: many })).toThrow(`training: rolloutConcurrency must be at most 8, got ${many}`);
  });

  it('refuses to continue a stored run whose rolloutConcurrency is above 8', async () => {
    const dbName = `agent-conc-stored-${Math.random()}`;
    const engine = new ProbeEngine(byCall);
    const { trainer, batches } = steppingTrainer();
    const o = { trainer, engines: { planner: engine, shared: engine }, dbName };
    await start('run-c', { ...base, groupSize: 12, steps: 1, budget }, o);
    const db = await openAgentDb(dbName);
    const rec = (await db.get('trainingRuns', 'run-c'))!;
    ((rec.config as { spec: { collector: { budget: AgentBudget } } }).spec.collector.budget).rolloutConcurrency = 12;
    await db.put('trainingRuns', rec);
    await expect(resume('run-c', o)).rejects.toThrow('training: rolloutConcurrency must be at most 8, got 12');
    expect(engine.calls).toHaveLength(0);
    expect(batches).toHaveLength(0);
  });

  it('runs a step’s group concurrently and trains on its samples in rollout order', async () => {
    const dbName = `agent-conc-run-${Math.random()}`;
    const engine = new ProbeEngine(byCall, 'probe', { overlapCalls: 2 });
    const { trainer, batches } = steppingTrainer();
    const run = await start('run-r', { ...base, groupSize: 3, steps: 1, budget }, { trainer, engines: { planner: engine, shared: engine }, dbName });
    const points: StepMetrics[] = [];
    await run.run({ onStep: (p) => void points.push(p) });
    expect(run.state).toBe('done');
    // No decode counters from this trainer: the step has its rollout time but no batching figure.
    expect(points).toHaveLength(1);
    expect(points[0].rolloutSeconds).toBeGreaterThanOrEqual(0);
    expect(points[0].plannerSequencesPerStep).toBeUndefined();
    expect(engine.maxInFlight).toBeGreaterThan(1);
    expect(engine.maxInFlight).toBeLessThanOrEqual(3);
    expect(batches).toHaveLength(1);
    // Rollout order, each one's turns in order; a group with no success has extra rollouts after its first 3.
    const order = batches[0].map((s) => [Number(s.rolloutId.split(':r').pop()), s.turn]);
    expect(order).toEqual([...order].sort((a, b) => a[0] - b[0] || a[1] - b[1]));
    const rollouts = [...new Set(order.map((t) => t[0]))];
    expect(rollouts).toEqual([...Array(3 + (points[0].extraRollouts ?? 0)).keys()]);
  });

  it('records the planner’s sequences per decode step over each step’s rollouts, from its decode counters', async () => {
    const dbName = `agent-conc-decode-${Math.random()}`;
    const engine = new ProbeEngine(byCall, 'probe', { overlapCalls: 2 });
    const { trainer } = steppingTrainer();
    // Counters as a planner runtime keeps them: before step 1's rollouts, after them (10 steps for 25 rows),
    // after step 2's (4 steps for 6 rows); a failed read shows no figure rather than failing the step.
    const reads = [{ steps: 5, rows: 5 }, { steps: 15, rows: 30 }, { steps: 15, rows: 30 }, { steps: 19, rows: 36 }];
    let read = 0;
    const decodeStats = async () => {
      if (read === reads.length) throw new Error('worker gone');
      return reads[read++];
    };
    const run = await start('run-d', { ...base, groupSize: 2, steps: 3, budget }, { trainer, engines: { planner: engine, shared: engine }, dbName, decodeStats });
    const points: StepMetrics[] = [];
    await run.run({ onStep: (p) => void points.push(p) });
    expect(points.map((p) => p.plannerSequencesPerStep)).toEqual([2.5, 1.5, undefined]);
    expect(points.every((p) => Number.isFinite(p.rolloutSeconds))).toBe(true);
    // The figures are stored with the run's history.
    const stored = (await new IdbRunStore(dbName).load('run-d'))!.history;
    expect(stored.map((p) => p.plannerSequencesPerStep)).toEqual([2.5, 1.5, undefined]);
  });
});

describe('agent runs: held-out evaluation (spec.evaluation)', () => {
  const mult = { name: 'mult', kind: 'numeric' as const, items: [{ query: 'What is 7 times 6?', answer: '42' }] };
  // At temperature 0 with the run's seed 1, item i's planner draws with seed 1 + i: 7 (odd, stops) and 14.
  const heldOut = [{ query: 'What is 7 times 1?', answer: '7' }, { query: 'What is 7 times 3?', answer: '21' }];

  it('plays the held-out items through the agent loop at temperature 0 after each scheduled step and stores the accuracy', async () => {
    const dbName = `agent-eval-${Math.random()}`;
    const engine = new ProbeEngine(byCall);
    const { trainer, batches } = steppingTrainer();
    const spec = agentRunSpec({ ...settings, benchmark: mult, planner: 'probe', groupSize: 2, steps: 2, budget });
    spec.evaluation = { every: 1, dataset: 'held-out.jsonl', kind: 'numeric', items: heldOut };
    const seenItems: Array<[number, boolean | undefined]> = [];
    const deps = agentRunDeps('run-e', spec, { ...env({ trainer, engines: { planner: engine, shared: engine }, dbName }), onEvalItem: (step, rec) => seenItems.push([step, rec.correct]) });
    const run = await TrainingRun.start('run-e', spec, deps);
    const trainingCalls = () => engine.calls.filter((c) => c.module === 'planner' && c.options.temperature !== 0).length;
    const evalPlannerTemps: number[] = [];
    await run.run({ onEval: () => evalPlannerTemps.push(engine.calls.filter((c) => c.module === 'planner' && c.options.temperature === 0).length) });
    expect(batches).toHaveLength(2);
    expect(run.evals.map((p) => [p.step, p.correct, p.total, p.accuracy, p.adapter])).toEqual([
      [0, 1, 2, 0.5, 'fresh LoRA adapter (rank 4, B = 0)'],
      [1, 1, 2, 0.5, 'ckpt-1'],
      [2, 1, 2, 0.5, 'ckpt-2'],
    ]);
    expect(seenItems).toEqual([[0, true], [0, false], [1, true], [1, false], [2, true], [2, false]]);
    // Each evaluation's planner calls are greedy, and the rollouts' are not.
    expect(evalPlannerTemps[0]).toBeGreaterThanOrEqual(2);
    expect(evalPlannerTemps).toEqual([...evalPlannerTemps].sort((a, b) => a - b));
    expect(trainingCalls()).toBeGreaterThan(0);
    expect((await new IdbRunStore(dbName).load('run-e'))!.evals?.map((p) => p.step)).toEqual([0, 1, 2]);
  });
});

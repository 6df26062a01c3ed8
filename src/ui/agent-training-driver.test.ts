// What AgentTrainingDriver asks the planner worker for when a run starts from a stored adapter, and what the
// run record keeps; the worker side (TrainingHost loading the stored adapter) runs for real in
// agent-training-driver.node.gpu.test.ts.
import 'fake-indexeddb/auto';
import { describe, expect, it } from 'vitest';
import { multiplyTool } from '../../tests/support/tiny-agent';
import { ProbeEngine, type ProbeReplyFn } from '../agent/probe-engine';
import { ScriptedEngine } from '../agent/scripted-engine';
import type { SessionResult } from '../agent/session';
import { getConversation } from '../store/conversations';
import { openAgentDb } from '../store/db';
import type { StepStats } from '../trainer/grpo-step';
import type { TurnSample } from '../trainer/samples';
import { resolveGrpoConfig } from '../trainer/config';
import type { TrainSessionInfo } from '../trainer/worker-trainer';
import { AgentTrainingDriver, collectGroup, rolloutAgentConfig, type AgentBudget, type PlannerTrainer } from './agent-training-driver';
import type { TrainingSettings, TrainingStepPoint } from './training-driver';

/** Records trainStart's arguments and answers like a session that has not stepped yet. */
function recordingTrainer(): PlannerTrainer & { starts: Array<Parameters<PlannerTrainer['trainStart']>[0]> } {
  const starts: Array<Parameters<PlannerTrainer['trainStart']>[0]> = [];
  return {
    starts,
    async trainStart(o) {
      starts.push(structuredClone(o));
      const info: TrainSessionInfo = { runId: o.runId, adapterId: `training:${o.runId}`, step: 0, optimizerSteps: 0, resumed: false, config: resolveGrpoConfig(o.config ?? {}) };
      return info;
    },
    trainStep: () => Promise.reject(new Error('not stepped in this test')),
    trainCheckpoint: () => Promise.reject(new Error('not checkpointed in this test')),
    trainStop: () => undefined,
  };
}

const settings: TrainingSettings = { dataset: 'agent', reward: 'benchmark', groupSize: 2, steps: 3, learningRate: 2e-5, rank: 4, targets: ['q', 'v'] };
const benchmark = { name: 'mini', kind: 'exact' as const, items: [{ pid: '1', query: 'What is 2+2?', answer: '4' }] };

describe('AgentTrainingDriver from a stored adapter', () => {
  it('asks the worker for the stored adapter, names it in the label and the run record, and resumes from it before any checkpoint', async () => {
    const dbName = `agent-start-${Math.random()}`;
    const engines = { planner: new ScriptedEngine({}, 'planner:test'), shared: new ScriptedEngine({}, 'shared:test') };
    const trainer = recordingTrainer();
    const start = { id: 'run-a@step-10', name: 'run-a step 10' };
    const d = await AgentTrainingDriver.create({ ...settings, startAdapter: start }, benchmark, { trainer, engines, tools: [], dbName });
    expect(trainer.starts).toHaveLength(1);
    expect(trainer.starts[0]).toMatchObject({ runId: d.runId, adapter: { adapterId: start.id }, config: { learningRate: 2e-5 } });
    expect(d.label).toBe('Planner on agent rollouts of “mini” (planner:test), from adapter “run-a step 10”');
    const db = await openAgentDb(dbName);
    const rec = await db.get('trainingRuns', d.runId);
    expect((rec?.config as { settings: TrainingSettings }).settings.startAdapter).toEqual(start);

    // A reload before the first checkpoint: the run starts over from the same stored adapter.
    await AgentTrainingDriver.resume(d.runId, { trainer, engines, tools: [], dbName });
    expect(trainer.starts[1]).toMatchObject({ runId: d.runId, adapter: { adapterId: start.id }, resume: true });
    // After a checkpoint, the checkpoint's adapter wins, so the start adapter is not needed (it may be deleted).
    await db.put('checkpoints', { id: `${d.runId}#1`, runId: d.runId, step: 1, createdAt: 1, adapterId: `${d.runId}@step-1`, moments: {}, rngState: 0 });
    await AgentTrainingDriver.resume(d.runId, { trainer, engines, tools: [], dbName });
    expect(trainer.starts[2]).toMatchObject({ runId: d.runId, adapter: { rank: 4, alpha: 8, targets: ['q', 'v'] }, resume: true });
  });

  it('starts a fresh adapter from the form’s rank and targets when no stored adapter is chosen', async () => {
    const dbName = `agent-fresh-${Math.random()}`;
    const engines = { planner: new ScriptedEngine({}, 'planner:test'), shared: new ScriptedEngine({}, 'shared:test') };
    const trainer = recordingTrainer();
    const d = await AgentTrainingDriver.create(settings, benchmark, { trainer, engines, tools: [], dbName });
    expect(trainer.starts[0].adapter).toEqual({ rank: 4, alpha: 8, targets: ['q', 'v'] });
    expect(d.label).toBe('Planner on agent rollouts of “mini” (planner:test)');
    const rec = await (await openAgentDb(dbName)).get('trainingRuns', d.runId);
    expect((rec?.config as { settings: TrainingSettings }).settings.startAdapter).toBeNull();
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

/** Samples with the conversation ids replaced by the rollout index (conversation ids are random). */
function byRollout(samples: TurnSample[], results: SessionResult[]) {
  const index = new Map(results.map((r, i) => [r.conversationId, i]));
  return samples.map((s) => ({ ...s, rolloutId: index.get(s.rolloutId) }));
}

describe('collectGroup with concurrent rollouts', () => {
  async function group(concurrency: number) {
    const dbName = `collect-${Math.random()}`;
    const engine = new ProbeEngine(byCall, 'probe', concurrency > 1 ? { overlapCalls: 2 } : {});
    const g = await collectGroup({
      runId: 'run',
      groupId: 'run:step1:item0',
      item: { pid: '0', query: 'What is 7 times 6?', answer: '42' },
      kind: 'numeric',
      seeds: [3, 4, 5, 6],
      agent: (seed) => rolloutAgentConfig(budget, 1, seed),
      engines: { planner: engine, shared: engine },
      tools: [multiplyTool],
      concurrency,
      dbName,
    });
    const titles = await Promise.all(g.results.map(async (r) => (await getConversation(r.conversationId, dbName))!.title));
    return { g, engine, titles, samples: byRollout(g.samples, g.results) };
  }

  it('returns results and samples in rollout order, equal to one rollout at a time', async () => {
    const one = await group(1);
    const three = await group(3);
    expect(one.engine.maxInFlight).toBe(1);
    expect(three.engine.maxInFlight).toBeGreaterThan(1);
    expect(three.titles).toEqual(['run:step1:item0 #1', 'run:step1:item0 #2', 'run:step1:item0 #3', 'run:step1:item0 #4']);
    expect(three.titles).toEqual(one.titles);
    expect(three.samples).toEqual(one.samples);
    // Seeds 3..6: 21 and 35 are odd (one turn), 28 and 42 even (two turns); only 42 is right.
    expect(three.g.results.map((r) => [r.finalAnswer, r.reward])).toEqual([
      ['21', 0],
      ['28', 0],
      ['35', 0],
      ['42', 1],
    ]);
    expect(three.samples.map((s) => [s.rolloutId, s.turn, s.reward])).toEqual([
      [0, 1, 0],
      [1, 1, 0],
      [1, 2, 0],
      [2, 1, 0],
      [3, 1, 1],
      [3, 2, 1],
    ]);
    expect(three.samples[3].responseTokens.length).toBe(JSON.stringify({ justification: 'seed 5', context: '', sub_goal: 'Multiply 7 by 5', tool_name: 'Multiply_Tool' }).length);
  });
});

/** Takes steps without a model: records each batch and answers with finite statistics. */
function steppingTrainer() {
  const batches: TurnSample[][] = [];
  const trainer: PlannerTrainer = {
    async trainStart(o) {
      return { runId: o.runId, adapterId: `training:${o.runId}`, step: 0, optimizerSteps: 0, resumed: false, config: resolveGrpoConfig(o.config ?? {}) };
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

describe('AgentTrainingDriver rollout concurrency', () => {
  const mult = { name: 'mult', kind: 'numeric' as const, items: [{ pid: '0', query: 'What is 7 times 6?', answer: '42' }] };
  const storedBudget = async (runId: string, dbName: string) => ((await (await openAgentDb(dbName)).get('trainingRuns', runId))!.config as { budget: AgentBudget }).budget;

  it('defaults to min(group size, 8), keeps a given value, and rejects one that is not an integer from 1 to 8', async () => {
    const dbName = `agent-conc-${Math.random()}`;
    const engines = { planner: new ScriptedEngine({}, 'planner:test'), shared: new ScriptedEngine({}, 'shared:test') };
    const { trainer } = steppingTrainer();
    const two = await AgentTrainingDriver.create(settings, mult, { trainer, engines, tools: [], dbName });
    expect((await storedBudget(two.runId, dbName)).rolloutConcurrency).toBe(2);
    const six = await AgentTrainingDriver.create({ ...settings, groupSize: 6 }, mult, { trainer, engines, tools: [], dbName });
    expect((await storedBudget(six.runId, dbName)).rolloutConcurrency).toBe(6);
    const twelve = await AgentTrainingDriver.create({ ...settings, groupSize: 12 }, mult, { trainer, engines, tools: [], dbName });
    expect((await storedBudget(twelve.runId, dbName)).rolloutConcurrency).toBe(8);
    const given = await AgentTrainingDriver.create({ ...settings, groupSize: 6 }, mult, { trainer, engines, tools: [], dbName }, { rolloutConcurrency: 1 });
    expect((await storedBudget(given.runId, dbName)).rolloutConcurrency).toBe(1);
    const most = await AgentTrainingDriver.create({ ...settings, groupSize: 12 }, mult, { trainer, engines, tools: [], dbName }, { rolloutConcurrency: 8 });
    expect((await storedBudget(most.runId, dbName)).rolloutConcurrency).toBe(8);
    const recorder = recordingTrainer();
    for (const bad of [0, 2.5, -3]) {
      await expect(AgentTrainingDriver.create(settings, mult, { trainer: recorder, engines, tools: [], dbName }, { rolloutConcurrency: bad })).rejects.toThrow(
        `training: rolloutConcurrency must be a positive integer, got ${bad}`,
      );
    }
    for (const many of [9, 16]) {
      await expect(AgentTrainingDriver.create({ ...settings, groupSize: 16 }, mult, { trainer: recorder, engines, tools: [], dbName }, { rolloutConcurrency: many })).rejects.toThrow(
        `training: rolloutConcurrency must be at most 8, got ${many}`,
      );
    }
    expect(recorder.starts).toHaveLength(0);
  });

  it('refuses to run a stored run whose rolloutConcurrency is above 8 (written before the bound was checked here)', async () => {
    const dbName = `agent-conc-stored-${Math.random()}`;
    const engine = new ProbeEngine(byCall);
    const { trainer, batches } = steppingTrainer();
    const deps = { trainer, engines: { planner: engine, shared: engine }, tools: [multiplyTool], dbName };
    const created = await AgentTrainingDriver.create({ ...settings, groupSize: 12, steps: 1 }, mult, deps, budget);
    const db = await openAgentDb(dbName);
    const rec = (await db.get('trainingRuns', created.runId))!;
    (rec.config as { budget: AgentBudget }).budget.rolloutConcurrency = 12;
    await db.put('trainingRuns', rec);
    const d = await AgentTrainingDriver.resume(created.runId, deps);
    await expect(d.run(() => undefined)).rejects.toThrow('training: rolloutConcurrency must be at most 8, got 12');
    expect(d.state).toBe('error');
    expect(engine.calls).toHaveLength(0);
    expect(batches).toHaveLength(0);
  });

  it('runs a step’s group concurrently and trains on its samples in rollout order, also for a run stored before the setting', async () => {
    const dbName = `agent-conc-run-${Math.random()}`;
    const engine = new ProbeEngine(byCall, 'probe', { overlapCalls: 2 });
    const { trainer, batches } = steppingTrainer();
    const deps = { trainer, engines: { planner: engine, shared: engine }, tools: [multiplyTool], dbName };
    const created = await AgentTrainingDriver.create({ ...settings, groupSize: 3, steps: 1 }, mult, deps, budget);
    // A record written before rolloutConcurrency existed: resuming it gets the default (3 here).
    const db = await openAgentDb(dbName);
    const rec = (await db.get('trainingRuns', created.runId))!;
    delete (rec.config as { budget: Partial<AgentBudget> }).budget.rolloutConcurrency;
    await db.put('trainingRuns', rec);
    const d = await AgentTrainingDriver.resume(created.runId, deps);
    const points: TrainingStepPoint[] = [];
    await d.run((p) => void points.push(p));
    expect(d.state).toBe('done');
    // No decode counters from this trainer: the step has its rollout time but no batching figure.
    expect(points).toHaveLength(1);
    expect(points[0].rolloutSeconds).toBeGreaterThanOrEqual(0);
    expect(points[0].plannerSequencesPerStep).toBeUndefined();
    expect(engine.maxInFlight).toBeGreaterThan(1);
    expect(engine.maxInFlight).toBeLessThanOrEqual(3);
    expect(batches).toHaveLength(1);
    // Rollout order: the conversations titled #1, #2, #3, each one's turns in order.
    const titles = await Promise.all(batches[0].map(async (s) => `${(await getConversation(s.rolloutId, dbName))!.title.split(' ').pop()}@${s.turn}`));
    const sorted = [...titles].sort();
    expect(titles).toEqual(sorted);
    expect(new Set(titles.map((t) => t.split('@')[0]))).toEqual(new Set(['#1', '#2', '#3']));
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
    const deps = { trainer: { ...trainer, decodeStats }, engines: { planner: engine, shared: engine }, tools: [multiplyTool], dbName };
    const d = await AgentTrainingDriver.create({ ...settings, groupSize: 2, steps: 3 }, mult, deps, budget);
    const points: TrainingStepPoint[] = [];
    await d.run((p) => void points.push(p));
    expect(points.map((p) => p.plannerSequencesPerStep)).toEqual([2.5, 1.5, undefined]);
    expect(points.every((p) => Number.isFinite(p.rolloutSeconds))).toBe(true);
    // The figures are stored with the run's history.
    const stored = (await (await openAgentDb(dbName)).get('trainingRuns', d.runId))!.stats as unknown as TrainingStepPoint[];
    expect(stored.map((p) => p.plannerSequencesPerStep)).toEqual([2.5, 1.5, undefined]);
  });
});

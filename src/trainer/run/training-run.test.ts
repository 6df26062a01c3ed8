// The run's pieces without a model: the schedule (which queries a step plays, with which seeds and ids),
// the run's bookkeeping around an optimizer that skips a non-finite update, a step with nothing to train on,
// a spec refused before anything starts, and the best-step tracker.
import { describe, expect, it } from 'vitest';
import { groupAdvantages, groupStats } from '../../agent/advantages';
import { resolveGrpoConfig } from '../grpo-config';
import type { StepStats } from '../grpo-step';
import type { PolicyTrainer } from '../training-host';
import type { RolloutCollector } from './collector';
import { BestTracker } from './metrics';
import { MemoryRunStore } from './run-store-memory';
import type { RunSpec } from './run-store';
import { mixSeed, planStep, stepItems, strataCycle } from './schedule';
import type { CollectedGroup } from './rollout-samples';
import { checkSpec, TrainingRun } from './training-run';

describe('schedule', () => {
  it('walks a seeded permutation of the items, every item once per epoch, distinct within a step', () => {
    const steps = Array.from({ length: 6 }, (_, i) => stepItems(7, i + 1, 3, 5));
    for (const s of steps) expect(new Set(s).size).toBe(3);
    // 5 items, 3 per step: epoch 0 is the first 5 draws, the step straddling the epochs takes what it lacks.
    const flat = steps.flat();
    expect(new Set(flat.slice(0, 5))).toEqual(new Set([0, 1, 2, 3, 4]));
    // Deterministic from (seed, step) alone, whatever ran before.
    expect(stepItems(7, 4, 3, 5)).toEqual(steps[3]);
    expect(stepItems(8, 1, 3, 5)).not.toEqual(steps[0]);
    expect(() => stepItems(7, 1, 6, 5)).toThrow('queries per step must be 1 to 5 (the items), got 6');
    expect(() => stepItems(7, 0, 1, 5)).toThrow('step must be a positive integer, got 0');
  });

  it('plays the queries it played before: a run resumed on newer code redoes a step with the same groups', () => {
    // Computed by the schedule as of commit eba812c. In the last two a walk crosses into its next epoch within
    // the step and meets an item the step has (3 in [3, 0, 3]; 4 in [4, 5, 3, 4]): the next item is taken.
    const strata = Array.from({ length: 12 }, (_, i) => [2, 0, 1][i % 3]);
    expect([stepItems(7, 4, 3, 5), stepItems(5, 3, 3, 12, strata), stepItems(0, 3, 3, 4), stepItems(0, 2, 4, 6, [0, 1, 2, 0, 1, 2])]).toEqual([[1, 2, 3], [7, 8, 0], [3, 0, 2], [4, 5, 3, 1]]);
  });

  it('draws across strata in turn when items have strata: one of each a step, each stratum walking its own permutation', () => {
    // 12 items in 3 strata of 4 (interleaved, as a shuffled split is), 3 queries a step.
    const strata = Array.from({ length: 12 }, (_, i) => [2, 0, 1][i % 3]);
    const steps = Array.from({ length: 8 }, (_, i) => stepItems(5, i + 1, 3, 12, strata));
    for (const s of steps) expect(s.map((i) => strata[i]).sort()).toEqual([0, 1, 2]);
    // Four steps are one epoch of every stratum: each item once.
    expect(new Set(steps.slice(0, 4).flat()).size).toBe(12);
    expect(new Set(steps.slice(4, 8).flat()).size).toBe(12);
    expect(stepItems(5, 3, 3, 12, strata)).toEqual(steps[2]);
    // Without strata the same run draws at random: some step repeats a stratum.
    const random = Array.from({ length: 8 }, (_, i) => stepItems(5, i + 1, 3, 12));
    expect(random.some((s) => new Set(s.map((i) => strata[i])).size < 3)).toBe(true);
    // Fewer queries a step than strata: the strata rotate, so every one is drawn.
    const two = Array.from({ length: 6 }, (_, i) => stepItems(5, i + 1, 2, 12, strata)).flat();
    expect(two.map((i) => strata[i])).toEqual([0, 1, 2, 0, 1, 2, 0, 1, 2, 0, 1, 2]);
    for (let s = 0; s < 6; s++) expect(new Set(two.slice(2 * s, 2 * s + 2)).size).toBe(2);
    // Two a step from a stratum of one cannot be distinct.
    expect(() => stepItems(5, 1, 4, 4, [0, 0, 0, 1])).toThrow('stratum 1 has 1 items, fewer than the 2 a step of 4 queries takes from it');
    expect(() => stepItems(5, 1, 2, 4, [0, 1])).toThrow('2 strata for 4 items');
  });

  it('weights strata: a stratum of weight w comes up w times a cycle, spread through it, each still walking its own permutation', () => {
    expect(strataCycle([0, 1, 2, 3])).toEqual([0, 1, 2, 3]);
    // Smooth weighted round-robin, by hand: credits [1,1,1,3] → 3; [2,2,2,0] → 0; [-3,3,3,3] → 1; [-2,-2,4,6] → 3; [-1,-1,5,3] → 2; → 3.
    expect(strataCycle([0, 1, 2, 3], [1, 1, 1, 3])).toEqual([3, 0, 1, 3, 2, 3]);
    expect(strataCycle([0, 2], [2, 1])).toEqual([0, 2, 0]);
    expect(() => strataCycle([0, 1], [1, 0])).toThrow("stratum 1's weight must be an integer from 1 to 16, got 0");
    // 24 items in 4 strata of 6 (interleaved); the last stratum weighted 3: half of every 6 queries.
    const strata = Array.from({ length: 24 }, (_, i) => i % 4);
    const weights = [1, 1, 1, 3];
    const drawn = Array.from({ length: 12 }, (_, i) => stepItems(9, i + 1, 6, 24, strata, weights));
    for (const s of drawn) expect(s.map((i) => strata[i])).toEqual([3, 0, 1, 3, 2, 3]);
    // Stratum 3 (6 items, 3 a step): two steps are one epoch of it, each item once; the others take six steps.
    for (let e = 0; e < 6; e++) expect(new Set(drawn.slice(2 * e, 2 * e + 2).flat().filter((i) => strata[i] === 3)).size).toBe(6);
    expect(new Set(drawn.slice(0, 6).flat().filter((i) => strata[i] === 0)).size).toBe(6);
    // Weights of 1 are the unweighted schedule (runs stored before weights draw as they did).
    expect(Array.from({ length: 5 }, (_, i) => stepItems(9, i + 1, 3, 24, strata, [1, 1, 1, 1]))).toEqual(Array.from({ length: 5 }, (_, i) => stepItems(9, i + 1, 3, 24, strata)));
    // A step of 8 can take 5 from stratum 3 (the one starting at cycle position 5: 3,3,0,1,3,2,3,3): 3 items are too few.
    expect(() => stepItems(9, 1, 8, 12, [0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3], weights)).toThrow('stratum 3 has 3 items, fewer than the 5 a step of 8 queries takes from it');
    expect(() => stepItems(9, 1, 2, 4, undefined, weights)).toThrow('stratum weights without strata');
  });

  it('names groups and rollouts by run, step and item, with a seed per rollout', () => {
    const [g] = planStep({ runId: 'r', seed: 3, step: 2, queriesPerStep: 1, groupSize: 3, items: 1 });
    expect(g.groupId).toBe('r:step2:item0');
    expect(g.rollouts.map((x) => x.id)).toEqual(['r:step2:item0:r0', 'r:step2:item0:r1', 'r:step2:item0:r2']);
    expect(new Set(g.rollouts.map((x) => x.seed)).size).toBe(3);
    expect(g.rollouts[1].seed).toBe(mixSeed(3, 2, 0, 1));
  });
});

/** One group per step whose 2 rollouts have one planner turn each, rewards 1 and 0. */
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

function trainer(skipAt: number): PolicyTrainer {
  let step = 0;
  return {
    async trainStart(o) {
      return { runId: o.runId, adapterId: 'a', step: 0, optimizerSteps: 0, resumed: false, config: resolveGrpoConfig(o.config ?? {}), skippedCheckpoints: [] };
    },
    async trainStep(samples) {
      step++;
      const skipped = step === skipAt;
      const stats: StepStats = { step, optimizerSteps: step, rewardMean: 0.5, loss: skipped ? NaN : 0.1, kl: 0, clipFraction: 0, ratioMean: 1, gradNorm: skipped ? Infinity : 1, samples: samples.length, responseTokens: samples.length, tokens: 3 * samples.length, groups: 1, noGradientGroups: 0, groupStats: [], tokensPerSecond: 1, ms: { oldLogprobs: 0, refLogprobs: 0, update: 0, total: 0 }, ...(skipped ? { skipped: 'non-finite gradient norm' as const, skippedUpdates: 1 } : {}), ...(step === 1 ? { trustRegion: { kl: 0.02, scale: 0.25 } } : {}) };
      return stats;
    },
    async trainCheckpoint() {
      return { step, adapterId: `ckpt-${step}` };
    },
    trainStop: () => undefined,
  };
}

const spec = (o: Partial<RunSpec> = {}): RunSpec => ({ task: 'agent', label: 'test', dataset: 'd', steps: 3, grpo: { groupSize: 2, queriesPerStep: 1 }, adapter: { kind: 'fresh', rank: 2, alpha: 4, targets: ['q'] }, keepCheckpoints: 2, bestWindow: 2, collector: {}, ...o });

describe('TrainingRun', () => {
  it('records a skipped (non-finite) update and goes on', async () => {
    const store = new MemoryRunStore();
    const run = await TrainingRun.start('r', spec(), { collector, policy: trainer(2), store });
    const s = await run.run();
    expect(s).toMatchObject({ status: 'done', steps: 3 });
    expect(run.history.map((m) => m.skippedUpdate ?? null)).toEqual([null, 'non-finite gradient norm', null]);
    // A trust region's measurement reaches the step's metrics (metrics.jsonl, the CLI's step line); steps without one carry none.
    expect(run.history.map((m) => [m.updateKl ?? null, m.updateScale ?? null])).toEqual([[0.02, 0.25], [null, null], [null, null]]);
    expect(run.history.map((m) => m.reward)).toEqual([0.5, 0.5, 0.5]);
    expect(store.rolloutRecords.map((r) => [r.step, r.reward])).toEqual([
      [1, 1],
      [1, 0],
      [2, 1],
      [2, 0],
      [3, 1],
      [3, 0],
    ]);
  });

  it('fails a step with no trainable planner turn, saying why, and stores the error', async () => {
    const store = new MemoryRunStore();
    const untrainable: RolloutCollector = {
      items: 1,
      async collect(plans) {
        const groups = await collector.collect(plans, {});
        for (const g of groups) for (const t of g.trajectories) t.turns = t.turns.map((x) => ({ ...x, promptTokens: [], responseTokens: [], logprobs: [] }));
        return groups;
      },
    };
    const run = await TrainingRun.start('u', spec(), { collector: untrainable, policy: trainer(0), store });
    await expect(run.run()).rejects.toThrow(/step 1: no rollout recorded a planner turn that can be trained on \(2 skipped, e\.g\. u:step1:item0:r0 turn 1: no token ids/);
    expect(run.state).toBe('error');
    expect((await store.load('u'))!).toMatchObject({ status: 'error', error: expect.stringContaining('no rollout recorded') });
  });

  it('refuses a bad spec before the optimizer starts', async () => {
    expect(() => checkSpec(spec({ steps: 0 }))).toThrow('training: steps must be a positive integer, got 0');
    expect(() => checkSpec(spec({ adapter: { kind: 'fresh', rank: 2, alpha: 4, targets: [] } }))).toThrow('choose at least one target module');
    expect(() => checkSpec(spec({ keepCheckpoints: 0 }))).toThrow('checkpoints to keep must be a positive integer, got 0');
    await expect(TrainingRun.start('q', spec({ grpo: { queriesPerStep: 2 } }), { collector, policy: trainer(0), store: new MemoryRunStore() })).rejects.toThrow('queries per step (2) exceeds the 1 items');
  });
});

/** Rollouts rewarded by their index in the group (from the plan's ids), so extra rollouts can succeed. */
function indexCollector(success: (g: number, item: number) => boolean, seen: Array<{ id: string; seed: number }> = [], items = 1): RolloutCollector {
  return {
    items,
    async collect(plans) {
      return plans.map((p): CollectedGroup => ({
        groupId: p.groupId,
        item: p.item,
        trajectories: p.rollouts.map((r, g) => {
          seen.push(r);
          const index = Number(/:r(\d+)$/.exec(r.id)![1]);
          return { rolloutId: r.id, rollout: g, reward: success(index, p.item) ? 1 : 0, status: 'done', answer: 'x', skipped: [], turns: [{ turn: 1, promptTokens: [1, 2], responseTokens: [3], logprobs: [-0.5], adapterId: 'a', prompt: 'p', completion: 'c' }] };
        }),
      }));
    },
  };
}

/** An optimizer that reports noSignal as grpoStep does: every group's rewards equal. */
function signalTrainer(): PolicyTrainer & { batches: number[][] } {
  const t = trainer(0) as PolicyTrainer & { batches: number[][] };
  t.batches = [];
  const step = t.trainStep.bind(t);
  t.trainStep = async (samples) => {
    t.batches.push(samples.map((x) => x.reward));
    // As grpoStep judges it: from the advantages the run's samples carry.
    const adv = groupStats(samples, samples.map((x) => x.advantage ?? 0));
    const st = await step(samples);
    return { ...st, noGradientGroups: adv.noGradientGroups, ...(adv.noGradientGroups === adv.groups.length ? { noSignal: true as const } : {}) };
  };
  return t;
}

/** signalTrainer, also keeping the advantages of every batch it is given. */
function recordingTrainer(): { policy: PolicyTrainer; seen: number[][] } {
  const seen: number[][] = [];
  const policy = signalTrainer();
  const step = policy.trainStep.bind(policy);
  policy.trainStep = async (samples) => (seen.push(samples.map((x) => x.advantage!)), step(samples));
  return { policy, seen };
}

describe('TrainingRun: steps without a reward signal', () => {
  it('a run whose every rollout fails records why on each step and says it learned nothing', async () => {
    const store = new MemoryRunStore();
    const run = await TrainingRun.start('n', spec({ grpo: { groupSize: 2, queriesPerStep: 1, beta: 0, extraRollouts: 4 } }), { collector: indexCollector(() => false), policy: signalTrainer(), store });
    const s = await run.run();
    expect(run.history.map((m) => m.noSignal)).toEqual(Array(3).fill("every group's rewards were equal (1 all 0); 4 extra rollouts found no success: no update"));
    expect(run.history.map((m) => [m.extraRollouts, m.rescuedGroups])).toEqual(Array(3).fill([4, 0]));
    expect(s.learned).toBe(false);
    expect(s.noLearning).toMatch(/^no step of this run learned anything: all 3 steps had no reward signal .*Its result is the adapter it started from, untouched by any reward\.$/);
    // Stored with the step, so metrics.jsonl and a reloaded Training tab show it.
    expect((await store.load('n'))!.history[0].noSignal).toContain('no update');
  });

  it('with beta > 0 such a step says it took the KL term alone; a run with one signalled step learned', async () => {
    const run = await TrainingRun.start('k', spec({ grpo: { groupSize: 2, queriesPerStep: 1, beta: 0.001, extraRollouts: 0 } }), { collector: indexCollector(() => false), policy: signalTrainer(), store: new MemoryRunStore() });
    const s = await run.run();
    expect(run.history[0].noSignal).toBe("every group's rewards were equal (1 all 0): the update took the KL term alone");
    expect(run.history[0].extraRollouts).toBeUndefined();
    expect(s.learned).toBe(false);
    const ok = await TrainingRun.start('ok', spec(), { collector, policy: signalTrainer(), store: new MemoryRunStore() });
    const s2 = await ok.run();
    expect(ok.history.some((m) => m.noSignal)).toBe(false);
    expect(s2).toMatchObject({ learned: true });
    expect(s2.noLearning).toBeUndefined();
  });

  it('dynamic sampling: a group with no success draws more rollouts, named and seeded as the plan would, until one succeeds', async () => {
    const seen: Array<{ id: string; seed: number }> = [];
    const policy = signalTrainer();
    const store = new MemoryRunStore();
    const run = await TrainingRun.start('d', spec({ steps: 1, grpo: { groupSize: 2, queriesPerStep: 1, seed: 9, extraRollouts: 6 } }), { collector: indexCollector((g) => g === 3, seen), policy, store });
    await run.run();
    // Rollouts 0-1 fail, the first extra round (2-3) succeeds at 3: the third round is not drawn.
    expect(seen.map((r) => r.id)).toEqual(['d:step1:item0:r0', 'd:step1:item0:r1', 'd:step1:item0:r2', 'd:step1:item0:r3']);
    expect(seen[3].seed).toBe(mixSeed(9, 1, 0, 3));
    expect(policy.batches).toEqual([[0, 0, 0, 1]]);
    expect(run.history[0]).toMatchObject({ extraRollouts: 2, rescuedGroups: 1, reward: 0.25 });
    expect(run.history[0].noSignal).toBeUndefined();
    expect(store.rolloutRecords.map((r) => [r.rollout, r.reward])).toEqual([
      [0, 0],
      [1, 0],
      [2, 0],
      [3, 1],
    ]);
    // A solved group is not resampled.
    const solved: Array<{ id: string; seed: number }> = [];
    await (await TrainingRun.start('s', spec({ steps: 1, grpo: { groupSize: 2, queriesPerStep: 1, extraRollouts: 6 } }), { collector: indexCollector(() => true, solved), policy: signalTrainer(), store: new MemoryRunStore() })).run();
    expect(solved).toHaveLength(2);
  });

  it("the run's advantageStd reaches the batch it trains on and the records it stores", async () => {
    const advantages = async (grpo: Record<string, unknown>) => {
      const { policy, seen } = recordingTrainer();
      const store = new MemoryRunStore();
      await (await TrainingRun.start('a', spec({ steps: 1, grpo: { groupSize: 4, queriesPerStep: 1, extraRollouts: 0, ...grpo } }), { collector: indexCollector((g) => g === 0), policy, store })).run();
      expect(store.rolloutRecords.map((r) => r.advantage)).toEqual(seen[0]);
      return seen[0];
    };
    // Rewards 1, 0, 0, 0: mean 1/4, unbiased std 1/2.
    const std = await advantages({});
    [1.5, -0.5, -0.5, -0.5].forEach((a, i) => expect(std[i]).toBeCloseTo(a, 5));
    expect(await advantages({ advantageStd: false })).toEqual([0.75, -0.25, -0.25, -0.25]);
  });

  it("the run's advantageBaseline reaches the batch: an all-solved group beside an all-failed one still trains", async () => {
    const run = async (grpo: Record<string, unknown>) => {
      const { policy, seen } = recordingTrainer();
      const store = new MemoryRunStore();
      // Item 0 is solved by every rollout, item 1 by none: no group has a spread of its own.
      const byItem = indexCollector((_g, item) => item === 0, [], 2);
      const r = await TrainingRun.start('b', spec({ steps: 1, grpo: { groupSize: 2, queriesPerStep: 2, extraRollouts: 0, beta: 0, ...grpo } }), { collector: byItem, policy, store });
      await r.run();
      return { seen: [...seen[0]].sort(), records: store.rolloutRecords.map((x) => x.advantage).sort(), history: r.history };
    };
    const group = await run({});
    expect(group.seen).toEqual([0, 0, 0, 0]);
    expect(group.history[0].noSignal).toMatch(/every group's rewards were equal/);
    const batch = await run({ advantageBaseline: 'batch', advantageStd: false });
    expect(batch.seen).toEqual([-0.5, -0.5, 0.5, 0.5]);
    expect(batch.records).toEqual(batch.seen);
    expect(batch.history[0].noSignal).toBeUndefined();
  });
});

describe('BestTracker', () => {
  it('judges by the rolling mean once the window is full, and only a strictly higher one is a new best', () => {
    const t = new BestTracker(3, 100);
    const seen = [0, 1, 1, 0, 1, 1, 1, 1].map((r, i) => t.push(i + 1, r));
    expect(seen.map((x) => x.best)).toEqual([false, false, true, false, false, false, true, false]);
    expect(seen.map((x) => +x.rollingReward.toFixed(3))).toEqual([0, 0.5, 0.667, 0.667, 0.667, 0.667, 1, 1]);
    expect(t.best).toEqual({ step: 7, rollingReward: 1 });
    // A run shorter than the window is judged over all of it: its last step is the first that can be best.
    const short = new BestTracker(20, 2);
    expect([short.push(1, 1).best, short.push(2, 0).best]).toEqual([false, true]);
  });
});

// A Flow-GRPO training run, as one object that the Training tab, <agentflow-chat> and `cli train` all drive.
// Each step, in the order llm.c's main() would read:
//   plan the step's queries and seeds (schedule.ts)
//   -> play G rollouts of each query (the collector: the AgentFlow loop, batched at the planner; or the toy)
//   -> score each final answer 0/1 and broadcast it to every planner turn of its trajectory
//   -> normalise advantages within each query's group
//   -> one clipped, KL-penalised update of the LoRA adapter (PolicyTrainer.trainStep -> grpoStep)
//   -> record the step's metrics and trained-on turns (RunStore), checkpoint on the cadence and at a new
//      best rolling reward, prune old checkpoints
//   -> on the evaluation schedule (spec.evaluation: step 0, every K-th step, the last step), play the held-out
//      items with the adapter as it now is (RunDeps.evaluator) and record the accuracy (RunStore.appendEval).
// Progress goes out through the events given to run(); storage goes through the RunStore.
import type { StepStats } from '../grpo-step';
import type { PolicyTrainer, TrainSessionInfo } from '../training-host';
import type { RolloutCollector, RolloutProgress } from './collector';
import { BestTracker, DEFAULT_BEST_WINDOW, learnedFromReward, mean, noLearningNote, populationStd, type EvalPoint, type StepMetrics } from './metrics';
import type { RunResult, RunSpec, RunStatus, RunStore, StoredRun } from './run-store';
import { extraRollouts, planStep, type GroupPlan } from './schedule';
import { stepBatch, type CollectedGroup } from './rollout-samples';

/** What one held-out evaluation found: items scored, those right, and those whose run recorded an error. */
export interface EvalOutcome {
  correct: number;
  total: number;
  errors: number;
}

/**
 * Plays the run's held-out items (spec.evaluation) with the adapter the policy samples with now, and scores
 * them. A front end builds it from its engines (agentRunEvaluator in run-evaluator.ts); the run decides when.
 */
export interface RunEvaluator {
  evaluate(o: { step: number; signal?: AbortSignal; onItem?: (done: number, total: number) => void }): Promise<EvalOutcome>;
}

export interface RunDeps {
  collector: RolloutCollector;
  policy: PolicyTrainer;
  store: RunStore;
  /** IndexedDB database the page's policy keeps checkpoints in (passed to trainStart). */
  dbName?: string;
  /** The planner's decode counters (batching at work), when it reports them. */
  decodeStats?: () => Promise<{ steps: number; rows: number } | null>;
  /** Held-out evaluation on spec.evaluation's schedule; without one a run with a schedule skips it, saying so. */
  evaluator?: RunEvaluator;
}

export interface RunEvents {
  /** Each finished step, after it is stored. */
  onStep?: (m: StepMetrics) => void;
  /** While a step's rollouts play. */
  onProgress?: (p: RolloutProgress) => void;
  /**
   * A checkpoint was saved (its step, where its adapter is, and whether it is the new best). Awaited before
   * the run goes on, so a front end can copy it before an older one is pruned at the next checkpoint.
   */
  onCheckpoint?: (c: { step: number; adapterId: string; best: boolean }) => void | Promise<void>;
  /** A held-out evaluation is starting, and how far it is. */
  onEvalProgress?: (p: { step: number; done: number; total: number }) => void;
  /** A held-out evaluation was stored (a failed one too: its `error` says why, and the run goes on). */
  onEval?: (p: EvalPoint) => void;
}

export interface RunSummary {
  runId: string;
  status: RunStatus;
  steps: number;
  /** Steps run by this call of run(). */
  stepsRun: number;
  result: RunResult | null;
  /** Mean reward of the run's first and last steps: a quarter of the run each, at most the rolling window. */
  firstReward: number;
  lastReward: number;
  /** Some step learned from its rewards (see learnedFromReward); false: the result is the starting adapter. */
  learned: boolean;
  /** Why the run learned nothing, in words; absent when it learned. */
  noLearning?: string;
  /** Held-out evaluations so far (runs with spec.evaluation). */
  evals?: EvalPoint[];
}

export type RunState = 'idle' | 'running' | 'paused' | 'done' | 'error';

const now = () => (typeof performance !== 'undefined' ? performance.now() : Date.now());

/** A new run's id: '<prefix>-<UTC time>', safe in file names and IndexedDB keys. */
export function newRunId(prefix: string, at = new Date()): string {
  return `${prefix}-${at.toISOString().replace(/[:.]/g, '-')}`;
}

/** Checks a spec before anything is written or started; errors name the setting. */
export function checkSpec(spec: RunSpec): void {
  if (!Number.isInteger(spec.steps) || spec.steps < 1) throw new Error(`training: steps must be a positive integer, got ${spec.steps}`);
  if (!Number.isInteger(spec.keepCheckpoints) || spec.keepCheckpoints < 1) throw new Error(`training: checkpoints to keep must be a positive integer, got ${spec.keepCheckpoints}`);
  if (!Number.isInteger(spec.bestWindow) || spec.bestWindow < 1) throw new Error(`training: the rolling-reward window must be a positive integer, got ${spec.bestWindow}`);
  if (spec.evaluation) {
    const e = spec.evaluation;
    if (!Number.isInteger(e.every) || e.every < 1) throw new Error(`training: evaluate every N steps needs a positive integer N, got ${e.every}`);
    if (!e.items.length) throw new Error(`training: the held-out data “${e.dataset}” has no item to evaluate on`);
  }
  if (spec.adapter.kind === 'fresh') {
    if (!spec.adapter.targets.length) throw new Error('training: choose at least one target module for the LoRA adapter');
    if (!Number.isInteger(spec.adapter.rank) || spec.adapter.rank < 1) throw new Error(`training: LoRA rank must be a positive integer, got ${spec.adapter.rank}`);
  }
}

export class TrainingRun {
  state: RunState = 'idle';
  private pauseRequested = false;
  private abort: AbortController | null = null;
  private readonly best: BestTracker;
  /** The newest checkpoint's step and adapter: what an evaluation right now judges. */
  private lastCheckpoint: { step: number; adapterId: string };

  private constructor(
    readonly record: StoredRun,
    private readonly deps: RunDeps,
    /** The optimizer's session: resolved config, the adapter it samples with, the step it is at. */
    readonly info: TrainSessionInfo,
    /** Things a user should know about how the run (re)started, e.g. a checkpoint that could not be read. */
    readonly notes: string[],
  ) {
    this.best = BestTracker.replay(record.spec.bestWindow, record.spec.steps, record.history);
    // A best step whose checkpoint was lost with the steps after the last one (a crash) is no result: the next
    // step that fills the window becomes the best and is checkpointed.
    if (!record.result) this.best.best = null;
    this.lastCheckpoint = { step: info.step, adapterId: info.step > 0 ? `${info.adapterId} (checkpoint of step ${info.step})` : startAdapterName(record.spec) };
    if (record.spec.evaluation && !deps.evaluator) notes.push('this run has a held-out evaluation schedule, but no evaluator was given: it is skipped');
    if (record.status === 'done') this.state = 'done';
    else if (record.history.length > 0 || info.step > 0) this.state = 'paused';
  }

  get id(): string {
    return this.record.id;
  }

  get spec(): RunSpec {
    return this.record.spec;
  }

  /** Steps finished (and kept: a resumed run's count is its checkpoint's). */
  get step(): number {
    return this.record.history.length ? this.record.history[this.record.history.length - 1].step : 0;
  }

  get history(): readonly StepMetrics[] {
    return this.record.history;
  }

  get result(): RunResult | null {
    return this.record.result;
  }

  get evals(): readonly EvalPoint[] {
    return this.record.evals ?? [];
  }

  /** Starts a new run: checks the spec, starts the optimizer on its adapter, stores the record. */
  static async start(id: string, spec: RunSpec, deps: RunDeps): Promise<TrainingRun> {
    checkSpec(spec);
    if (await deps.store.load(id)) throw new Error(`training run '${id}' already exists; resume it or choose another id`);
    if (deps.collector.items < (spec.grpo.queriesPerStep ?? 1)) {
      throw new Error(`training: queries per step (${spec.grpo.queriesPerStep}) exceeds the ${deps.collector.items} items of “${spec.dataset}”`);
    }
    const adapter = spec.adapter.kind === 'fresh' ? { rank: spec.adapter.rank, alpha: spec.adapter.alpha, targets: spec.adapter.targets } : { adapterId: spec.adapter.id };
    const info = await deps.policy.trainStart({ runId: id, adapter, config: { ...spec.grpo }, dbName: deps.dbName, zeroAdvantages: spec.zeroAdvantages });
    const t = Date.now();
    const record: StoredRun = { id, createdAt: t, updatedAt: t, status: 'paused', spec, history: [], result: null };
    try {
      await deps.store.save(record);
    } catch (e) {
      await deps.policy.trainStop();
      throw e;
    }
    return new TrainingRun(record, deps, info, []);
  }

  /**
   * Continues a stored run from its newest intact checkpoint (or from its start when it has none yet). Steps
   * after the checkpoint are forgotten and redone.
   */
  static async resume(id: string, deps: RunDeps): Promise<TrainingRun> {
    const record = await deps.store.load(id);
    if (!record) throw new Error(`training run '${id}' is not in storage`);
    const spec = record.spec;
    const notes: string[] = [];
    // Before its first checkpoint a run starts over from its starting adapter (the same seed makes the same one).
    const adapter = spec.adapter.kind === 'fresh' ? { rank: spec.adapter.rank, alpha: spec.adapter.alpha, targets: spec.adapter.targets } : { adapterId: spec.adapter.id };
    const info = await deps.policy.trainStart({ runId: id, adapter, config: { ...spec.grpo }, resume: true, dbName: deps.dbName, zeroAdvantages: spec.zeroAdvantages });
    if (info.skippedCheckpoints.length) {
      notes.push(`resumed from the checkpoint of step ${info.step}: newer ones could not be read (${info.skippedCheckpoints.join('; ')})`);
    }
    const lost = record.history.filter((m) => m.step > info.step).length;
    if (lost) notes.push(`step${lost === 1 ? '' : 's'} ${info.step + 1}–${info.step + lost} ran after the last checkpoint and will run again`);
    record.history = record.history.filter((m) => m.step <= info.step);
    if (record.evals) record.evals = record.evals.filter((p) => p.step <= info.step);
    if (record.result && record.result.step > info.step) record.result = null;
    await deps.store.truncate(id, info.step);
    return new TrainingRun(record, deps, info, notes);
  }

  /** Asks the run to stop: the step in progress is abandoned (its rollouts end 'interrupted') and run() returns. */
  pause(): void {
    this.pauseRequested = true;
    this.abort?.abort();
  }

  /** Runs steps until the spec's count is reached or pause() is called. */
  async run(events: RunEvents = {}): Promise<RunSummary> {
    if (this.state === 'running') throw new Error(`training run '${this.id}' is already running`);
    const startStep = this.step;
    if (this.state !== 'done') {
      this.pauseRequested = false;
      this.abort = new AbortController();
      this.state = 'running';
      try {
        await this.saveRecord('running');
        // Step 0's evaluation, or one a pause or crash cut off after its step's checkpoint.
        await this.evaluateIfDue(this.step, events);
        while (this.step < this.spec.steps && !this.pauseRequested) await this.runStep(events);
        await this.finish(events);
      } catch (e) {
        this.state = 'error';
        this.record.error = e instanceof Error ? e.message : String(e);
        await this.saveRecord('error').catch(() => undefined);
        throw e;
      } finally {
        this.abort = null;
      }
    }
    return this.summary(this.step - startStep);
  }

  private async runStep(events: RunEvents): Promise<void> {
    const { policy, collector, store } = this.deps;
    const cfg = this.info.config;
    const next = this.step + 1;
    const plans = planStep({ runId: this.id, seed: cfg.seed, step: next, queriesPerStep: cfg.queriesPerStep, groupSize: cfg.groupSize, items: collector.items, ...(collector.strata ? { strata: collector.strata } : {}), ...(collector.strataWeights ? { strataWeights: collector.strataWeights } : {}) });
    const d0 = await this.decodeStats();
    const t0 = now();
    const groups = await collector.collect(plans, { signal: this.abort?.signal, onProgress: events.onProgress });
    // A step cut short is not trained on: its rollouts are incomplete, and the schedule redoes it exactly.
    if (this.pauseRequested) return;
    const resampled = await this.resample(plans, groups, events);
    if (this.pauseRequested) return;
    const t1 = now();
    const d1 = await this.decodeStats();
    const batch = stepBatch({ runId: this.id, step: next, groups, advantageEps: cfg.advantageEps, advantageStd: cfg.advantageStd, advantageBaseline: cfg.advantageBaseline });
    if (!batch.samples.length) {
      const why = batch.skipped.length ? ` (${batch.skipped.length} skipped, e.g. ${batch.skipped[0]})` : ' (every planner call failed)';
      throw new Error(`step ${next}: no rollout recorded a planner turn that can be trained on${why}; the planner must run on this runtime, which reports token ids and logprobs`);
    }
    const stats: StepStats & { skipped?: string } = await policy.trainStep(batch.samples);
    const t2 = now();
    const { rollingReward, best } = this.best.push(next, mean(batch.rewards));
    const decodeSteps = d0 && d1 ? d1.steps - d0.steps : 0;
    const metrics: StepMetrics = {
      step: next,
      reward: mean(batch.rewards),
      rewardStd: populationStd(batch.rewards),
      rollingReward,
      loss: stats.loss,
      kl: stats.kl,
      gradNorm: stats.gradNorm,
      clipFraction: stats.clipFraction,
      tokensPerSecond: stats.tokensPerSecond,
      plannerTokens: stats.responseTokens,
      samples: stats.samples,
      noGradientGroups: stats.noGradientGroups,
      rolloutSeconds: (t1 - t0) / 1000,
      updateSeconds: (t2 - t1) / 1000,
      ...(decodeSteps > 0 ? { plannerSequencesPerStep: (d1!.rows - d0!.rows) / decodeSteps } : {}),
      ...(stats.skipped ? { skippedUpdate: stats.skipped } : {}),
      ...(stats.noSignal ? { noSignal: noSignalWhy(groups, resampled.drawn, cfg.beta > 0) } : {}),
      ...(resampled.drawn ? { extraRollouts: resampled.drawn, rescuedGroups: resampled.rescued } : {}),
      ...(stats.trustRegion ? { updateKl: stats.trustRegion.kl, updateScale: stats.trustRegion.scale } : {}),
      ...(best ? { best: true } : {}),
    };
    await store.appendStep(this.record, metrics, batch.records);
    this.record.history.push(metrics);
    const every = cfg.checkpointEvery;
    // An evaluated step is checkpointed, so the adapter its accuracy belongs to is on disk by that name.
    if (best || (every > 0 && next % every === 0) || next === this.spec.steps || this.evalDue(next)) await this.checkpoint(next, best, events);
    events.onStep?.(metrics);
    await this.saveRecord('running');
    await this.evaluateIfDue(next, events);
  }

  /** Whether `step` is on the evaluation schedule and not evaluated yet. */
  private evalDue(step: number): boolean {
    const e = this.spec.evaluation;
    if (!e || !this.deps.evaluator) return false;
    const scheduled = step === 0 || step % e.every === 0 || step === this.spec.steps;
    return scheduled && !this.evals.some((p) => p.step === step);
  }

  /**
   * Evaluates the adapter of `step` when the schedule says so. A failed evaluation is stored with its error and
   * the run goes on (onEval tells the front end); one cut off by pause() is not stored and runs on resume.
   */
  private async evaluateIfDue(step: number, events: RunEvents): Promise<void> {
    if (!this.evalDue(step) || this.pauseRequested) return;
    const adapter = this.lastCheckpoint.step === step ? this.lastCheckpoint.adapterId : `${this.info.adapterId} (step ${step})`;
    const t0 = now();
    let point: EvalPoint;
    try {
      const signal = this.abort?.signal;
      const o = await this.deps.evaluator!.evaluate({ step, ...(signal ? { signal } : {}), onItem: (done, total) => events.onEvalProgress?.({ step, done, total }) });
      if (this.pauseRequested) return;
      point = { step, accuracy: o.total ? o.correct / o.total : 0, correct: o.correct, total: o.total, ...(o.errors ? { errors: o.errors } : {}), seconds: (now() - t0) / 1000, adapter };
    } catch (e) {
      if (this.pauseRequested) return;
      point = { step, accuracy: 0, correct: 0, total: 0, seconds: (now() - t0) / 1000, adapter, error: e instanceof Error ? e.message : String(e) };
    }
    await this.deps.store.appendEval(this.record, point);
    (this.record.evals ??= []).push(point);
    events.onEval?.(point);
  }

  /**
   * Dynamic sampling: a group with no success gives no gradient, and a query the planner rarely solves would
   * stay unsolved for good. Such groups get more rollouts, groupSize at a time (all of a round the same size,
   * so the toy collector batches them), up to extraRollouts each or until one differs. They join their group,
   * whose advantages are then normalised over all its rollouts. Mutates `groups`.
   */
  private async resample(plans: readonly GroupPlan[], groups: CollectedGroup[], events: RunEvents): Promise<{ drawn: number; rescued: number }> {
    const cfg = this.info.config;
    // A checkpoint written before the setting existed resumes without it.
    const budget = cfg.extraRollouts ?? 0;
    const stuck = (g: CollectedGroup) => g.trajectories.length > 0 && g.trajectories.every((t) => t.reward === g.trajectories[0].reward && t.reward < 1);
    const planOf = new Map(plans.map((p) => [p.groupId, p]));
    const first = new Set(groups.filter(stuck).map((g) => g.groupId));
    let drawn = 0;
    for (let used = 0; used < budget; ) {
      const todo = groups.filter((g) => stuck(g) && planOf.has(g.groupId));
      if (!todo.length) break;
      const count = Math.min(cfg.groupSize, budget - used);
      const from = cfg.groupSize + used;
      const more = todo.map((g) => extraRollouts({ runId: this.id, seed: cfg.seed, plan: planOf.get(g.groupId)!, from, count }));
      const got = await this.deps.collector.collect(more, { signal: this.abort?.signal, onProgress: events.onProgress });
      if (this.pauseRequested) break;
      for (const m of got) {
        const g = groups.find((x) => x.groupId === m.groupId)!;
        // Collectors number a plan's rollouts from 0; these follow the group's first ones.
        g.trajectories.push(...m.trajectories.map((t, k) => ({ ...t, rollout: from + k })));
      }
      drawn += count * todo.length;
      used += count;
    }
    const rescued = groups.filter((g) => first.has(g.groupId) && !stuck(g)).length;
    return { drawn, rescued };
  }

  private async checkpoint(step: number, best: boolean, events: RunEvents): Promise<void> {
    const bestStep = best ? step : this.best.best?.step;
    const c = await this.deps.policy.trainCheckpoint({ keep: this.spec.keepCheckpoints, protect: bestStep !== undefined ? [bestStep] : [] });
    this.lastCheckpoint = { step: c.step, adapterId: c.adapterId };
    if (best) this.record.result = { step, adapterId: c.adapterId, rollingReward: this.best.best!.rollingReward, reason: 'best' };
    await events.onCheckpoint?.({ step: c.step, adapterId: c.adapterId, best });
  }

  /** After the loop: a paused run saves where it is; a finished one publishes its result and frees the optimizer. */
  private async finish(events: RunEvents): Promise<void> {
    const step = this.step;
    if (step > 0) {
      // Once per step: a no-op when the loop's last step already saved it.
      const c = await this.deps.policy.trainCheckpoint({ keep: this.spec.keepCheckpoints, protect: this.best.best ? [this.best.best.step] : [] });
      await events.onCheckpoint?.({ step: c.step, adapterId: c.adapterId, best: false });
      if (!this.record.result && step >= this.spec.steps) {
        this.record.result = { step: c.step, adapterId: c.adapterId, rollingReward: this.record.history[this.record.history.length - 1].rollingReward, reason: 'last' };
      }
    }
    if (step >= this.spec.steps) {
      if (this.record.result) await this.deps.store.publish?.(this.record, this.record.result);
      this.state = 'done';
      await this.saveRecord('done');
      // The stored checkpoints stay; the optimizer's buffers and its copy of the adapter go.
      await this.deps.policy.trainStop();
    } else {
      this.state = 'paused';
      await this.saveRecord('paused');
    }
  }

  private async decodeStats(): Promise<{ steps: number; rows: number } | null> {
    // Only shown, never needed: a planner that cannot tell does not stop the run.
    return (await this.deps.decodeStats?.().catch(() => null)) ?? null;
  }

  private async saveRecord(status: RunStatus): Promise<void> {
    this.record.status = status;
    this.record.updatedAt = Date.now();
    await this.deps.store.save(this.record);
  }

  private summary(stepsRun: number): RunSummary {
    const h = this.record.history;
    const noLearning = noLearningNote(h);
    // A quarter of the run (at most the rolling window) at each end, so first and last never overlap.
    const w = Math.max(1, Math.min(this.spec.bestWindow, Math.floor(h.length / 4)));
    return {
      runId: this.id,
      status: this.record.status,
      steps: this.step,
      stepsRun,
      result: this.record.result,
      firstReward: mean(h.slice(0, w).map((m) => m.reward)),
      lastReward: mean(h.slice(-w).map((m) => m.reward)),
      learned: learnedFromReward(h),
      ...(noLearning ? { noLearning } : {}),
      ...(this.record.evals?.length ? { evals: [...this.record.evals] } : {}),
    };
  }
}

/** The adapter a run starts from, named for an evaluation of step 0. */
function startAdapterName(spec: RunSpec): string {
  return spec.adapter.kind === 'stored' ? spec.adapter.id : `fresh LoRA adapter (rank ${spec.adapter.rank}, B = 0)`;
}

/** Why a step had no reward signal: the groups' common rewards, extra rollouts drawn, runs without an answer. */
export function noSignalWhy(groups: readonly CollectedGroup[], extraDrawn: number, klOnly: boolean): string {
  const byReward = new Map<number, number>();
  for (const g of groups) {
    const r = g.trajectories[0]?.reward ?? 0;
    byReward.set(r, (byReward.get(r) ?? 0) + 1);
  }
  const rewards = [...byReward].sort((a, b) => a[0] - b[0]).map(([r, n]) => `${n} all ${r}`).join(', ');
  const all = groups.flatMap((g) => g.trajectories);
  const noAnswer = all.filter((t) => t.status !== 'done' || t.answer === null).length;
  const turns = all.flatMap((t) => t.turns);
  const unparsed = turns.filter((t) => t.parsedOk === false).length;
  const parts = [`every group's rewards were equal (${rewards})`];
  if (extraDrawn) parts.push(`${extraDrawn} extra rollouts found no success`);
  if (noAnswer) parts.push(`${noAnswer} of ${all.length} rollouts gave no answer`);
  if (unparsed) parts.push(`${unparsed} of ${turns.length} planner replies did not parse`);
  return `${parts.join('; ')}: ${klOnly ? 'the update took the KL term alone' : 'no update'}`;
}

export { DEFAULT_BEST_WINDOW };

// Training the real planner on agent rollouts: each step runs the AgentFlow loop G times on a few
// benchmark queries (runGroup, rewards from the items' reference answers), turns the planner calls it
// recorded into turn samples and sends them to the planner worker, where the optimizer step runs on the
// same GPU runtime that samples (so the next rollouts use the updated adapter). Checkpoints and the run
// record live in IndexedDB, so a paused run resumes after a reload.
import type { BenchmarkItem } from '../agent/benchmark-import';
import type { AgentConfigInput, AgentEngines } from '../agent/loop';
import type { RewardKind } from '../agent/rewards';
import { recordReward } from '../agent/rollouts';
import { checkConcurrency } from '../agent/rollout-pool';
import { runGroup, type SessionResult } from '../agent/session';
import type { StepStats } from '../trainer/grpo-step';
import type { TrainSessionInfo } from '../trainer/worker-trainer';
import { openAgentDb } from '../store/db';
import type { TrainingRunRecord } from '../store/records';
import { getRolloutsByGroup } from '../store/rollouts';
import type { GrpoConfig } from '../trainer/config';
import { samplesFromRollouts } from '../trainer/rollout-samples';
import type { TurnSample } from '../trainer/samples';
import type { Tool } from '../tools/types';
import { startLabel, toStepPoint, type TrainingDriver, type TrainingSettings, type TrainingState, type TrainingStepPoint } from './training-driver';

/** The planner worker's training calls (PlannerClient implements them). */
export interface PlannerTrainer {
  trainStart(o: {
    runId: string;
    adapter: { rank: number; alpha: number; targets?: TrainingSettings['targets'] } | { adapterId: string };
    config?: Partial<GrpoConfig>;
    resume?: boolean;
    dbName?: string;
  }): Promise<TrainSessionInfo>;
  trainStep(samples: TurnSample[]): Promise<StepStats>;
  trainCheckpoint(): Promise<{ step: number; adapterId: string }>;
  trainStop(): Promise<void> | void;
  /** The planner's decode steps so far and the sequences they served (PlannerClient.decodeStats), if it tells. */
  decodeStats?(): Promise<{ steps: number; rows: number }>;
}

/** Rollout budgets: small ones keep a step short (and fit small models' contexts). */
export interface AgentBudget {
  maxTurns: number;
  /** New tokens per planner call. */
  plannerTokens: number;
  /** New tokens per call of the other modules (analysis, executor, verifier, generator). */
  moduleTokens: number;
  queriesPerStep: number;
  /** Largest forward+backward in tokens; must hold the longest planner turn (prompt + response). */
  microBatchTokens: number;
  /**
   * How many rollouts of a group run at once, so their planner calls are decoded together: 1 to
   * MAX_ROLLOUT_CONCURRENCY, default min(groupSize, MAX_DEFAULT_ROLLOUT_CONCURRENCY). Each rollout's time
   * budget is multiplied by the number that run at once (concurrentRolloutConfig in src/agent/rollout-pool.ts).
   */
  rolloutConcurrency?: number;
}

export const DEFAULT_AGENT_BUDGET: Readonly<AgentBudget> = Object.freeze({ maxTurns: 3, plannerTokens: 256, moduleTokens: 256, queriesPerStep: 2, microBatchTokens: 2048 });

/**
 * Rollouts of a group run at once unless the budget says otherwise: a planner with 4-bit (MLC) weights
 * decodes up to 8 sequences in one step (Qwen2Runtime.maxDecodeRows), so a default group of 8 decodes
 * together; with f16 weights it decodes 4 per step and its batcher runs the 8 calls 4 at a time.
 */
export const MAX_DEFAULT_ROLLOUT_CONCURRENCY = 8;

/**
 * Most rollouts of a group allowed to run at once. More would not decode together (the planner decodes at
 * most 8 sequences per step) and would only wait, holding their agents' memory, for the planner and for the
 * web-llm modules, which serve one call at a time.
 */
export const MAX_ROLLOUT_CONCURRENCY = 8;

/** The budget's rollout concurrency, defaulted from the group size and checked (1 .. MAX_ROLLOUT_CONCURRENCY). */
export function rolloutConcurrency(budget: Pick<AgentBudget, 'rolloutConcurrency'>, groupSize: number): number {
  const setting = 'training: rolloutConcurrency';
  const value = checkConcurrency(budget.rolloutConcurrency ?? Math.min(groupSize, MAX_DEFAULT_ROLLOUT_CONCURRENCY), setting);
  if (value > MAX_ROLLOUT_CONCURRENCY) throw new Error(`${setting} must be at most ${MAX_ROLLOUT_CONCURRENCY}, got ${value}`);
  return value;
}

export interface AgentTrainingBenchmark {
  name: string;
  kind: RewardKind;
  items: BenchmarkItem[];
}

export interface AgentTrainingDeps {
  trainer: PlannerTrainer;
  engines: AgentEngines;
  tools: Tool[];
  dbName?: string;
}

export const AGENT_RUN_KIND = 'agent-rollouts';

/** What the run record's config holds, enough to resume the run after a reload. */
interface AgentRunConfig {
  kind: typeof AGENT_RUN_KIND;
  settings: TrainingSettings;
  benchmark: AgentTrainingBenchmark;
  budget: AgentBudget;
  planner: string;
}

/** The agent settings of a training rollout: the planner samples at `temperature` with this rollout's seed. */
export function rolloutAgentConfig(budget: AgentBudget, temperature: number, seed: number): AgentConfigInput {
  const other = { maxNewTokens: budget.moduleTokens };
  return {
    maxTurns: budget.maxTurns,
    answerTags: true,
    generation: { analysis: other, executor: other, verifier: other, generator: other, planner: { maxNewTokens: budget.plannerTokens, temperature, seed } },
  };
}

export interface GroupRollouts {
  samples: TurnSample[];
  results: SessionResult[];
  /** Planner calls that could not be trained on, with the reason (no token ids: the planner ran on web-llm). */
  skipped: string[];
}

/**
 * One GRPO group: `seeds.length` runs of the item's query (one seed each, so the rollouts differ), stored
 * under (runId, groupId), `concurrency` at a time (default 1). A run that ended without a scored answer
 * counts as wrong (reward 0), which is also written to its stored planner calls so an export shows what was
 * trained on. Results and samples are in rollout order (then turn order), whatever order the runs finished in.
 */
export async function collectGroup(o: {
  runId: string;
  groupId: string;
  item: BenchmarkItem;
  kind: RewardKind;
  seeds: number[];
  agent: (seed: number) => AgentConfigInput;
  engines: AgentEngines;
  tools: Tool[];
  concurrency?: number;
  signal?: AbortSignal;
  dbName?: string;
}): Promise<GroupRollouts> {
  if (!o.seeds.length) return { samples: [], results: [], skipped: [] };
  const reward = { kind: o.kind, reference: o.item.answer, numbers: o.item.numbers, options: o.item.options };
  const results = await runGroup(o.item.query, reward, o.seeds.length, {
    runId: o.runId,
    groupId: o.groupId,
    tools: o.tools,
    engines: o.engines,
    config: (i) => o.agent(o.seeds[i]),
    concurrency: o.concurrency ?? 1,
    // Every rollout of the group analyses the same query greedily: one engine call serves them all.
    shareAnalysis: true,
    signal: o.signal,
    dbName: o.dbName,
  });
  for (const r of results) {
    if (r.reward === undefined && r.status !== 'interrupted') await recordReward({ runId: o.runId, groupId: o.groupId }, r.conversationId, 0, o.dbName);
  }
  // Stored order follows creation time, which concurrent runs interleave: training batches follow the rollouts.
  const rank = new Map(results.map((r, i) => [r.conversationId, i]));
  const stored = (await getRolloutsByGroup(o.groupId, o.dbName)).sort((a, b) => (rank.get(a.conversationId) ?? results.length) - (rank.get(b.conversationId) ?? results.length) || a.turn - b.turn);
  const { samples, skipped } = samplesFromRollouts(stored);
  return { samples, results, skipped: skipped.map((s) => `${s.id}: ${s.reason}`) };
}

function rolloutSeed(seed: number, step: number, item: number, g: number): number {
  return (((seed * 1_000_003 + step * 10_007 + item * 101 + g) % 2 ** 31) + 2 ** 31) % 2 ** 31;
}

export class AgentTrainingDriver implements TrainingDriver {
  readonly label: string;
  state: TrainingState = 'idle';
  readonly history: TrainingStepPoint[] = [];
  step: number;
  /** Id (IndexedDB 'adapters') of the latest stored checkpoint's adapter. */
  lastAdapterId: string | null = null;
  private pauseRequested = false;
  private abort: AbortController | null = null;

  private constructor(
    readonly runId: string,
    private readonly run_: AgentRunConfig,
    private readonly deps: AgentTrainingDeps,
    readonly info: TrainSessionInfo,
    private readonly createdAt: number,
  ) {
    this.step = info.step;
    this.label = `Planner on agent rollouts of “${run_.benchmark.name}” (${run_.planner})${startLabel(run_.settings)}`;
  }

  static async create(settings: TrainingSettings, benchmark: AgentTrainingBenchmark, deps: AgentTrainingDeps, budgetIn: Partial<AgentBudget> = {}): Promise<AgentTrainingDriver> {
    if (!settings.startAdapter && !settings.targets.length) throw new Error('training: choose at least one target module for the LoRA adapter');
    if (!Number.isInteger(settings.steps) || settings.steps < 1) throw new Error(`training: steps must be a positive integer, got ${settings.steps}`);
    const items = benchmark.items.filter((i) => i.answer !== undefined && i.answer !== null);
    if (!items.length) throw new Error(`training: benchmark “${benchmark.name}” has no item with a reference answer to score rollouts against`);
    const budget: AgentBudget = { ...DEFAULT_AGENT_BUDGET, ...budgetIn };
    budget.queriesPerStep = Math.min(budget.queriesPerStep, items.length);
    budget.rolloutConcurrency = rolloutConcurrency(budget, settings.groupSize);
    const runId = `agent-${new Date().toISOString().replace(/[:.]/g, '-')}`;
    const startAdapter = settings.startAdapter ? { ...settings.startAdapter } : null;
    const run: AgentRunConfig = { kind: AGENT_RUN_KIND, settings: { ...settings, targets: [...settings.targets], startAdapter }, benchmark: { ...benchmark, items }, budget, planner: deps.engines.planner.id };
    const info = await deps.trainer.trainStart({
      runId,
      adapter: startAdapter ? { adapterId: startAdapter.id } : { rank: settings.rank, alpha: 2 * settings.rank, targets: settings.targets },
      config: grpoSettings(run),
      dbName: deps.dbName,
    });
    const d = new AgentTrainingDriver(runId, run, deps, info, Date.now());
    await d.saveRun('paused');
    return d;
  }

  /** Continues a stored run from its latest checkpoint (after a reload); the run record gives the settings. */
  static async resume(runId: string, deps: AgentTrainingDeps): Promise<AgentTrainingDriver> {
    const rec = await (await openAgentDb(deps.dbName)).get('trainingRuns', runId);
    if (!rec) throw new Error(`training run '${runId}' is not in this browser's storage`);
    const run = rec.config as unknown as AgentRunConfig;
    if (run.kind !== AGENT_RUN_KIND) throw new Error(`training run '${runId}' is not an agent-rollout run`);
    const s = run.settings;
    // A checkpoint holds the adapter to continue from; before the first one, the run starts over from its
    // starting adapter (a stored one, or a fresh one made from the same seed).
    const checkpointed = (await (await openAgentDb(deps.dbName)).countFromIndex('checkpoints', 'byRun', runId)) > 0;
    const adapter = s.startAdapter && !checkpointed ? { adapterId: s.startAdapter.id } : { rank: s.rank, alpha: 2 * s.rank, targets: s.targets };
    const info = await deps.trainer.trainStart({ runId, adapter, config: grpoSettings(run), resume: true, dbName: deps.dbName });
    const d = new AgentTrainingDriver(runId, run, deps, info, rec.createdAt);
    // Steps after the last checkpoint are redone, so their points are dropped.
    d.history.push(...(rec.stats as unknown as TrainingStepPoint[]).filter((p) => p.step <= info.step));
    if (info.step >= s.steps) d.state = 'done';
    else d.state = 'paused';
    return d;
  }

  pause(): void {
    this.pauseRequested = true;
    this.abort?.abort();
  }

  async run(onStep: (p: TrainingStepPoint) => void): Promise<void> {
    if (this.state === 'running' || this.state === 'done') return;
    this.pauseRequested = false;
    this.abort = new AbortController();
    this.state = 'running';
    const { settings, benchmark, budget } = this.run_;
    const agent = (seed: number) => rolloutAgentConfig(budget, 1, seed);
    try {
      await this.saveRun();
      while (this.step < settings.steps && !this.pauseRequested) {
        const next = this.step + 1;
        const samples: TurnSample[] = [];
        const skipped: string[] = [];
        // A fresh suffix per attempt, so rollouts of a step interrupted by a pause never join its retry.
        const attempt = Date.now().toString(36);
        const rolloutStart = performance.now();
        const decode0 = await this.decodeStats();
        for (let k = 0; k < budget.queriesPerStep && !this.pauseRequested; k++) {
          const idx = ((next - 1) * budget.queriesPerStep + k) % benchmark.items.length;
          const seeds = Array.from({ length: settings.groupSize }, (_, g) => rolloutSeed(settings.seed ?? 1, next, idx, g));
          const g = await collectGroup({
            runId: this.runId,
            groupId: `${this.runId}:step${next}:item${idx}:${attempt}`,
            item: benchmark.items[idx],
            kind: benchmark.kind,
            seeds,
            agent,
            // Runs stored before the setting existed get the default.
            concurrency: rolloutConcurrency(budget, settings.groupSize),
            engines: this.deps.engines,
            tools: this.deps.tools,
            signal: this.abort.signal,
            dbName: this.deps.dbName,
          });
          samples.push(...g.samples);
          skipped.push(...g.skipped);
        }
        if (this.pauseRequested) break;
        const rolloutSeconds = (performance.now() - rolloutStart) / 1000;
        const decode1 = await this.decodeStats();
        const decodeSteps = decode0 && decode1 ? decode1.steps - decode0.steps : 0;
        if (!samples.length) {
          throw new Error(
            `step ${next}: no rollout recorded a planner turn that can be trained on${skipped.length ? ` (${skipped.length} skipped, e.g. ${skipped[0]})` : ' (every planner call failed; see the runs in Chat)'}; the planner must run on this page's WebGPU runtime`,
          );
        }
        const stats = await this.deps.trainer.trainStep(samples);
        this.step = stats.step;
        const p: TrainingStepPoint = {
          ...toStepPoint(stats),
          rolloutSeconds,
          ...(decodeSteps > 0 ? { plannerSequencesPerStep: (decode1!.rows - decode0!.rows) / decodeSteps } : {}),
        };
        this.history.push(p);
        onStep(p);
        if (stats.step % checkpointEvery(this.run_) === 0) this.lastAdapterId = (await this.deps.trainer.trainCheckpoint()).adapterId;
        await this.saveRun();
      }
      if (this.step > 0) this.lastAdapterId = (await this.deps.trainer.trainCheckpoint()).adapterId;
      if (this.step >= settings.steps) {
        this.state = 'done';
        // The stored adapter can be activated for chat from the adapter list; training's copy goes.
        await this.deps.trainer.trainStop();
      } else this.state = 'paused';
    } catch (e) {
      this.state = 'error';
      throw e;
    } finally {
      this.abort = null;
      await this.saveRun().catch(() => undefined);
    }
  }

  /** The planner's decode counters, or null when it does not report them (or fails to: they are only shown). */
  private async decodeStats(): Promise<{ steps: number; rows: number } | null> {
    return (await this.deps.trainer.decodeStats?.().catch(() => null)) ?? null;
  }

  private async saveRun(status?: TrainingRunRecord['status']): Promise<void> {
    const rec: TrainingRunRecord = {
      id: this.runId,
      createdAt: this.createdAt,
      updatedAt: Date.now(),
      status: status ?? (this.state === 'idle' ? 'paused' : this.state),
      config: { ...this.run_ },
      stats: this.history.map((p) => ({ ...p })),
    };
    await (await openAgentDb(this.deps.dbName)).put('trainingRuns', rec);
  }
}

function grpoSettings(run: AgentRunConfig): Partial<GrpoConfig> {
  const s = run.settings;
  return {
    learningRate: s.learningRate,
    groupSize: s.groupSize,
    queriesPerStep: run.budget.queriesPerStep,
    maxTurns: run.budget.maxTurns,
    microBatchTokens: run.budget.microBatchTokens,
    seed: s.seed ?? 1,
    checkpointEvery: checkpointEvery(run),
  };
}

// Agent steps are slow and each checkpoint stores adapter + moments: every 10 steps, and at pause / end.
function checkpointEvery(run: AgentRunConfig): number {
  return Math.max(1, Math.min(10, run.settings.steps));
}

/** Agent-rollout runs that can be continued (paused, or cut off by a reload while running). */
export async function resumableAgentRuns(dbName?: string): Promise<TrainingRunRecord[]> {
  const all = await (await openAgentDb(dbName)).getAll('trainingRuns');
  return all.filter((r) => (r.config as { kind?: unknown }).kind === AGENT_RUN_KIND && (r.status === 'paused' || r.status === 'running')).sort((a, b) => b.updatedAt - a.updatedAt);
}

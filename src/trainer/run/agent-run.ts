// A training run of the real planner on agent rollouts: the spec a front end builds from its settings
// (benchmark items, rollout budgets, Flow-GRPO settings), and the collector rebuilt from a stored spec with
// the engines and tools at hand. The Training tab, <agentflow-chat> and `cli train` all go through here.
import type { AgentEngines } from '../../agent/loop';
import type { RewardKind } from '../../agent/rewards';
import type { TrainingRunRecord } from '../../store/records';
import type { Tool } from '../../tools/tool';
import type { LoraModule } from '../../io/peft';
import type { GrpoConfig } from '../grpo-config';
import type { PolicyTrainer } from '../training-host';
import { AgentCollector, type TrainingItem } from './agent-collector';
import { DEFAULT_AGENT_BUDGET, rolloutAgentConfig, rolloutConcurrency, type AgentBudget, type AgentRunData } from './agent-budget';
import { DEFAULT_BEST_WINDOW, type StepMetrics } from './metrics';
import type { RunSpec, RunStore, StartAdapterSpec, StoredRun } from './run-store';
import { agentRunEvaluator, type AgentEvalEnv } from './run-evaluator';
import type { RunDeps } from './training-run';

export { DEFAULT_AGENT_BUDGET, MAX_DEFAULT_ROLLOUT_CONCURRENCY, MAX_ROLLOUT_CONCURRENCY, rolloutAgentConfig, rolloutConcurrency, type AgentBudget, type AgentRunData } from './agent-budget';

export interface AgentRunSettings {
  benchmark: { name: string; kind: RewardKind; items: readonly TrainingItem[] };
  /** The planner engine's id (engines.planner.id). */
  planner: string;
  steps: number;
  groupSize: number;
  learningRate?: number;
  seed?: number;
  adapter: StartAdapterSpec;
  budget?: Partial<AgentBudget>;
  judge?: boolean;
  /** Checkpoint cadence; default every min(10, steps) steps (each stores the adapter and its moments). */
  checkpointEvery?: number;
  keepCheckpoints?: number;
  bestWindow?: number;
  /** Further Flow-GRPO settings (beta, clip ranges, ...). */
  grpo?: Partial<GrpoConfig>;
  label?: string;
}

/** Default number of checkpoints a run keeps besides its best one. */
export const DEFAULT_KEEP_CHECKPOINTS = 3;

/** A checked spec for an agent-rollout run; items without a reference answer are left out. */
export function agentRunSpec(s: AgentRunSettings): RunSpec {
  const items = s.benchmark.items.filter((i) => i.answer !== undefined && i.answer !== null).map((i) => ({ ...i }));
  if (!items.length) throw new Error(`training: benchmark “${s.benchmark.name}” has no item with a reference answer to score rollouts against`);
  if (!Number.isInteger(s.groupSize) || s.groupSize < 2) throw new Error(`training: group size must be an integer of at least 2, got ${s.groupSize}`);
  const budget: AgentBudget = { ...DEFAULT_AGENT_BUDGET, ...s.budget };
  budget.queriesPerStep = Math.min(budget.queriesPerStep, items.length);
  budget.rolloutConcurrency = rolloutConcurrency(budget, s.groupSize);
  const data: AgentRunData = { benchmark: { name: s.benchmark.name, kind: s.benchmark.kind, items }, budget, planner: s.planner, judge: !!s.judge };
  return {
    task: 'agent',
    label: s.label ?? `Planner on agent rollouts of “${s.benchmark.name}” (${s.planner})${s.adapter.kind === 'stored' ? `, from adapter “${s.adapter.name}”` : ''}`,
    dataset: s.benchmark.name,
    steps: s.steps,
    grpo: {
      ...s.grpo,
      ...(s.learningRate !== undefined ? { learningRate: s.learningRate } : {}),
      groupSize: s.groupSize,
      queriesPerStep: budget.queriesPerStep,
      maxTurns: budget.maxTurns,
      microBatchTokens: budget.microBatchTokens,
      seed: s.seed ?? 1,
      checkpointEvery: s.checkpointEvery ?? Math.max(1, Math.min(10, s.steps)),
    },
    adapter: s.adapter,
    keepCheckpoints: s.keepCheckpoints ?? DEFAULT_KEEP_CHECKPOINTS,
    bestWindow: s.bestWindow ?? DEFAULT_BEST_WINDOW,
    collector: data as unknown as Record<string, unknown>,
  };
}

/** The agent data of a stored spec, checked. */
export function agentRunData(spec: RunSpec): AgentRunData {
  const d = spec.collector as Partial<AgentRunData>;
  if (spec.task !== 'agent' || !d.benchmark?.items?.length || !d.budget || typeof d.planner !== 'string') {
    throw new Error(`training run “${spec.label}” is not an agent-rollout run (its stored settings have no benchmark, budget or planner)`);
  }
  return { benchmark: d.benchmark, budget: d.budget, planner: d.planner, judge: !!d.judge };
}

export interface AgentRunEnv {
  engines: AgentEngines;
  tools: Tool[];
  policy: PolicyTrainer;
  store: RunStore;
  dbName?: string;
  decodeStats?: RunDeps['decodeStats'];
  /** Each scored item of a held-out evaluation (spec.evaluation), for progress. */
  onEvalItem?: AgentEvalEnv['onItem'];
}

/** Run `runId`'s dependencies for `spec` with these engines: the planner must be the one the run trains. */
export function agentRunDeps(runId: string, spec: RunSpec, env: AgentRunEnv): RunDeps {
  const data = agentRunData(spec);
  if (env.engines.planner.id !== data.planner) {
    throw new Error(`training run “${spec.label}” trains planner ${data.planner}, but ${env.engines.planner.id} is loaded; load that planner to continue it`);
  }
  const groupSize = spec.grpo.groupSize ?? 8;
  const collector = new AgentCollector({
    runId,
    items: data.benchmark.items,
    engines: env.engines,
    tools: env.tools,
    agent: (seed) => rolloutAgentConfig(data.budget, spec.grpo.temperature ?? 1, seed),
    reward: { kind: data.benchmark.kind, ...(data.judge ? { judge: env.engines.shared } : {}) },
    concurrency: rolloutConcurrency(data.budget, groupSize),
    ...(env.store.rollouts ? { storage: env.store.rollouts } : {}),
  });
  // The held-out evaluation plays on the same engines and tools, with the adapter as trained so far.
  const evaluator = agentRunEvaluator(runId, spec, data, { engines: env.engines, tools: env.tools, ...(env.onEvalItem ? { onItem: env.onEvalItem } : {}) });
  return {
    collector,
    policy: env.policy,
    store: env.store,
    ...(env.dbName !== undefined ? { dbName: env.dbName } : {}),
    ...(env.decodeStats ? { decodeStats: env.decodeStats } : {}),
    ...(evaluator ? { evaluator } : {}),
  };
}

/** `config.kind` of agent runs stored before the training run became a library. */
const LEGACY_AGENT_KIND = 'agent-rollouts';

/** A run record written before the library (AgentTrainingDriver's), as a run; null for anything else. */
export function legacyAgentRun(rec: TrainingRunRecord): StoredRun | null {
  const c = rec.config as {
    kind?: unknown;
    settings?: { groupSize: number; steps: number; learningRate: number; rank: number; targets: LoraModule[]; seed?: number; startAdapter?: { id: string; name: string } | null };
    benchmark?: { name: string; kind: RewardKind; items: TrainingItem[] };
    budget?: AgentBudget;
    planner?: string;
  };
  if (c.kind !== LEGACY_AGENT_KIND || !c.settings || !c.benchmark || !c.budget || !c.planner) return null;
  const s = c.settings;
  const spec = agentRunSpec({
    benchmark: c.benchmark,
    planner: c.planner,
    steps: s.steps,
    groupSize: s.groupSize,
    learningRate: s.learningRate,
    seed: s.seed ?? 1,
    adapter: s.startAdapter ? { kind: 'stored', id: s.startAdapter.id, name: s.startAdapter.name } : { kind: 'fresh', rank: s.rank, alpha: 2 * s.rank, targets: s.targets },
    budget: c.budget,
  });
  const history = (rec.stats as unknown as Array<Partial<StepMetrics> & { step: number; reward: number }>).map((p) => ({ rewardStd: 0, rollingReward: p.reward, gradNorm: 0, plannerTokens: 0, samples: 0, noGradientGroups: 0, rolloutSeconds: 0, updateSeconds: 0, loss: 0, kl: 0, clipFraction: 0, tokensPerSecond: 0, ...p }));
  return { id: rec.id, createdAt: rec.createdAt, updatedAt: rec.updatedAt, status: rec.status, spec, history, result: null };
}

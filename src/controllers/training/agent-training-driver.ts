// The Training tab's real-planner runs: the form's settings become an agent-rollout run of the library
// (src/trainer/run/agent-run.ts) on the page's engines and tools, with the optimizer in the planner worker
// (PlannerClient implements PolicyTrainer) and the run stored in IndexedDB, so a paused run resumes after a
// reload. Everything else (rollouts, rewards, advantages, the update, checkpoints) is the library's.
import type { AgentEngines } from '../../agent/loop';
import type { RewardKind } from '../../agent/rewards';
import type { Tool } from '../../tools/tool';
import { agentRunDeps, agentRunSpec, type AgentBudget } from '../../trainer/run/agent-run';
import type { GrpoConfig } from '../../trainer/grpo-config';
import type { TrainingItem } from '../../trainer/run/agent-collector';
import { heldOutEvaluation } from '../../trainer/run/run-evaluator';
import { IdbRunStore, listRuns } from '../../trainer/run/run-store-idb';
import type { StoredRun } from '../../trainer/run/run-store';
import { newRunId, TrainingRun } from '../../trainer/run/training-run';
import type { PolicyTrainer } from '../../trainer/training-host';
import { RunDriver, startAdapterSpec, type TrainingSettings } from './training-driver';

export { DEFAULT_AGENT_BUDGET, MAX_DEFAULT_ROLLOUT_CONCURRENCY, MAX_ROLLOUT_CONCURRENCY, rolloutConcurrency, type AgentBudget } from '../../trainer/run/agent-run';

export interface AgentTrainingBenchmark {
  name: string;
  kind: RewardKind;
  items: readonly TrainingItem[];
}

export interface AgentTrainingDeps {
  /** The optimizer next to the planner (the planner worker's client). */
  trainer: PolicyTrainer;
  engines: AgentEngines;
  tools: Tool[];
  dbName?: string;
}

function env(deps: AgentTrainingDeps) {
  return { engines: deps.engines, tools: deps.tools, policy: deps.trainer, store: new IdbRunStore(deps.dbName), dbName: deps.dbName, decodeStats: deps.trainer.decodeStats ? () => deps.trainer.decodeStats!() : undefined };
}

/** Held-out evaluation during a run: another benchmark's items, every `every` steps (and at step 0 and the end). */
export interface AgentHeldOut {
  benchmark: AgentTrainingBenchmark;
  every: number;
}

/**
 * Starts a run of the planner on agent rollouts of `benchmark` with the form's settings. With `heldOut`, the run
 * evaluates its adapter on those items on schedule (the driver's run() passes onEval through; the points are in
 * `driver.trainingRun.evals` and the stored run's `evals`).
 */
export async function createAgentDriver(
  settings: TrainingSettings,
  benchmark: AgentTrainingBenchmark,
  deps: AgentTrainingDeps,
  budget: Partial<AgentBudget> = {},
  grpo: Partial<GrpoConfig> = {},
  heldOut?: AgentHeldOut,
): Promise<RunDriver> {
  const spec = agentRunSpec({
    benchmark,
    planner: deps.engines.planner.id,
    steps: settings.steps,
    groupSize: settings.groupSize,
    learningRate: settings.learningRate,
    seed: settings.seed,
    adapter: startAdapterSpec(settings),
    budget,
    grpo,
  });
  if (heldOut) spec.evaluation = heldOutEvaluation(heldOut.benchmark, heldOut.every);
  const id = newRunId('agent');
  return new RunDriver(await TrainingRun.start(id, spec, agentRunDeps(id, spec, env(deps))));
}

/** Continues a stored agent-rollout run from its newest intact checkpoint (after a reload). */
export async function resumeAgentDriver(runId: string, deps: AgentTrainingDeps): Promise<RunDriver> {
  const stored = await new IdbRunStore(deps.dbName).load(runId);
  if (!stored) throw new Error(`training run '${runId}' is not in this browser's storage`);
  if (stored.spec.task !== 'agent') throw new Error(`training run '${runId}' is not an agent-rollout run`);
  return new RunDriver(await TrainingRun.resume(runId, agentRunDeps(runId, stored.spec, env(deps))));
}

/** Agent-rollout runs that can be continued (paused, or cut off by a reload while running), newest first. */
export async function resumableAgentRuns(dbName?: string): Promise<StoredRun[]> {
  return (await listRuns(dbName)).filter((r) => r.spec.task === 'agent' && (r.status === 'paused' || r.status === 'running'));
}

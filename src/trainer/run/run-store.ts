// Where a training run keeps what it has done: its spec and status, one metrics record per step, the
// planner turns it trained on (with reward and advantage), and its result. Two implementations: IndexedDB
// for the page (run-store-idb.ts) and a directory for Node (run-store-dir.ts). Checkpoints are the
// optimizer's (PolicyTrainer), which sits next to the model: the run only asks for them.
import type { RolloutRecord } from '../../store/records';
import type { GrpoConfig } from '../grpo-config';
import type { LoraModule } from '../../io/peft';
import type { RolloutStorage } from './agent-collector';
import type { RewardKind } from '../../agent/rewards';
import type { TrainingItem } from './agent-collector';
import type { EvalPoint, StepMetrics } from './metrics';

/** The adapter a run starts from. */
export type StartAdapterSpec =
  | { kind: 'fresh'; rank: number; alpha: number; targets: LoraModule[] }
  /** A stored adapter: its id where the PolicyTrainer finds it (IndexedDB id, or a PEFT directory), its name for people. */
  | { kind: 'stored'; id: string; name: string };

/**
 * Held-out evaluation during a run: these items, scored by `kind`, with the adapter of step 0 (the start), of
 * every `every`-th step, and of the run's last step. Kept in the spec so a resumed run keeps its schedule.
 */
export interface RunEvaluation {
  every: number;
  /** The held-out data's name (a file name), for people. */
  dataset: string;
  kind: RewardKind;
  items: TrainingItem[];
}

/** Everything a run needs to be continued later, by any front end that can rebuild its collector. */
export interface RunSpec {
  /** Which collector plays the rollouts: the AgentFlow loop, or the toy task. */
  task: 'agent' | 'toy';
  /** For people: what is trained on what. */
  label: string;
  /** The data set's name ('toy' for the toy task). */
  dataset: string;
  steps: number;
  /** Flow-GRPO settings given by the user (the rest are the defaults); the optimizer's resolved copy is in its checkpoints. */
  grpo: Partial<GrpoConfig>;
  adapter: StartAdapterSpec;
  /** Checkpoints kept besides the best one (older ones are pruned). */
  keepCheckpoints: number;
  /** Steps the rolling reward averages; the best step by it is the run's result. */
  bestWindow: number;
  /** What the front end needs to rebuild its collector (benchmark items, budgets, tools, the planner's id). */
  collector: Record<string, unknown>;
  /** Control runs: every advantage forced to 0, so only the KL term moves the adapter. */
  zeroAdvantages?: boolean;
  /** Held-out evaluation during the run (the front end supplies the evaluator: RunDeps.evaluator). */
  evaluation?: RunEvaluation;
}

/** The run's result: the checkpoint of its best step by rolling reward (or its last step, before the window fills). */
export interface RunResult {
  step: number;
  /** Where the checkpoint's adapter is (IndexedDB adapter id, or a directory). */
  adapterId: string;
  rollingReward: number;
  /** Why this one: the best rolling reward, or the last step when no step filled the window. */
  reason: 'best' | 'last';
}

export type RunStatus = 'running' | 'paused' | 'done' | 'error';

export interface StoredRun {
  id: string;
  createdAt: number;
  updatedAt: number;
  status: RunStatus;
  spec: RunSpec;
  /** One entry per finished step, in order. */
  history: StepMetrics[];
  result: RunResult | null;
  /** Held-out evaluations, in step order (absent in runs stored before evaluation existed). */
  evals?: EvalPoint[];
  /** The last error, when status is 'error'. */
  error?: string;
}

export interface RunStore {
  load(runId: string): Promise<StoredRun | null>;
  /**
   * Writes the run's record (spec, status, result; history as the store keeps it), replacing the old one.
   * Evaluations are not written here: they are the store's (appendEval, truncate), whatever `run.evals` holds.
   */
  save(run: StoredRun): Promise<void>;
  /**
   * Records one finished step: its metrics and the planner turns it trained on, together (a crash leaves
   * both or neither, and never a torn record).
   */
  appendStep(run: StoredRun, metrics: StepMetrics, rollouts: readonly RolloutRecord[]): Promise<void>;
  /** Records one held-out evaluation (after its step is stored); the Node store appends it to eval.jsonl. */
  appendEval(run: StoredRun, point: EvalPoint): Promise<void>;
  /** Forgets steps, and evaluations, after `step` (a resumed run redoes them from its checkpoint). */
  truncate(runId: string, step: number): Promise<void>;
  /** Makes the result's adapter the run's published one (Node: `<out>/adapter/`); the page needs nothing. */
  publish?(run: StoredRun, result: RunResult): Promise<void>;
  /** Where rollouts keep their steps as they run (the page: conversations), if anywhere. */
  readonly rollouts?: RolloutStorage;
}

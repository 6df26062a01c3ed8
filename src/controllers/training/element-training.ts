// <agentflow-chat>'s training API: an embedding page fine-tunes the element's planner on its own questions
// with reference answers, through the library's TrainingRun (the same run as the Training tab and
// `cli train`), with the optimizer next to the planner (the planner worker) and the run in the element's
// IndexedDB database. Kept apart from the element so the element stays a chat view.
import type { AgentEngines } from '../../agent/loop';
import type { RewardKind } from '../../agent/rewards';
import type { Tool } from '../../tools/tool';
import { agentRunDeps, agentRunSpec, type AgentBudget } from '../../trainer/run/agent-run';
import type { TrainingItem } from '../../trainer/run/agent-collector';
import type { RolloutProgress } from '../../trainer/run/collector';
import type { EvalPoint, StepMetrics } from '../../trainer/run/metrics';
import { heldOutEvaluation } from '../../trainer/run/run-evaluator';
import { IdbRunStore } from '../../trainer/run/run-store-idb';
import { newRunId, TrainingRun, type RunSummary } from '../../trainer/run/training-run';
import type { PolicyTrainer } from '../../trainer/training-host';

export interface ElementTrainOptions {
  /** Queries with reference answers: AgentFlow data.json items (`query` or `question`, `answer`). */
  items: ReadonlyArray<TrainingItem | { question: string; answer: unknown }>;
  /** A name for the data set (labels, stored run). */
  name?: string;
  /** How answers are scored: a rule, or 'judge' (exact match, then the base model judges the misses). */
  reward?: RewardKind | 'judge';
  steps: number;
  groupSize?: number;
  learningRate?: number;
  /** LoRA rank of a fresh adapter (all seven target modules). */
  rank?: number;
  seed?: number;
  /** Start from a stored adapter (an id from the element's database) instead of a fresh one. */
  startAdapter?: { id: string; name: string };
  budget?: Partial<AgentBudget>;
  /** Dynamic sampling: more rollouts, up to this many, for a group with no success (default 8; 0: none). */
  extraRollouts?: number;
  /** A trust region on each update: the largest KL from the sampling policy an update may move its batch (default 0: none). */
  maxUpdateKl?: number;
  /**
   * Held-out items (same shape as `items`) to evaluate the adapter on during the run: at step 0, every
   * `evalEvery` steps (default 10) and at the last step, each once at temperature 0, scored like `items`.
   */
  evalItems?: ElementTrainOptions['items'];
  evalEvery?: number;
}

export interface ElementTrainingEvents {
  onStep(runId: string, m: StepMetrics): void;
  onProgress(runId: string, p: RolloutProgress): void;
  /** A held-out evaluation was stored (a failed one has `error`; the run goes on). */
  onEval?(runId: string, p: EvalPoint): void;
}

/** The engines to train on and the optimizer next to their planner (the planner worker's), if any. */
export interface TrainableEngines {
  engines: AgentEngines;
  trainer: PolicyTrainer | null;
}

function needTrainer(trainer: PolicyTrainer | null): PolicyTrainer {
  if (!trainer) throw new Error('training needs the planner on this page’s WebGPU runtime (a planner-model attribute, or your own engines with a `trainer`); web-llm and scripted engines give no token ids to train on');
  return trainer;
}

function deps(runId: string, spec: ReturnType<typeof agentRunSpec>, { engines, trainer }: TrainableEngines, tools: Tool[], dbName?: string) {
  const policy = needTrainer(trainer);
  return agentRunDeps(runId, spec, {
    engines,
    tools,
    policy,
    store: new IdbRunStore(dbName),
    dbName,
    ...(policy.decodeStats ? { decodeStats: () => policy.decodeStats!() } : {}),
  });
}

/** `items` as training items: each needs its query text (`query`, or `question`). */
function trainingItems(list: ElementTrainOptions['items'], field: string): TrainingItem[] {
  return list.map((it, i) => {
    const query = 'query' in it ? it.query : it.question;
    if (typeof query !== 'string' || !query.trim()) throw new Error(`train(): ${field}[${i}] has no 'query' (or 'question') text`);
    return { ...it, query };
  });
}

/** Starts a new run on the element's engines and tools (checked before anything is stored). */
export async function startElementTraining(o: ElementTrainOptions, on: TrainableEngines, tools: Tool[], dbName?: string): Promise<TrainingRun> {
  const items = trainingItems(o.items, 'items');
  const kind: RewardKind = o.reward === undefined || o.reward === 'judge' ? 'exact' : o.reward;
  const rank = o.rank ?? 16;
  const spec = agentRunSpec({
    benchmark: { name: o.name ?? 'embedded', kind, items },
    planner: on.engines.planner.id,
    steps: o.steps,
    groupSize: o.groupSize ?? 8,
    ...(o.learningRate !== undefined ? { learningRate: o.learningRate } : {}),
    ...(o.seed !== undefined ? { seed: o.seed } : {}),
    adapter: o.startAdapter ? { kind: 'stored', ...o.startAdapter } : { kind: 'fresh', rank, alpha: 2 * rank, targets: ['q', 'k', 'v', 'o', 'gate', 'up', 'down'] },
    ...(o.budget ? { budget: o.budget } : {}),
    judge: o.reward === 'judge',
    grpo: { ...(o.extraRollouts !== undefined ? { extraRollouts: o.extraRollouts } : {}), ...(o.maxUpdateKl !== undefined ? { maxUpdateKl: o.maxUpdateKl } : {}) },
  });
  if (o.evalItems) spec.evaluation = heldOutEvaluation({ name: `${o.name ?? 'embedded'} (held out)`, kind, items: trainingItems(o.evalItems, 'evalItems') }, o.evalEvery ?? 10);
  else if (o.evalEvery !== undefined) throw new Error('train(): evalEvery needs evalItems (the held-out items to evaluate on)');
  const id = newRunId('embed');
  return TrainingRun.start(id, spec, deps(id, spec, on, tools, dbName));
}

/** Continues a stored run of the element's database. */
export async function resumeElementTraining(runId: string, on: TrainableEngines, tools: Tool[], dbName?: string): Promise<TrainingRun> {
  const stored = await new IdbRunStore(dbName).load(runId);
  if (!stored) throw new Error(`training run '${runId}' is not in this element's storage`);
  return TrainingRun.resume(runId, deps(runId, stored.spec, on, tools, dbName));
}

/** Runs `run` to its end or until paused, reporting through `events`. */
export function driveTraining(run: TrainingRun, events: ElementTrainingEvents): Promise<RunSummary> {
  return run.run({ onStep: (m) => events.onStep(run.id, m), onProgress: (p) => events.onProgress(run.id, p), onEval: (p) => events.onEval?.(run.id, p) });
}

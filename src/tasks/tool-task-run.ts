// The tool-choice task as a training run: the tiny planner (float64 CPU backend) plays the real AgentFlow loop
// through the same AgentCollector and TrainingRun as a downloaded planner, with the frozen modules and the task's
// tools, its replies decoded under the loop's JSON Schemas (src/engine/grammar). A run's spec is an agent run's
// (its items the training split) that also records the task's seeds, so a resumed run — or a page — rebuilds
// the same task. No Node API here: `cli train --task tools` and a page driver both build runs with it.
import { SchemaGrammar } from '../engine/grammar/json-schema-constraint';
import type { LoraAdapter } from '../io/peft';
import type { ExperimentItemRecord } from '../store/records';
import type { PlannerPrompt } from '../agent/prompts';
import type { Tool } from '../tools/tool';
import type { GrpoConfig } from '../trainer/grpo-config';
import { AgentCollector } from '../trainer/run/agent-collector';
import { agentRunData, agentRunSpec, rolloutAgentConfig, type AgentBudget } from '../trainer/run/agent-run';
import { evaluateItems } from '../trainer/run/evaluate-items';
import { MAX_STRATUM_WEIGHT } from '../trainer/run/schedule';
import { evalOutcome } from '../trainer/run/run-evaluator';
import type { RunSpec, RunStore, StartAdapterSpec } from '../trainer/run/run-store';
import type { RunDeps, RunEvaluator } from '../trainer/run/training-run';
import { TrainingHost, type TrainStorage } from '../trainer/training-host';
import type { AgentConfigInput, AgentEngines } from '../agent/loop';
import type { ReplyConstraint } from './cpu-planner-engine';
import { checkKindNumbers, KINDS, type QuestionKind, type ToolTaskItem } from './tool-task-data';
import { liveAdapter, toolTask, toolTaskSettings, toolTaskTools, TOOL_TASK_PLANNER_ID, TOOL_TASK_SETTINGS_V1, type ToolTask, type ToolTaskModelOptions } from './tool-task';

/**
 * Rollout budgets: two turns (a two-part question needs both; a one-part question gets a second try), 48 new
 * tokens per planner reply (a constrained reply takes 30-40), the frozen modules' replies are short.
 */
export const TOOL_TASK_BUDGET: Readonly<AgentBudget> = Object.freeze({ maxTurns: 2, plannerTokens: 48, moduleTokens: 64, queriesPerStep: 8, microBatchTokens: 2048, rolloutConcurrency: 1 });

/**
 * Training defaults (README, "Tool-choice task"): 8 questions a step (drawn by kind, TOOL_TASK_KIND_WEIGHTS), groups
 * of 16, lr 0.01 decayed over 120 steps. At lr 0.02 held-out accuracy reached 0.9 and never fell below 0.85 on 14
 * of 17 fresh seeds, at 0.04 one of two seeds collapsed onto one tool, and at 0.01 ten of the twelve seeds run met
 * (README, "The trust region's cost", which also has what is not yet measured).
 */
export const TOOL_TASK_TRAINING = Object.freeze({ steps: 120, groupSize: 16, learningRate: 0.01, rank: 4, evaluateEvery: 10 });

/**
 * A new run's question mix: two-part questions twice as often as each other kind (the kind that needs two right
 * turns; README, "More two-part questions a step"). A spec stored before this default keeps what it recorded.
 */
export const TOOL_TASK_KIND_WEIGHTS: Readonly<Partial<Record<QuestionKind, number>>> = Object.freeze({ 'two-part': 2 });

/**
 * Flow-GRPO settings: as the toy's (src/trainer/run/toy-run.ts TOY_GRPO: no weight decay, no KL term — which
 * would cost a reference forward of every turn on the CPU — Adam beta2 0.99 and eps 1e-3), with the agent's
 * dynamic sampling budget and a step's learning rate scaled by the share of its groups with a reward spread
 * (lrBySignal; README, "An update sized by its evidence"). No trust region (maxUpdateKl; it was 0.03 for a day,
 * 2026-11-29): at lr 0.01 it cut the early updates, which measure KL 0.03-0.06, to about 0.6 of AdamW's step,
 * and seeds that met the target without it missed with it (README, "The trust region's cost"). A spec stored with
 * the bound keeps it.
 */
export const TOOL_TASK_GRPO: Partial<GrpoConfig> = Object.freeze({ weightDecay: 0, beta: 0, adamBeta2: 0.99, adamEps: 1e-3, extraRollouts: 8, lrBySignal: true });

/** What a run's spec records of the task (spec.collector.toolTask). */
export interface ToolTaskSpecData {
  seed: number;
  /** The arithmetic tool (default the calculator; 'python' needs the front end's Python tool). */
  arithmetic?: 'python' | 'calculator';
  trainPerKind?: number;
  heldOutPerKind?: number;
  /** Training questions of the kinds named, instead of trainPerKind (absent in runs stored before it: none). */
  trainCounts?: Partial<Record<QuestionKind, number>>;
  /** The converter's tool name (new runs record TOOL_TASK_CONVERTER; absent: the first shape's). */
  converterName?: string;
  /** The planner's prompt (new runs record TOOL_TASK_PLANNER_PROMPT; absent: the first shape's 'full'). */
  plannerPrompt?: PlannerPrompt;
  /** Characters of the planner's sub-goal (new runs record TOOL_TASK_SUB_GOAL_CHARS; absent: the first shape's 8). */
  subGoalChars?: number;
  /** The tokenizer also learns each lookup entity's word (new runs record TOOL_TASK_ENTITY_WORDS; absent: the first shape's false). */
  entityWords?: boolean;
  /** The tiny planner's shape (new runs record TOOL_TASK_MODEL in full; absent fields: the first shape's). */
  model?: ToolTaskModelOptions;
  /**
   * A step draws one question of each kind in turn (the schedule's strata) instead of at random. New runs
   * set it (measured: held-out 0.219 → 0.438 and 0.188 → 0.500 at step 20 for seeds 3 and 1, against
   * 0.250 and 0.313 drawing at random); a run stored without it keeps drawing as it did.
   */
  drawByKind?: boolean;
  /**
   * With drawByKind, how often each kind comes up in a step's rotation (default 1 each; the schedule's
   * strataCycle). Absent in runs stored before it: they draw the kinds equally, as they did.
   */
  kindWeights?: Partial<Record<QuestionKind, number>>;
}

/** The agent settings of a rollout of the task: the run's rollout settings with the task's reply limits. */
export function toolTaskAgentConfig(budget: AgentBudget, temperature: number, seed: number, task: Pick<ToolTask, 'plannerPrompt' | 'replyLimits'>): AgentConfigInput {
  return { ...rolloutAgentConfig(budget, temperature, seed), replyLimits: { ...task.replyLimits }, plannerPrompt: task.plannerPrompt };
}

export interface ToolTaskRunSettings {
  task?: ToolTaskSpecData;
  steps?: number;
  groupSize?: number;
  learningRate?: number;
  seed?: number;
  adapter?: StartAdapterSpec;
  queriesPerStep?: number;
  /** Rollout budgets over TOOL_TASK_BUDGET's (turns, tokens); held-out evaluation plays the same turns. */
  budget?: Partial<AgentBudget>;
  /** Held-out evaluation every this many steps (and at step 0 and the last); 0: none. */
  evaluateEvery?: number;
  keepCheckpoints?: number;
  grpo?: Partial<GrpoConfig>;
  label?: string;
}

/** A checked spec for a run of the task. */
export function toolTaskRunSpec(s: ToolTaskRunSettings = {}): RunSpec {
  // The shape and question counts are written out, so the run rebuilds the same planner whatever the defaults become.
  const { converterName, plannerPrompt, subGoalChars, entityWords, trainPerKind, model } = toolTaskSettings(s.task);
  const data: ToolTaskSpecData = { seed: 1, drawByKind: true, kindWeights: { ...TOOL_TASK_KIND_WEIGHTS }, ...s.task, converterName, plannerPrompt, subGoalChars, entityWords, trainPerKind, model };
  const task = toolTask(data);
  // A bad weight is refused here, naming the kind, not at the run's first step.
  if (data.kindWeights) kindWeightList(data.kindWeights);
  const rank = TOOL_TASK_TRAINING.rank;
  const steps = s.steps ?? TOOL_TASK_TRAINING.steps;
  const spec = agentRunSpec({
    benchmark: { name: `tool-task-${data.seed}-train`, kind: 'exact', items: task.splits.train },
    planner: TOOL_TASK_PLANNER_ID,
    steps,
    groupSize: s.groupSize ?? TOOL_TASK_TRAINING.groupSize,
    learningRate: s.learningRate ?? TOOL_TASK_TRAINING.learningRate,
    seed: s.seed ?? 1,
    adapter: s.adapter ?? { kind: 'fresh', rank, alpha: 2 * rank, targets: ['q', 'k', 'v', 'o', 'gate', 'up', 'down'] },
    budget: { ...TOOL_TASK_BUDGET, ...s.budget, ...(s.queriesPerStep !== undefined ? { queriesPerStep: s.queriesPerStep } : {}) },
    grpo: { ...TOOL_TASK_GRPO, lrDecaySteps: steps, ...s.grpo },
    checkpointEvery: 1,
    ...(s.keepCheckpoints !== undefined ? { keepCheckpoints: s.keepCheckpoints } : {}),
    label: s.label ?? `Tool-choice task (tiny planner, CPU), questions of seed ${data.seed}`,
  });
  spec.collector = { ...spec.collector, toolTask: { ...data } };
  const every = s.evaluateEvery ?? TOOL_TASK_TRAINING.evaluateEvery;
  if (every > 0) spec.evaluation = { every, dataset: `tool-task-${data.seed}-held-out`, kind: 'exact', items: task.splits.heldOut };
  return spec;
}

/**
 * The task a spec was made for, or null for any other run. A run stored before specs recorded the shape and
 * question counts was made on the first shape with 12 questions a kind, and is rebuilt so.
 */
export function toolTaskOf(spec: RunSpec): ToolTaskSpecData | null {
  const t = (spec.collector as { toolTask?: ToolTaskSpecData }).toolTask;
  if (!t || typeof t.seed !== 'number') return null;
  return { ...TOOL_TASK_SETTINGS_V1, ...t, model: { ...TOOL_TASK_SETTINGS_V1.model, ...t.model } };
}

/** The grammar a reply of the task's planner must follow (compiled once per schema for its tokenizer). */
export function toolTaskConstraint(task: ToolTask): (schema: string) => Promise<ReplyConstraint> {
  const grammar = SchemaGrammar.for(task.tokenizer, { vocabSize: task.model.config.vocabSize, stopIds: task.tokenizer.stopTokenIds });
  return async (schema) => (await grammar).matcher(schema);
}

export interface ToolTaskEvalOptions {
  items: ToolTaskTaskItems;
  /** The task's planner prompt and reply limits (a ToolTask's). */
  task: Pick<ToolTask, 'plannerPrompt' | 'replyLimits'>;
  /** Planner turns and tokens (default TOOL_TASK_BUDGET's): a run's evaluation plays its own. */
  budget?: Pick<AgentBudget, 'maxTurns' | 'plannerTokens'>;
  temperature?: number;
  samples?: number;
  seed?: number;
  experimentId?: string;
  signal?: AbortSignal;
  onItem?: (rec: ExperimentItemRecord, done: number, total: number) => void;
}

type ToolTaskTaskItems = ToolTask['splits']['heldOut'];

/** Plays `items` through the loop on these engines and tools (evaluateItems: `cli eval`'s records). */
export function evaluateToolTask(engines: AgentEngines, tools: Tool[], o: ToolTaskEvalOptions): Promise<ExperimentItemRecord[]> {
  return evaluateItems({
    items: o.items,
    kind: 'exact',
    engines,
    tools,
    experimentId: o.experimentId ?? 'tool-task-eval',
    maxTurns: o.budget?.maxTurns ?? TOOL_TASK_BUDGET.maxTurns,
    maxNewTokens: o.budget?.plannerTokens ?? TOOL_TASK_BUDGET.plannerTokens,
    temperature: o.temperature ?? 0,
    samples: o.samples ?? 1,
    seed: o.seed ?? 1,
    agent: { replyLimits: { ...o.task.replyLimits }, plannerPrompt: o.task.plannerPrompt },
    ...(o.signal ? { signal: o.signal } : {}),
    ...(o.onItem ? { onItem: o.onItem } : {}),
  });
}

/** Accuracy of evaluation records (an item that threw counts as wrong). */
export function accuracyOf(recs: readonly ExperimentItemRecord[]): number {
  return recs.length ? recs.filter((r) => r.correct === true).length / recs.length : 0;
}

export interface ToolTaskRunSetup {
  task: ToolTask;
  host: TrainingHost;
  engines: AgentEngines;
  tools: Tool[];
  deps: RunDeps;
  destroy(): void;
}

/**
 * Everything a run of `spec` needs: the task rebuilt from its seeds, a TrainingHost on the CPU backend, the
 * planner sampling with the live adapter under the grammar, the collector, and the held-out evaluator.
 * `python` is the Python tool of the front end (the page's PythonTool, the CLI's Node one).
 */
export function toolTaskRunSetup(o: {
  runId: string;
  spec: RunSpec;
  store: RunStore;
  storage: (dbName?: string) => Promise<TrainStorage>;
  /** The front end's Python tool, for a task whose arithmetic tool is Python. */
  python?: Tool;
  dbName?: string;
  onEvalItem?: (step: number, rec: ExperimentItemRecord) => void;
}): ToolTaskRunSetup {
  const data = toolTaskOf(o.spec);
  if (!data) throw new Error(`training run “${o.spec.label}” is not a tool-choice task run (its stored settings have no toolTask)`);
  const agent = agentRunData(o.spec);
  const task = toolTask(data);
  if (data.arithmetic === 'python' && !o.python) throw new Error('tool task: this run computes with Python, but no Python tool was given');
  const policyHost = task.policyHost();
  const host = new TrainingHost(() => policyHost, o.storage);
  const planner = task.planner({ adapter: liveAdapter(host), constraint: toolTaskConstraint(task) });
  const engines: AgentEngines = { planner, shared: task.shared };
  const tools = toolTaskTools(data.arithmetic === 'python' ? o.python! : null, task.shared, task.converterName);
  const collector = new AgentCollector({
    runId: o.runId,
    items: agent.benchmark.items,
    engines,
    tools,
    agent: (seed) => toolTaskAgentConfig(agent.budget, o.spec.grpo.temperature ?? 1, seed, task),
    reward: { kind: 'exact' },
    concurrency: 1,
    ...(o.store.rollouts ? { storage: o.store.rollouts } : {}),
    ...(data.drawByKind ? { strata: kindStrata(agent.benchmark.items) } : {}),
    ...(data.drawByKind && data.kindWeights ? { strataWeights: kindWeightList(data.kindWeights) } : {}),
  });
  const e = o.spec.evaluation;
  const evaluator: RunEvaluator | undefined = e && {
    async evaluate({ step, signal, onItem }) {
      const recs = await evaluateToolTask(engines, tools, {
        task,
        items: e.items as ToolTaskTaskItems,
        budget: agent.budget,
        experimentId: `${o.runId}-eval-step-${step}`,
        ...(signal ? { signal } : {}),
        onItem: (rec, done, total) => {
          o.onEvalItem?.(step, rec);
          onItem?.(done, total);
        },
      });
      return evalOutcome(recs);
    },
  };
  return {
    task,
    host,
    engines,
    tools,
    deps: { collector, policy: host, store: o.store, ...(o.dbName !== undefined ? { dbName: o.dbName } : {}), ...(evaluator ? { evaluator } : {}) },
    destroy: () => void host.trainStop(),
  };
}

/** Each item's question kind as a stratum (its index in KINDS), for a run that draws one of each kind a step. */
function kindStrata(items: readonly unknown[]): number[] {
  return items.map((item, i) => {
    const k = KINDS.indexOf((item as Partial<ToolTaskItem>).kind as ToolTaskItem['kind']);
    if (k < 0) throw new Error(`tool task: training item ${i} has no question kind (${JSON.stringify((item as Partial<ToolTaskItem>).kind)}); a run that draws by kind needs one`);
    return k;
  });
}

/** The kinds' weights as the schedule takes them (indexed by the kind's stratum, its index in KINDS); throws naming an unknown kind. */
export function kindWeightList(w: Partial<Record<QuestionKind, number>>): number[] {
  checkKindNumbers('kindWeights', w, MAX_STRATUM_WEIGHT);
  return KINDS.map((k) => w[k] ?? 1);
}

/** The task's planner with a fixed adapter (null: the untrained base model), under the grammar: for `cli eval`. */
export function toolTaskEvalEngines(task: ToolTask, adapter: LoraAdapter | null, python: Tool | null): { engines: AgentEngines; tools: Tool[] } {
  const planner = task.planner({ adapter: () => ({ adapter, id: adapter ? 'adapter' : null }), constraint: toolTaskConstraint(task) });
  return { engines: { planner, shared: task.shared }, tools: toolTaskTools(python, task.shared, task.converterName) };
}

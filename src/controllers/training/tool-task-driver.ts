// The Training tab's tool-choice task: the tiny planner (float64, CPU) playing the real AgentFlow loop on the
// task's questions, a run of the same TrainingRun that `cli train --task tools` drives (toolTaskRunSpec +
// toolTaskRunSetup), stored in IndexedDB, evaluated on the task's held-out split. Nothing is downloaded.
// The panel runs it in a worker (tool-task-training.worker.ts): a step takes seconds of CPU work.
import type { ToolTaskSpecData } from '../../tasks/tool-task-run';
import type { RunSpec } from '../../trainer/run/run-store';
import type { RunDeps } from '../../trainer/run/training-run';
import { toolTaskOf, toolTaskRunSetup, toolTaskRunSpec, TOOL_TASK_BUDGET, TOOL_TASK_GRPO, TOOL_TASK_TRAINING } from '../../tasks/tool-task-run';
import { idbTrainStorage } from '../../trainer/checkpoint-idb';
import { IdbRunStore } from '../../trainer/run/run-store-idb';
import { newRunId, TrainingRun } from '../../trainer/run/training-run';
import { RunDriver, startAdapterSpec, startLabel, type TrainingSettings } from './training-driver';

/** The form's defaults for the task: the CLI's for `--task tools` (src/cli/train.ts). */
export const TOOL_TASK_FORM_DEFAULTS = Object.freeze({
  ...TOOL_TASK_TRAINING,
  queriesPerStep: TOOL_TASK_BUDGET.queriesPerStep,
  extraRollouts: TOOL_TASK_GRPO.extraRollouts ?? 8,
  maxUpdateKl: TOOL_TASK_GRPO.maxUpdateKl ?? 0,
});

/** A tool-task run's own settings, beside the form's common ones. */
export interface ToolTaskSettings {
  queriesPerStep?: number;
  /** Held-out evaluation every this many steps (and at step 0 and the last); 0: none. */
  evaluateEvery?: number;
  extraRollouts?: number;
  /** The trust region's bound (GrpoConfig.maxUpdateKl; 0: none); the task's default where left out. */
  maxUpdateKl?: number;
  /** The task's questions (seeds, split sizes); the task's defaults where left out. */
  task?: Partial<ToolTaskSpecData>;
}

/** A new tool-task run in this thread (the worker calls this), stored in IndexedDB `dbName`. */
export async function createToolTaskDriver(settings: TrainingSettings & { toolTask?: ToolTaskSettings }, dbName?: string): Promise<RunDriver> {
  const t = settings.toolTask ?? {};
  const spec = toolTaskRunSpec({
    steps: settings.steps,
    groupSize: settings.groupSize,
    learningRate: settings.learningRate,
    ...(settings.seed !== undefined ? { seed: settings.seed } : {}),
    adapter: startAdapterSpec(settings),
    ...(t.queriesPerStep !== undefined ? { queriesPerStep: t.queriesPerStep } : {}),
    ...(t.evaluateEvery !== undefined ? { evaluateEvery: t.evaluateEvery } : {}),
    grpo: { ...(t.extraRollouts !== undefined ? { extraRollouts: t.extraRollouts } : {}), ...(t.maxUpdateKl !== undefined ? { maxUpdateKl: t.maxUpdateKl } : {}) },
    ...(t.task ? { task: { seed: 1, ...t.task } } : {}),
    label: `Tool-choice task (tiny planner, CPU)${startLabel(settings)}`,
  });
  const runId = newRunId('tools');
  return open(runId, spec, dbName, (deps) => TrainingRun.start(runId, spec, deps));
}

/** Continues a stored tool-task run from its newest intact checkpoint. */
export async function resumeToolTaskDriver(runId: string, dbName?: string): Promise<RunDriver> {
  const stored = await new IdbRunStore(dbName).load(runId);
  if (!stored) throw new Error(`training run '${runId}' is not in this browser's storage`);
  if (!toolTaskOf(stored.spec)) throw new Error(`training run '${runId}' is not a tool-choice task run`);
  return open(runId, stored.spec, dbName, (deps) => TrainingRun.resume(runId, deps));
}

async function open(
  runId: string,
  spec: RunSpec,
  dbName: string | undefined,
  begin: (deps: RunDeps) => Promise<TrainingRun>,
): Promise<RunDriver> {
  const setup = toolTaskRunSetup({ runId, spec, store: new IdbRunStore(dbName), storage: idbTrainStorage, ...(dbName !== undefined ? { dbName } : {}) });
  try {
    return new RunDriver(await begin(setup.deps), () => setup.destroy());
  } catch (e) {
    setup.destroy();
    throw e;
  }
}

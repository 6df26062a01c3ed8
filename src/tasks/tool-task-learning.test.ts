// The tool-choice task learns (issue 26 item 3): the tiny planner, trained with the task's own defaults through
// the real loop (AgentCollector, the frozen modules, the task's tools, TrainingRun's Flow-GRPO on the float64
// CPU backend), goes from chance to >= 0.9 of the held-out questions at temperature 0. A few minutes on a 2-core
// CPU: the default run (TOOL_TASK_TRAINING.steps, its learning-rate schedule) is paused after LEARNING_STEPS.
import { describe, expect, it } from 'vitest';
import { memoryTrainStorage } from '../trainer/checkpoint-memory';
import { MemoryRunStore } from '../trainer/run/run-store-memory';
import { TrainingRun } from '../trainer/run/training-run';
import { toolTaskRunSetup, toolTaskRunSpec, TOOL_TASK_TRAINING } from './tool-task-run';

/** Steps of the CI run: the first LEARNING_STEPS of the default run's schedule (README, "Tool-choice task"). */
const LEARNING_STEPS = 20;
/**
 * Questions and run seed. The run is deterministic (float64, seeded). Seed 185 (never used while tuning; README,
 * "The pair on fresh seeds, against groups of 16 alone") is at 0.594 at step 10 and 0.938 at step 20 of the default
 * run (lr 0.01; with the trust region that was the default for a day it was 0.781 at step 20 and 0.906 at 40:
 * README, "The trust region's cost"), so CI runs 20 steps. Other seeds reach 0.9 later (step 40-120), so the
 * threshold does not hold for every seed at step 20.
 */
const SEED = 185;
/** The target, and the untrained planner's accuracy (chance under the schema) it must start near. */
const THRESHOLD = 0.9;
const CHANCE_AT_MOST = 0.35;

describe('tool-choice task learning', () => {
  it(`raises held-out accuracy from chance to >= ${THRESHOLD} in the default run's first ${LEARNING_STEPS} steps`, async () => {
    const spec = toolTaskRunSpec({ evaluateEvery: LEARNING_STEPS, seed: SEED, task: { seed: SEED }, keepCheckpoints: 1 });
    expect(spec.steps).toBe(TOOL_TASK_TRAINING.steps);
    const store = new MemoryRunStore();
    const storage = memoryTrainStorage();
    const setup = toolTaskRunSetup({ runId: 'learn', spec, store, storage: async () => storage });
    const run = await TrainingRun.start('learn', spec, setup.deps);
    // Pause once step LEARNING_STEPS is evaluated: the run stops before its next step.
    const summary = await run.run({ onEval: (e) => void (e.step >= LEARNING_STEPS && run.pause()) });
    setup.destroy();
    expect(summary.steps).toBe(LEARNING_STEPS);
    const evals = (await store.load('learn'))!.evals!.map((e) => ({ step: e.step, accuracy: e.accuracy, total: e.total }));
    expect(evals.map((e) => [e.step, e.total])).toEqual([[0, 32], [LEARNING_STEPS, 32]]);
    const [before, after] = evals.map((e) => e.accuracy);
    expect(before, `held-out accuracy ${before} at step 0`).toBeLessThanOrEqual(CHANCE_AT_MOST);
    expect(after, `held-out accuracy ${before} at step 0, ${after} at step ${LEARNING_STEPS}`).toBeGreaterThanOrEqual(THRESHOLD);
  }, 900_000);
});

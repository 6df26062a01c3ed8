// Runs a tool-choice task run off the main thread: each step is seconds of float64 CPU work (rollouts through
// the agent loop, then the update), and the page (charts, the Pause button) must stay responsive meanwhile.
// It serves the toy worker's API, so the panel drives both with WorkerRunDriver.
import * as Comlink from 'comlink';
import type { RolloutProgress } from '../src/trainer/run/collector';
import type { EvalPoint } from '../src/trainer/run/metrics';
import type { RunResult } from '../src/trainer/run/run-store';
import { createToolTaskDriver, resumeToolTaskDriver, type ToolTaskSettings } from '../src/controllers/training/tool-task-driver';
import type { RunDriver, ToyRunDescription, ToyTrainingWorkerApi, TrainingSettings, TrainingStepPoint } from '../src/controllers/training/training-driver';

let driver: RunDriver | null = null;

const describe = (d: RunDriver): ToyRunDescription => ({ runId: d.runId, label: d.label, steps: d.steps, history: d.history, notes: [...d.notes] });

const api: ToyTrainingWorkerApi = {
  async create(settings: TrainingSettings & { toolTask?: ToolTaskSettings }, dbName?: string) {
    driver?.dispose();
    driver = await createToolTaskDriver(settings, dbName);
    return describe(driver);
  },
  async resume(runId: string, dbName?: string) {
    driver?.dispose();
    driver = await resumeToolTaskDriver(runId, dbName);
    return describe(driver);
  },
  async run(onStep: (p: TrainingStepPoint) => void, onProgress?: (p: RolloutProgress) => void, onEval?: (e: EvalPoint) => void): Promise<{ state: RunDriver['state']; result: RunResult | null }> {
    if (!driver) throw new Error('tool-task training worker: create() was not called');
    await driver.run((p) => void onStep(p), { ...(onProgress ? { onProgress: (p) => void onProgress(p) } : {}), ...(onEval ? { onEval: (e) => void onEval(e) } : {}) });
    return { state: driver.state, result: driver.result };
  },
  pause(): void {
    driver?.pause();
  },
};

Comlink.expose(api);

// Runs a toy training run off the main thread: each CPU step is a long computation, and the page (charts,
// the Pause button) must stay responsive while it runs. IndexedDB works in workers, so the checkpoints and
// the run record are stored from here.
import * as Comlink from 'comlink';
import type { RunResult } from '../src/trainer/run/run-store';
import type { RolloutProgress } from '../src/trainer/run/collector';
import { createToyDriver, resumeToyDriver, type RunDriver, type ToyRunDescription, type ToyTrainingWorkerApi, type TrainingSettings, type TrainingStepPoint } from '../src/controllers/training/training-driver';

let driver: RunDriver | null = null;

const describe = (d: RunDriver): ToyRunDescription => ({ runId: d.runId, label: d.label, steps: d.steps, history: d.history, notes: [...d.notes] });

const api: ToyTrainingWorkerApi = {
  async create(settings: TrainingSettings, dbName?: string) {
    driver?.dispose();
    driver = await createToyDriver(settings, dbName);
    return describe(driver);
  },
  async resume(runId: string, dbName?: string) {
    driver?.dispose();
    driver = await resumeToyDriver(runId, dbName);
    return describe(driver);
  },
  async run(onStep: (p: TrainingStepPoint) => void, onProgress?: (p: RolloutProgress) => void): Promise<{ state: RunDriver['state']; result: RunResult | null }> {
    if (!driver) throw new Error('toy training worker: create() was not called');
    await driver.run((p) => void onStep(p), onProgress ? { onProgress: (p) => void onProgress(p) } : {});
    return { state: driver.state, result: driver.result };
  },
  pause(): void {
    driver?.pause();
  },
};

Comlink.expose(api);

// Runs the toy Flow-GRPO driver off the main thread: each CPU step is a long computation, and the page
// (charts, the Pause button) must stay responsive while it runs. IndexedDB works in workers, so the
// checkpoints and the run record are stored from here.
import * as Comlink from 'comlink';
import { ToyTrainingDriver, type TrainingSettings, type TrainingStepPoint } from './training-driver';

let driver: ToyTrainingDriver | null = null;

const api = {
  async create(settings: TrainingSettings, dbName?: string): Promise<{ runId: string; label: string }> {
    driver = await ToyTrainingDriver.create(settings, dbName);
    return { runId: driver.runId, label: driver.label };
  },
  async run(onStep: (p: TrainingStepPoint) => void): Promise<ToyTrainingDriver['state']> {
    if (!driver) throw new Error('toy training worker: create() was not called');
    await driver.run((p) => void onStep(p));
    return driver.state;
  },
  pause(): void {
    driver?.pause();
  },
};

export type ToyTrainingWorkerApi = typeof api;
Comlink.expose(api);

// The Training tab's drivers for the tiny planners (the toy task and the tool-choice task): in a module worker
// where the browser has them, so a step's seconds of CPU work never freeze the page; on the page otherwise.
import type { TrainingDriver, TrainingSettings } from './training-driver';
import { createToyDriver, resumeToyDriver, WorkerToyTrainingDriver } from './training-driver';
import { createToolTaskDriver, resumeToolTaskDriver, type ToolTaskSettings } from './tool-task-driver';
import { WorkerToolTaskDriver } from './tool-task-worker';

const workers = (): boolean => typeof Worker === 'function';

export const createToy = (s: TrainingSettings, db?: string): Promise<TrainingDriver> => (workers() ? WorkerToyTrainingDriver.create(s, db) : createToyDriver(s, db));
export const resumeToy = (id: string, db?: string): Promise<TrainingDriver> => (workers() ? WorkerToyTrainingDriver.resume(id, db) : resumeToyDriver(id, db));
export const createToolTask = (s: TrainingSettings & { toolTask?: ToolTaskSettings }, db?: string): Promise<TrainingDriver> =>
  workers() ? WorkerToolTaskDriver.create(s, db) : createToolTaskDriver(s, db);
export const resumeToolTask = (id: string, db?: string): Promise<TrainingDriver> => (workers() ? WorkerToolTaskDriver.resume(id, db) : resumeToolTaskDriver(id, db));

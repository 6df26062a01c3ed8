// The tool-choice task's runs in a module worker (tool-task-training.worker.ts), the panel's default where the
// browser has workers. Kept apart from tool-task-driver.ts, which the worker itself imports.
import type { ToolTaskSettings } from './tool-task-driver';
import { WorkerRunDriver, type RunWorker, type TrainingSettings } from './training-driver';

const TOOL_TASK_WORKER: RunWorker = {
  start: () => new Worker(new URL('../../../workers/tool-task-training.worker.ts', import.meta.url), { type: 'module', name: 'tool-task-training' }),
  name: 'tool-choice task training',
};

export const WorkerToolTaskDriver = {
  create: (settings: TrainingSettings & { toolTask?: ToolTaskSettings }, dbName?: string): Promise<WorkerRunDriver> => WorkerRunDriver.create(TOOL_TASK_WORKER, settings, dbName),
  resume: (runId: string, dbName?: string): Promise<WorkerRunDriver> => WorkerRunDriver.resume(TOOL_TASK_WORKER, runId, dbName),
};

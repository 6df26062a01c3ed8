// What the Training panel drives: a TrainingDriver starts, pauses and resumes a training run and reports
// each step. Every driver here is a thin wrapper of the library's TrainingRun (src/trainer/run/): the toy
// task's tiny planner on the float64 CPU backend (any browser, with or without WebGPU; in a worker by
// default) and, in agent-training-driver.ts, the real planner on agent rollouts.
import type { LoraModule } from '../../io/peft';
import { idbTrainStorage } from '../../trainer/checkpoint-idb';
import type { EvalPoint, StepMetrics } from '../../trainer/run/metrics';
import type { RolloutProgress } from '../../trainer/run/collector';
import type { RunResult, StartAdapterSpec } from '../../trainer/run/run-store';
import { IdbRunStore } from '../../trainer/run/run-store-idb';
import { TOY_BASE_MODEL, toyRunSetup, toyRunSpec } from '../../trainer/run/toy-run';
import { newRunId, TrainingRun, type RunEvents } from '../../trainer/run/training-run';
import { guardCalls, watchWorker, type WorkerWatch } from '../../util/worker-watch';

export { TOY_BASE_MODEL };

export interface TrainingSettings {
  /** 'toy' or the name of an imported benchmark. */
  dataset: string;
  reward: string;
  groupSize: number;
  steps: number;
  learningRate: number;
  rank: number;
  targets: LoraModule[];
  seed?: number;
  /**
   * Start from this stored adapter (IndexedDB 'adapters') instead of a fresh one; rank and targets are then
   * the adapter's. Kept in the run record, so a run says what it started from.
   */
  startAdapter?: StartAdapter | null;
}

/** The stored adapter a run starts from: its id to load it, its name for people. */
export interface StartAdapter {
  id: string;
  name: string;
}

/** ", from adapter “name”" for labels of runs that start from a stored adapter. */
export function startLabel(s: TrainingSettings): string {
  return s.startAdapter ? `, from adapter “${s.startAdapter.name}”` : '';
}

/** One step on the charts: the run's step metrics (older stored runs lack some fields; they plot as gaps). */
export type TrainingStepPoint = StepMetrics;

export type TrainingState = 'idle' | 'running' | 'paused' | 'done' | 'error';

export interface TrainingDriver {
  readonly label: string;
  readonly runId: string;
  readonly state: TrainingState;
  readonly history: TrainingStepPoint[];
  /** Steps the run is set to take. */
  readonly steps?: number;
  /** The run's result once it has one: its best checkpoint by rolling reward (or its last). */
  readonly result?: RunResult | null;
  /** Things to tell the user about how the run (re)started. */
  readonly notes?: readonly string[];
  /** Runs steps until the run's steps are done or pause() is called; resolves then. */
  run(onStep: (p: TrainingStepPoint) => void, events?: Omit<RunEvents, 'onStep'>): Promise<void>;
  pause(): void;
  /**
   * Frees what the driver holds beyond its stored run (a worker); called when the panel replaces or drops
   * it. Every finished step is already in IndexedDB, so nothing is lost.
   */
  dispose?(): void;
}

/** The start adapter of a run from the form's settings. */
export function startAdapterSpec(s: TrainingSettings): StartAdapterSpec {
  return s.startAdapter ? { kind: 'stored', id: s.startAdapter.id, name: s.startAdapter.name } : { kind: 'fresh', rank: s.rank, alpha: 2 * s.rank, targets: [...s.targets] };
}

/**
 * A TrainingDriver over a TrainingRun in this thread: the run's own fields under the panel's names (the history
 * as a copy), and `dispose` frees what the run's setup holds.
 */
export class RunDriver implements TrainingDriver {
  constructor(
    readonly trainingRun: TrainingRun,
    readonly dispose: () => void = () => undefined,
  ) {}

  get runId(): string { return this.trainingRun.id; }
  get label(): string { return this.trainingRun.spec.label; }
  get steps(): number { return this.trainingRun.spec.steps; }
  get state(): TrainingState { return this.trainingRun.state; }
  get history(): TrainingStepPoint[] { return [...this.trainingRun.history]; }
  get result(): RunResult | null { return this.trainingRun.result; }
  get notes(): readonly string[] { return this.trainingRun.notes; }

  async run(onStep: (p: TrainingStepPoint) => void, events: Omit<RunEvents, 'onStep'> = {}): Promise<void> {
    await this.trainingRun.run({ ...events, onStep });
  }

  pause(): void {
    this.trainingRun.pause();
  }
}

/** A toy run in this thread, stored in IndexedDB (`dbName`): the float64 CPU backend, checkpoints and run record. */
export async function createToyDriver(settings: TrainingSettings, dbName?: string): Promise<RunDriver> {
  const spec = toyRunSpec({
    steps: settings.steps,
    groupSize: settings.groupSize,
    learningRate: settings.learningRate,
    seed: settings.seed,
    adapter: startAdapterSpec(settings),
    label: `Toy task (tiny planner, CPU)${startLabel(settings)}`,
  });
  const setup = await toyRunSetup({ store: new IdbRunStore(dbName), storage: idbTrainStorage, backend: 'cpu', dbName });
  const run = await TrainingRun.start(newRunId('toy'), spec, setup.deps);
  return new RunDriver(run, () => setup.destroy());
}

/** Continues a stored toy run in this thread from its newest intact checkpoint. */
export async function resumeToyDriver(runId: string, dbName?: string): Promise<RunDriver> {
  const store = new IdbRunStore(dbName);
  const stored = await store.load(runId);
  if (!stored) throw new Error(`training run '${runId}' is not in this browser's storage`);
  if (stored.spec.task !== 'toy') throw new Error(`training run '${runId}' is not a toy run`);
  const task = (stored.spec.collector as { task?: import('../../trainer/toy-task').ToyTaskOptions }).task;
  const setup = await toyRunSetup({ store, storage: idbTrainStorage, backend: 'cpu', dbName, ...(task ? { task } : {}) });
  return new RunDriver(await TrainingRun.resume(runId, setup.deps), () => setup.destroy());
}

/** What toy-training.worker.ts and tool-task-training.worker.ts serve (they implement this; WorkerRunDriver calls it). */
export interface ToyTrainingWorkerApi {
  create(settings: TrainingSettings, dbName?: string): Promise<ToyRunDescription>;
  resume(runId: string, dbName?: string): Promise<ToyRunDescription>;
  run(
    onStep: (p: TrainingStepPoint) => void,
    onProgress?: (p: RolloutProgress) => void,
    onEval?: (e: EvalPoint) => void,
  ): Promise<{ state: RunDriver['state']; result: RunResult | null }>;
  pause(): void;
}

export interface ToyRunDescription {
  runId: string;
  label: string;
  steps: number;
  history: TrainingStepPoint[];
  notes: string[];
}

/** A run's worker: how to start it (a literal `new Worker(new URL(...))`, which the bundler follows) and its name in errors. */
export interface RunWorker {
  start(): Worker;
  name: string;
}

const TOY_WORKER: RunWorker = { start: () => new Worker(new URL('../../../workers/toy-training.worker.ts', import.meta.url), { type: 'module', name: 'toy-training' }), name: 'toy training' };

/** A run of a CPU task (the toy, the tool-choice task) in a module worker, so its steps never freeze the page. */
export class WorkerRunDriver implements TrainingDriver {
  readonly history: TrainingStepPoint[] = [];
  state: TrainingState = 'idle';
  result: RunResult | null = null;
  notes: readonly string[] = [];

  private constructor(
    readonly runId: string,
    readonly label: string,
    readonly steps: number,
    private readonly watch: WorkerWatch,
    private readonly api: import('comlink').Remote<ToyTrainingWorkerApi>,
  ) {}

  static create(worker: RunWorker, settings: TrainingSettings, dbName?: string): Promise<WorkerRunDriver> {
    return WorkerRunDriver.start(worker, (api) => api.create(settings, dbName));
  }

  /** Continues a stored run in a worker. */
  static resume(worker: RunWorker, runId: string, dbName?: string): Promise<WorkerRunDriver> {
    return WorkerRunDriver.start(worker, (api) => api.resume(runId, dbName));
  }

  private static async start(w: RunWorker, open: (api: import('comlink').Remote<ToyTrainingWorkerApi>) => Promise<ToyRunDescription>): Promise<WorkerRunDriver> {
    const Comlink = await import('comlink');
    const worker = w.start();
    // A worker that dies mid-run (out of memory, a lost device taking it down) fails the run at once,
    // with a WorkerGoneError naming it, instead of leaving the panel at "running" forever.
    const watch = watchWorker(worker, w.name);
    const api = guardCalls(Comlink.wrap<ToyTrainingWorkerApi>(worker), watch);
    try {
      const { runId, label, steps, history, notes } = await open(api);
      const d = new WorkerRunDriver(runId, `${label}, in a worker`, steps, watch, api);
      d.history.push(...history);
      d.notes = notes;
      if (history.length) d.state = 'paused';
      return d;
    } catch (e) {
      watch.terminate('it failed to start');
      throw e;
    }
  }

  async run(onStep: (p: TrainingStepPoint) => void, events: Omit<RunEvents, 'onStep'> = {}): Promise<void> {
    if (this.state === 'running' || this.state === 'done') return;
    const Comlink = await import('comlink');
    this.state = 'running';
    try {
      const out = await this.api.run(
        Comlink.proxy((p: TrainingStepPoint) => {
          this.history.push(p);
          onStep(p);
        }),
        events.onProgress ? Comlink.proxy(events.onProgress) : undefined,
        events.onEval ? Comlink.proxy(events.onEval) : undefined,
      );
      this.state = out.state;
      this.result = out.result;
    } catch (e) {
      this.state = 'error';
      throw e;
    }
    if (this.state === 'done') this.watch.terminate('the run finished');
  }

  pause(): void {
    this.api.pause().catch(() => undefined);
  }

  dispose(): void {
    this.watch.terminate('the panel closed it');
    if (this.state === 'running' || this.state === 'idle') this.state = 'paused';
  }
}

/** The toy driver running in a module worker (the panel's default in a browser). */
export const WorkerToyTrainingDriver = {
  create: (settings: TrainingSettings, dbName?: string): Promise<WorkerRunDriver> => WorkerRunDriver.create(TOY_WORKER, settings, dbName),
  resume: (runId: string, dbName?: string): Promise<WorkerRunDriver> => WorkerRunDriver.resume(TOY_WORKER, runId, dbName),
};

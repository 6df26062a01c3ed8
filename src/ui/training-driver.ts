// What the Training panel drives. A TrainingDriver runs Flow-GRPO steps and reports each step's
// statistics; the panel only starts, pauses and resumes it. The toy driver trains the toy task's tiny
// planner (src/trainer/toy-task.ts) on the float64 CPU backend with checkpoints in IndexedDB, which
// proves the loop learns in any browser, with or without WebGPU.
import type { LoraModule } from '../engine/io/peft';
import { openAgentDb } from '../store/db';
import { loadStoredAdapter } from './adapter-store';
import type { TrainingRunRecord } from '../store/records';
import { IdbCheckpointStore } from '../trainer/checkpoint-idb';
import { resolveGrpoConfig } from '../trainer/config';
import { CpuPolicyBackend, cpuTokenPolicy } from '../trainer/cpu-backend';
import { initLoraAdapter } from '../trainer/lora';
import { ToyRolloutSource, ToyTask, toyModel } from '../trainer/toy-task';
import { GrpoTrainer } from '../trainer/trainer';
import { Rng } from '../util/rng';

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

/** The base model name toy adapters carry (the adapter list offers only these for toy runs). */
export const TOY_BASE_MODEL = 'agentflow-toy';

/** ", from adapter “name”" for labels of runs that start from a stored adapter. */
export function startLabel(s: TrainingSettings): string {
  return s.startAdapter ? `, from adapter “${s.startAdapter.name}”` : '';
}

export interface TrainingStepPoint {
  step: number;
  reward: number;
  loss: number;
  kl: number;
  clipFraction: number;
  tokensPerSecond: number;
  /** Agent runs: wall time of the step's rollouts, in seconds. */
  rolloutSeconds?: number;
  /**
   * Agent runs: sequences the planner decoded per decode step during the step's rollouts (1 = no batching;
   * up to the runtime's maxDecodeRows), when the planner reports its decode counters.
   */
  plannerSequencesPerStep?: number;
}

export type TrainingState = 'idle' | 'running' | 'paused' | 'done' | 'error';

export interface TrainingDriver {
  readonly label: string;
  readonly runId: string;
  readonly state: TrainingState;
  readonly history: TrainingStepPoint[];
  /** Runs steps until `settings.steps` are done or pause() is called; resolves then. */
  run(onStep: (p: TrainingStepPoint) => void): Promise<void>;
  pause(): void;
  /**
   * Frees what the driver holds beyond its stored run (a worker); called when the panel replaces or drops
   * it. Every finished step is already in IndexedDB, so nothing is lost.
   */
  dispose?(): void;
}

export function toStepPoint(s: { step: number; rewardMean: number; loss: number; kl: number; clipFraction: number; tokensPerSecond: number }): TrainingStepPoint {
  return { step: s.step, reward: s.rewardMean, loss: s.loss, kl: s.kl, clipFraction: s.clipFraction, tokensPerSecond: s.tokensPerSecond };
}

const yieldToPage = () => new Promise<void>((r) => setTimeout(r, 0));

export class ToyTrainingDriver implements TrainingDriver {
  readonly label: string;
  readonly runId: string;
  state: TrainingState = 'idle';
  readonly history: TrainingStepPoint[] = [];
  private readonly trainer: GrpoTrainer;
  private pauseRequested = false;
  private readonly createdAt = Date.now();

  private constructor(
    readonly settings: TrainingSettings,
    trainer: GrpoTrainer,
    runId: string,
    private readonly store: IdbCheckpointStore,
    private readonly dbName?: string,
  ) {
    this.trainer = trainer;
    this.runId = runId;
    this.label = `Toy task (tiny planner, CPU)${startLabel(settings)}`;
  }

  static async create(settings: TrainingSettings, dbName?: string): Promise<ToyTrainingDriver> {
    if (!settings.startAdapter && !settings.targets.length) throw new Error('training: choose at least one target module for the LoRA adapter');
    if (!Number.isInteger(settings.steps) || settings.steps < 1) throw new Error(`training: steps must be a positive integer, got ${settings.steps}`);
    const task = new ToyTask();
    const model = toyModel(task, { seed: 1234 });
    const seed = settings.seed ?? 3;
    const adapter = settings.startAdapter
      ? await loadStoredAdapter(settings.startAdapter.id, dbName, model.config)
      : initLoraAdapter(model.config, { r: settings.rank, alpha: 2 * settings.rank, modules: settings.targets, baseModelNameOrPath: TOY_BASE_MODEL }, new Rng(seed + 4));
    const backend = new CpuPolicyBackend(model.config, model.weights, adapter);
    const cfg = resolveGrpoConfig({
      learningRate: settings.learningRate,
      groupSize: settings.groupSize,
      queriesPerStep: task.numQueries,
      weightDecay: 0,
      beta: 0,
      seed,
      checkpointEvery: Math.max(1, Math.min(10, settings.steps)),
    });
    const source = new ToyRolloutSource(task, cpuTokenPolicy(backend), cfg);
    const runId = `toy-${new Date().toISOString().replace(/[:.]/g, '-')}`;
    const store = new IdbCheckpointStore(await openAgentDb(dbName));
    const trainer = new GrpoTrainer(backend, cfg, source, { runId, store, baseModel: TOY_BASE_MODEL });
    return new ToyTrainingDriver(settings, trainer, runId, store, dbName);
  }

  pause(): void {
    this.pauseRequested = true;
  }

  async run(onStep: (p: TrainingStepPoint) => void): Promise<void> {
    if (this.state === 'running' || this.state === 'done') return;
    this.pauseRequested = false;
    this.state = 'running';
    await this.saveRun();
    try {
      while (this.trainer.step < this.settings.steps && !this.pauseRequested) {
        const p = toStepPoint(await this.trainer.trainStep());
        this.history.push(p);
        onStep(p);
        await yieldToPage();
      }
      if (this.trainer.step >= this.settings.steps) {
        if (this.trainer.step % this.trainer.config.checkpointEvery !== 0) await this.trainer.saveCheckpoint();
        this.state = 'done';
      } else {
        await this.trainer.saveCheckpoint();
        this.state = 'paused';
      }
    } catch (e) {
      this.state = 'error';
      throw e;
    } finally {
      await this.saveRun().catch(() => undefined);
    }
  }

  private async saveRun(): Promise<void> {
    const rec: TrainingRunRecord = {
      id: this.runId,
      createdAt: this.createdAt,
      updatedAt: Date.now(),
      status: this.state === 'idle' ? 'running' : this.state === 'running' ? 'running' : this.state,
      config: { ...this.settings, targets: [...this.settings.targets], startAdapter: this.settings.startAdapter ? { ...this.settings.startAdapter } : null },
      stats: this.history.map((p) => ({ ...p })),
    };
    await (await openAgentDb(this.dbName)).put('trainingRuns', rec);
  }

  /** The checkpoint store (tests read the saved adapter through it). */
  get checkpoints(): IdbCheckpointStore {
    return this.store;
  }
}

/** The toy driver running in a module worker (the panel's default in a browser). */
export class WorkerToyTrainingDriver implements TrainingDriver {
  readonly history: TrainingStepPoint[] = [];
  state: TrainingState = 'idle';

  private constructor(
    readonly runId: string,
    readonly label: string,
    private readonly worker: Worker,
    private readonly api: import('comlink').Remote<import('./toy-training.worker').ToyTrainingWorkerApi>,
  ) {}

  static async create(settings: TrainingSettings, dbName?: string): Promise<WorkerToyTrainingDriver> {
    const Comlink = await import('comlink');
    const worker = new Worker(new URL('./toy-training.worker.ts', import.meta.url), { type: 'module', name: 'toy-training' });
    const api = Comlink.wrap<import('./toy-training.worker').ToyTrainingWorkerApi>(worker);
    const failed = new Promise<never>((_, reject) =>
      worker.addEventListener('error', (e) => reject(new Error(`toy training worker failed to start: ${e.message || 'script error'}`)), { once: true }),
    );
    try {
      const { runId, label } = await Promise.race([api.create(settings, dbName), failed]);
      return new WorkerToyTrainingDriver(runId, `${label}, in a worker`, worker, api);
    } catch (e) {
      worker.terminate();
      throw e;
    }
  }

  async run(onStep: (p: TrainingStepPoint) => void): Promise<void> {
    if (this.state === 'running' || this.state === 'done') return;
    const Comlink = await import('comlink');
    this.state = 'running';
    try {
      this.state = await this.api.run(
        Comlink.proxy((p: TrainingStepPoint) => {
          this.history.push(p);
          onStep(p);
        }),
      );
    } catch (e) {
      this.state = 'error';
      throw e;
    }
    if (this.state === 'done') this.worker.terminate();
  }

  pause(): void {
    void this.api.pause();
  }

  dispose(): void {
    this.worker.terminate();
    if (this.state === 'running' || this.state === 'idle') this.state = 'paused';
  }
}

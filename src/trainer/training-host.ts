// The optimizer side of a training run, next to the policy it trains: in a page it lives in the planner
// worker (the trained LoRA adapter is added to the runtime that samples, so the next rollouts are
// on-policy), in Node it runs in-process beside the same runtime, and for the toy task it wraps the
// float64 CPU backend. The run (src/trainer/run/training-run.ts) plays the rollouts and pushes each step's
// turn samples here through PolicyTrainer; counters, RNG and checkpoints are the GrpoTrainer's, so a
// resumed run continues exactly.
import type { Qwen2Config } from '../io/qwen2-config';
import { exportAdapter, type LoraAdapter, type LoraModule } from '../io/peft';
import { Rng } from '../util/rng';
import type { PolicyBackend } from './backend';
import type { CheckpointStore } from './checkpoint-store';
import { resolveGrpoConfig, type GrpoConfig } from './grpo-config';
import type { StepStats } from './grpo-step';
import { cloneAdapter, initLoraAdapter } from './lora-init';
import type { TurnSample } from '../model/samples';
import { GrpoTrainer } from './trainer';

/** How a session gets its adapter: fresh (PEFT init, B = 0), a stored one by id, or one given in memory. */
export type TrainAdapterSpec = { rank: number; alpha: number; targets?: LoraModule[] } | { adapterId: string } | { adapter: LoraAdapter };

export interface TrainStartOptions {
  runId: string;
  adapter: TrainAdapterSpec;
  config?: Partial<GrpoConfig>;
  /**
   * Continue from the run's newest intact checkpoint when there is one (its adapter and config win, except
   * `lrDecaySteps` when given: a run extended to more steps decays its rate over its new length).
   */
  resume?: boolean;
  /** IndexedDB database of the checkpoints and stored adapters (page and worker only; default: the app's). */
  dbName?: string;
  /** Control runs: every advantage is forced to 0 (see StepContext.zeroAdvantages). */
  zeroAdvantages?: boolean;
}

export interface TrainSessionInfo {
  runId: string;
  /** Id of the trained adapter where the policy samples (the runtime's adapter set; 'cpu' for the toy). */
  adapterId: string;
  step: number;
  optimizerSteps: number;
  resumed: boolean;
  config: GrpoConfig;
  /** Newer checkpoints that could not be read when resuming (each with why): the run went back past them. */
  skippedCheckpoints: string[];
}

/** A saved checkpoint: its step and where its adapter is (an IndexedDB adapter id, or a directory). */
export interface SavedCheckpoint {
  step: number;
  adapterId: string;
}

/** The optimizer calls a training run makes. The planner worker's client implements them across the worker. */
export interface PolicyTrainer {
  trainStart(o: TrainStartOptions): Promise<TrainSessionInfo>;
  /** One Flow-GRPO step on the planner turns of this step's groups. */
  trainStep(samples: TurnSample[]): Promise<StepStats>;
  /** Saves adapter, AdamW moments, counters and RNG (once per step); `protect` steps survive pruning. */
  trainCheckpoint(o?: { keep?: number; protect?: number[] }): Promise<SavedCheckpoint>;
  trainStop(): Promise<void> | void;
  /** The planner's decode steps so far and the sequences they served, when it reports them. */
  decodeStats?(): Promise<{ steps: number; rows: number }>;
}

/** Where a session keeps checkpoints and finds stored adapters: IndexedDB in a page, a directory in Node. */
export interface TrainStorage {
  checkpoints: CheckpointStore;
  /** A stored adapter by id, checked against `base`. */
  adapter(id: string, base: Qwen2Config): Promise<LoraAdapter>;
}

/** A backend training `adapter`, made by the policy's host, and what undoing it takes. */
export interface HostedBackend {
  backend: PolicyBackend;
  /** Where the policy samples with the trained adapter (TrainSessionInfo.adapterId). */
  adapterId: string;
  /** Longest turn (prompt + response tokens) one forward+backward takes, when bounded. */
  maxRows: number;
  /** Frees the backend's buffers and puts the policy's previous adapter back. */
  destroy(): void;
}

/** The policy being trained: its shapes, its name, and how to hang a trainable adapter on it. */
export interface PolicyHost {
  readonly modelConfig: Qwen2Config;
  readonly baseModel: string;
  createBackend(adapter: LoraAdapter, o: { runId: string; config: GrpoConfig }): Promise<HostedBackend>;
}

/** One live training session: a GrpoTrainer on a hosted backend, with its checkpoint store. */
export class TrainingSession {
  private lastSaved: SavedCheckpoint | null = null;

  private constructor(
    readonly trainer: GrpoTrainer,
    readonly hosted: HostedBackend,
    readonly store: CheckpointStore,
    readonly resumed: boolean,
    readonly skippedCheckpoints: string[],
  ) {}

  get backend(): PolicyBackend {
    return this.hosted.backend;
  }

  static async start(host: PolicyHost, storage: TrainStorage, o: TrainStartOptions): Promise<TrainingSession> {
    if (!o.runId) throw new Error('training session: runId is empty');
    const ckpt = o.resume ? await storage.checkpoints.latest(o.runId) : null;
    const config = ckpt ? { ...ckpt.config, ...(o.config?.lrDecaySteps !== undefined ? { lrDecaySteps: o.config.lrDecaySteps } : {}) } : resolveGrpoConfig(o.config ?? {});
    let adapter: LoraAdapter;
    if (ckpt) adapter = cloneAdapter(ckpt.adapter);
    else if ('adapter' in o.adapter) adapter = cloneAdapter(o.adapter.adapter);
    else if ('adapterId' in o.adapter) adapter = await storage.adapter(o.adapter.adapterId, host.modelConfig);
    else {
      adapter = initLoraAdapter(host.modelConfig, { r: o.adapter.rank, alpha: o.adapter.alpha, modules: o.adapter.targets, baseModelNameOrPath: host.baseModel }, new Rng(config.seed + 4));
    }
    const hosted = await host.createBackend(adapter, { runId: o.runId, config });
    // No store for the trainer itself: the run decides when to checkpoint (trainCheckpoint), so saving and
    // pruning happen in one place.
    const trainer = new GrpoTrainer(hosted.backend, config, { runId: o.runId, baseModel: host.baseModel, zeroAdvantages: o.zeroAdvantages });
    const s = new TrainingSession(trainer, hosted, storage.checkpoints, !!ckpt, ckpt?.skipped ?? []);
    try {
      if (ckpt) {
        await trainer.restore(ckpt);
        s.lastSaved = { step: ckpt.step, adapterId: ckpt.adapterRef ?? '' };
      }
    } catch (e) {
      s.destroy();
      throw e;
    }
    return s;
  }

  info(): TrainSessionInfo {
    return {
      runId: this.trainer.options.runId,
      adapterId: this.hosted.adapterId,
      step: this.trainer.step,
      optimizerSteps: this.trainer.optimizerSteps,
      resumed: this.resumed,
      config: { ...this.trainer.config },
      skippedCheckpoints: [...this.skippedCheckpoints],
    };
  }

  /** One Flow-GRPO step on `samples`. The longest turn must fit the backend's micro-batch rows. */
  async step(samples: TurnSample[]): Promise<StepStats> {
    const longest = samples.reduce((m, s) => Math.max(m, s.promptTokens.length + s.responseTokens.length), 0);
    if (longest > this.hosted.maxRows) {
      throw new Error(`training step: a planner turn has ${longest} tokens, more than the micro-batch of ${this.hosted.maxRows} (raise the Flow-GRPO setting 'microBatchTokens' or shorten the prompts)`);
    }
    return this.trainer.trainStep(samples);
  }

  /** Saves a checkpoint of the current step (once per step), then prunes the run's older ones. */
  async checkpoint(o: { keep?: number; protect?: number[] } = {}): Promise<SavedCheckpoint> {
    const step = this.trainer.step;
    let saved = this.lastSaved?.step === step ? this.lastSaved : null;
    if (!saved) {
      const c = await this.trainer.checkpoint();
      saved = { step, adapterId: await this.store.save(c) };
      this.lastSaved = saved;
    }
    if (o.keep !== undefined) await this.store.prune(this.trainer.options.runId, { keep: o.keep, protect: o.protect ?? [] });
    return saved;
  }

  /** The trained adapter as PEFT files (adapter_config.json contents, adapter_model.safetensors bytes). */
  async exportAdapter(): Promise<{ config: Record<string, unknown>; weights: Uint8Array }> {
    const { adapter } = await this.backend.exportState();
    return exportAdapter(adapter);
  }

  destroy(): void {
    this.hosted.destroy();
  }
}

/**
 * The training calls on one policy host, one session at a time. The planner worker exposes one over
 * comlink (checkpoints in IndexedDB); Node runs one in-process (checkpoints in a directory).
 */
export class TrainingHost implements PolicyTrainer {
  private session: TrainingSession | null = null;

  constructor(
    private readonly host: () => PolicyHost,
    private readonly storage: (dbName?: string) => Promise<TrainStorage>,
  ) {}

  private need(): TrainingSession {
    if (!this.session) throw new Error('no training session is running; call trainStart() first');
    return this.session;
  }

  /** The live session (in-process callers: the toy task samples with its backend). */
  get current(): TrainingSession | null {
    return this.session;
  }

  async trainStart(o: TrainStartOptions): Promise<TrainSessionInfo> {
    const host = this.host();
    this.trainStop();
    const storage = await this.storage(o.dbName);
    this.session = await TrainingSession.start(host, storage, o);
    return this.session.info();
  }

  trainStep(samples: TurnSample[]): Promise<StepStats> {
    return this.need().step(samples);
  }

  trainCheckpoint(o?: { keep?: number; protect?: number[] }): Promise<SavedCheckpoint> {
    return this.need().checkpoint(o);
  }

  trainInfo(): TrainSessionInfo | null {
    return this.session?.info() ?? null;
  }

  exportAdapter(): Promise<{ config: Record<string, unknown>; weights: Uint8Array }> {
    return this.need().exportAdapter();
  }

  /** Ends the session: frees its buffers and removes its adapter (stored checkpoints stay). */
  trainStop(): void {
    this.session?.destroy();
    this.session = null;
  }
}

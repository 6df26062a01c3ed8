// The optimizer of a training run, next to the policy it trains: in a page the planner worker exposes it
// over comlink (the trained LoRA adapter is added to the runtime that samples, so the next rollouts are
// on-policy), in Node it runs in-process beside the same runtime, and for the toy task it drives the
// float64 CPU backend. The run (src/trainer/run/training-run.ts) plays the rollouts and pushes each step's
// turn samples here through PolicyTrainer; trainStep runs grpoStep itself. Step counters, the mini-batch
// shuffling RNG and checkpoints are kept here, so a resumed run takes the same next step as an
// uninterrupted one.
import type { Qwen2Config } from '../io/qwen2-config';
import { exportAdapter, type LoraAdapter, type LoraModule } from '../io/peft';
import { Rng } from '../util/rng';
import type { PolicyBackend } from './backend';
import { CheckpointError, type CheckpointStore, type TrainingCheckpoint } from './checkpoint-store';
import { resolveGrpoConfig, type GrpoConfig } from './grpo-config';
import { grpoStep, type StepStats } from './grpo-step';
import { cloneAdapter, initLoraAdapter } from './lora-init';
import type { TurnSample } from '../model/samples';

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

/** One live session: the hosted backend, its settings and the optimizer state a checkpoint holds. */
interface Session {
  runId: string;
  baseModel: string;
  config: GrpoConfig;
  hosted: HostedBackend;
  store: CheckpointStore;
  /** Control runs: see StepContext.zeroAdvantages. */
  zeroAdvantages: boolean;
  resumed: boolean;
  skippedCheckpoints: string[];
  /** Training steps done. */
  step: number;
  /** AdamW updates done (bias correction continues from it). */
  optimizerSteps: number;
  /** Mini-batch shuffling; its state is saved with each checkpoint. */
  rng: Rng;
  lastSaved: SavedCheckpoint | null;
}

/**
 * The training calls on one policy host, one session at a time. The planner worker exposes one over
 * comlink (checkpoints in IndexedDB); Node runs one in-process (checkpoints in a directory).
 */
export class TrainingHost implements PolicyTrainer {
  private session: Session | null = null;

  constructor(
    private readonly host: () => PolicyHost,
    private readonly storage: (dbName?: string) => Promise<TrainStorage>,
  ) {}

  private need(): Session {
    if (!this.session) throw new Error('no training session is running; call trainStart() first');
    return this.session;
  }

  /** The live session's backend (in-process callers: the toy and tool tasks sample with it), or null. */
  get current(): HostedBackend | null {
    return this.session?.hosted ?? null;
  }

  async trainStart(o: TrainStartOptions): Promise<TrainSessionInfo> {
    const host = this.host();
    this.trainStop();
    const storage = await this.storage(o.dbName);
    if (!o.runId) throw new Error('training session: runId is empty');
    const ckpt = o.resume ? await storage.checkpoints.latest(o.runId) : null;
    if (ckpt && ckpt.runId !== o.runId) throw new CheckpointError(`checkpoint belongs to run '${ckpt.runId}', not '${o.runId}'`);
    const config = ckpt ? { ...ckpt.config, ...(o.config?.lrDecaySteps !== undefined ? { lrDecaySteps: o.config.lrDecaySteps } : {}) } : resolveGrpoConfig(o.config ?? {});
    let adapter: LoraAdapter;
    if (ckpt) adapter = cloneAdapter(ckpt.adapter);
    else if ('adapter' in o.adapter) adapter = cloneAdapter(o.adapter.adapter);
    else if ('adapterId' in o.adapter) adapter = await storage.adapter(o.adapter.adapterId, host.modelConfig);
    else {
      adapter = initLoraAdapter(host.modelConfig, { r: o.adapter.rank, alpha: o.adapter.alpha, modules: o.adapter.targets, baseModelNameOrPath: host.baseModel }, new Rng(config.seed + 4));
    }
    const hosted = await host.createBackend(adapter, { runId: o.runId, config });
    const s: Session = {
      runId: o.runId,
      baseModel: host.baseModel,
      config,
      hosted,
      store: storage.checkpoints,
      zeroAdvantages: !!o.zeroAdvantages,
      resumed: !!ckpt,
      skippedCheckpoints: ckpt?.skipped ?? [],
      step: 0,
      optimizerSteps: 0,
      rng: new Rng(config.seed),
      lastSaved: null,
    };
    if (ckpt) {
      try {
        await hosted.backend.importState({ adapter: ckpt.adapter, moments: ckpt.moments });
      } catch (e) {
        hosted.destroy();
        throw e;
      }
      s.step = ckpt.step;
      s.optimizerSteps = ckpt.optimizerSteps;
      s.rng.state = ckpt.rngState >>> 0;
      s.lastSaved = { step: ckpt.step, adapterId: ckpt.adapterRef ?? '' };
    }
    this.session = s;
    return this.info(s);
  }

  /** One Flow-GRPO step on `samples`. The longest turn must fit the backend's micro-batch rows. */
  async trainStep(samples: TurnSample[]): Promise<StepStats> {
    const s = this.need();
    const longest = samples.reduce((m, t) => Math.max(m, t.promptTokens.length + t.responseTokens.length), 0);
    if (longest > s.hosted.maxRows) {
      throw new Error(`training step: a planner turn has ${longest} tokens, more than the micro-batch of ${s.hosted.maxRows} (raise the Flow-GRPO setting 'microBatchTokens' or shorten the prompts)`);
    }
    const next = s.step + 1;
    const stats = await grpoStep(s.hosted.backend, samples, s.config, { step: next, optimizerSteps: s.optimizerSteps, random: () => s.rng.next(), zeroAdvantages: s.zeroAdvantages });
    s.step = next;
    s.optimizerSteps = stats.optimizerSteps;
    return stats;
  }

  /** Saves adapter, AdamW moments, counters and RNG of the current step (once per step), then prunes the run's older checkpoints. */
  async trainCheckpoint(o: { keep?: number; protect?: number[] } = {}): Promise<SavedCheckpoint> {
    const s = this.need();
    let saved = s.lastSaved?.step === s.step ? s.lastSaved : null;
    if (!saved) {
      const { adapter, moments } = await s.hosted.backend.exportState();
      const c: TrainingCheckpoint = { runId: s.runId, step: s.step, optimizerSteps: s.optimizerSteps, rngState: s.rng.state, config: { ...s.config }, adapter, moments, createdAt: Date.now(), baseModel: s.baseModel };
      saved = { step: c.step, adapterId: await s.store.save(c) };
      s.lastSaved = saved;
    }
    if (o.keep !== undefined) await s.store.prune(s.runId, { keep: o.keep, protect: o.protect ?? [] });
    return saved;
  }

  trainInfo(): TrainSessionInfo | null {
    return this.session ? this.info(this.session) : null;
  }

  /** The trained adapter as PEFT files (adapter_config.json contents, adapter_model.safetensors bytes). */
  async exportAdapter(): Promise<{ config: Record<string, unknown>; weights: Uint8Array }> {
    const { adapter } = await this.need().hosted.backend.exportState();
    return exportAdapter(adapter);
  }

  /** Ends the session: frees its buffers and removes its adapter (stored checkpoints stay). */
  trainStop(): void {
    this.session?.hosted.destroy();
    this.session = null;
  }

  private info(s: Session): TrainSessionInfo {
    return {
      runId: s.runId,
      adapterId: s.hosted.adapterId,
      step: s.step,
      optimizerSteps: s.optimizerSteps,
      resumed: s.resumed,
      config: { ...s.config },
      skippedCheckpoints: [...s.skippedCheckpoints],
    };
  }
}

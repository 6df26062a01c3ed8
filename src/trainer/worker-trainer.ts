// The training session that lives next to the planner's GPU runtime (in the planner worker): the trained
// LoRA adapter is added to that runtime and made active, so the agent's next rollouts sample from the
// updated policy (on-policy), while the page runs the agent loop and pushes each step's turn samples
// here. Counters, RNG and checkpoints are the GrpoTrainer's, so a resumed run continues exactly.
import { exportAdapter, parseAdapter, type LoraAdapter, type LoraModule } from '../engine/io/peft';
import { writeSafetensors } from '../engine/io/safetensors';
import type { Qwen2Runtime } from '../engine/runtime';
import type { AgentFlowDB } from '../store/schema';
import type { IDBPDatabase } from 'idb';
import { Rng } from '../util/rng';
import { CheckpointError, type CheckpointStore, type TrainingCheckpoint } from './checkpoint';
import { openAgentDb } from '../store/db';
import { IdbCheckpointStore } from './checkpoint-idb';
import { resolveGrpoConfig, type GrpoConfig } from './config';
import { GpuPolicyBackend } from './gpu-backend';
import type { StepStats } from './grpo-step';
import { cloneAdapter, initLoraAdapter } from './lora';
import type { TurnSample } from './samples';
import { GrpoTrainer, type RolloutSource } from './trainer';

/** Where the trained adapter starts: a fresh PEFT-initialised one (B = 0) or a copy of a given one. */
export type AdapterInit = { kind: 'fresh'; rank: number; alpha: number; targets?: LoraModule[] } | { kind: 'adapter'; adapter: LoraAdapter };

export interface TrainSessionOptions {
  runId: string;
  adapter: AdapterInit;
  config?: Partial<GrpoConfig>;
  /** Continue from the run's latest checkpoint in the store when it has one (its adapter and config win). */
  resume?: boolean;
  baseModel?: string;
}

export interface TrainSessionInfo {
  runId: string;
  /** Id of the trained adapter in the runtime (active while the session lives). */
  adapterId: string;
  step: number;
  optimizerSteps: number;
  resumed: boolean;
  config: GrpoConfig;
}

/** The trainer's rollout source when rollouts are made elsewhere: hands over the batch it was given. */
class PushedSamples implements RolloutSource {
  pending: TurnSample[] | null = null;

  async collect(): Promise<{ samples: TurnSample[]; rolloutMs: number }> {
    const samples = this.pending;
    this.pending = null;
    if (!samples) throw new Error('training session: no samples were pushed for this step');
    return { samples, rolloutMs: 0 };
  }
}

export class WorkerTrainingSession {
  private lastSaved = -1;

  private constructor(
    readonly runtime: Qwen2Runtime,
    readonly trainer: GrpoTrainer,
    readonly backend: GpuPolicyBackend,
    private readonly source: PushedSamples,
    private readonly previousAdapter: string | null,
    readonly resumed: boolean,
  ) {}

  static async start(runtime: Qwen2Runtime, o: TrainSessionOptions, store?: CheckpointStore): Promise<WorkerTrainingSession> {
    if (!o.runId) throw new Error('training session: runId is empty');
    let ckpt: TrainingCheckpoint | null = null;
    if (o.resume) {
      if (!store) throw new CheckpointError('training session: resume needs a checkpoint store');
      ckpt = await store.latest(o.runId);
    }
    const config = ckpt ? ckpt.config : resolveGrpoConfig(o.config ?? {});
    let adapter: LoraAdapter;
    if (ckpt) adapter = cloneAdapter(ckpt.adapter);
    else if (o.adapter.kind === 'adapter') adapter = cloneAdapter(o.adapter.adapter);
    else {
      adapter = initLoraAdapter(
        runtime.config,
        { r: o.adapter.rank, alpha: o.adapter.alpha, modules: o.adapter.targets, baseModelNameOrPath: o.baseModel ?? null },
        new Rng(config.seed + 4),
      );
    }
    const previous = runtime.activeAdapterId;
    const backend = await GpuPolicyBackend.create(runtime, adapter, { adapterId: `training:${o.runId}`, maxRows: config.microBatchTokens });
    const source = new PushedSamples();
    const trainer = new GrpoTrainer(backend, config, source, { runId: o.runId, store, baseModel: o.baseModel });
    const s = new WorkerTrainingSession(runtime, trainer, backend, source, previous, !!ckpt);
    try {
      if (ckpt) {
        await trainer.restore(ckpt);
        s.lastSaved = ckpt.step;
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
      adapterId: this.backend.adapterId,
      step: this.trainer.step,
      optimizerSteps: this.trainer.optimizerSteps,
      resumed: this.resumed,
      config: { ...this.trainer.config },
    };
  }

  /**
   * One Flow-GRPO step on `samples` (the planner turns of this step's groups). The longest turn must fit
   * the micro-batch (microBatchTokens), which sizes the backward pass.
   */
  async step(samples: TurnSample[]): Promise<StepStats> {
    const longest = samples.reduce((m, s) => Math.max(m, s.promptTokens.length + s.responseTokens.length), 0);
    if (longest > this.backend.maxRows) {
      throw new Error(`training step: a planner turn has ${longest} tokens, more than the micro-batch of ${this.backend.maxRows} (raise the Flow-GRPO setting 'microBatchTokens' or shorten the prompts)`);
    }
    this.source.pending = samples;
    try {
      const { rolloutMs: _unused, ...stats } = await this.trainer.trainStep();
      if (this.trainer.options.store && this.trainer.config.checkpointEvery > 0 && this.trainer.step % this.trainer.config.checkpointEvery === 0) this.lastSaved = this.trainer.step;
      return stats;
    } finally {
      this.source.pending = null;
    }
  }

  /** Saves a checkpoint of the current step (once per step) and returns it. */
  async checkpoint(): Promise<TrainingCheckpoint> {
    if (this.lastSaved === this.trainer.step) {
      const c = await this.trainer.options.store?.latest(this.trainer.options.runId);
      if (c && c.step === this.trainer.step) return c;
    }
    const c = await this.trainer.saveCheckpoint();
    this.lastSaved = c.step;
    return c;
  }

  /** The trained adapter as PEFT files (adapter_config.json contents, adapter_model.safetensors bytes). */
  async exportAdapter(): Promise<{ config: Record<string, unknown>; weights: Uint8Array }> {
    const { adapter } = await this.backend.exportState();
    return exportAdapter(adapter);
  }

  /** Frees the trainer's GPU buffers and removes its adapter; the adapter active before comes back. */
  destroy(): void {
    this.backend.destroy();
    const prev = this.previousAdapter;
    this.runtime.setActiveAdapter(prev !== null && this.runtime.adapters.ids().includes(prev) ? prev : null);
  }
}

/** A LoRA adapter kept in IndexedDB's 'adapters' store (a checkpoint or an import), validated against `base`. */
export async function storedAdapter(db: IDBPDatabase<AgentFlowDB>, id: string, base: Qwen2Runtime['config']): Promise<LoraAdapter> {
  const rec = await db.get('adapters', id);
  if (!rec) throw new Error(`adapter '${id}' is not in this browser's storage`);
  const bytes = writeSafetensors(Object.entries(rec.tensors).map(([name, t]) => ({ name, shape: t.shape, data: t.data })));
  return parseAdapter(rec.config, bytes, { base, configFile: `adapter '${id}' config`, weightsFile: `adapter '${id}' tensors` });
}

/** How trainStart gets its adapter: fresh (PEFT init, B = 0) or a copy of one stored in IndexedDB. */
export type TrainAdapterSpec = { rank: number; alpha: number; targets?: LoraModule[] } | { adapterId: string };

export interface TrainStartOptions {
  runId: string;
  adapter: TrainAdapterSpec;
  config?: Partial<GrpoConfig>;
  /** Continue from the run's latest checkpoint in IndexedDB when there is one. */
  resume?: boolean;
  /** IndexedDB database of the checkpoints (default: the app's). */
  dbName?: string;
}

/**
 * The training calls of the planner worker, on whichever runtime is loaded there, with checkpoints in
 * IndexedDB. One session at a time; a new model (or none) must end it (stop()).
 */
export class TrainingHost {
  private session: WorkerTrainingSession | null = null;

  constructor(
    private readonly runtime: () => Qwen2Runtime,
    private readonly baseModel: () => string,
  ) {}

  private need(): WorkerTrainingSession {
    if (!this.session) throw new Error('no training session in the planner worker; call trainStart() first');
    return this.session;
  }

  /** Starts training; the session's adapter becomes active, so the next generations sample from it. */
  async trainStart(o: TrainStartOptions): Promise<TrainSessionInfo> {
    const rt = this.runtime();
    this.trainStop();
    const db = await openAgentDb(o.dbName);
    const adapter: AdapterInit = 'adapterId' in o.adapter ? { kind: 'adapter', adapter: await storedAdapter(db, o.adapter.adapterId, rt.config) } : { kind: 'fresh', ...o.adapter };
    this.session = await WorkerTrainingSession.start(rt, { runId: o.runId, adapter, config: o.config, resume: o.resume, baseModel: this.baseModel() }, new IdbCheckpointStore(db));
    return this.session.info();
  }

  trainStep(samples: TurnSample[]): Promise<StepStats> {
    return this.need().step(samples);
  }

  /** Saves adapter, AdamW moments, counters and RNG; returns the step and the stored adapter's id. */
  async trainCheckpoint(): Promise<{ step: number; adapterId: string }> {
    const c = await this.need().checkpoint();
    return { step: c.step, adapterId: IdbCheckpointStore.adapterId(c.runId, c.step) };
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

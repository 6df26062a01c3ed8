// The Flow-GRPO training loop: collect a batch of rollouts, run one step, record statistics, save a
// checkpoint every `checkpointEvery` steps. Everything random goes through one seeded Rng whose state is
// saved with the checkpoint, so a resumed run takes the same next step as an uninterrupted one.
import { Rng } from '../util/rng';
import type { PolicyBackend } from './backend';
import type { CheckpointStore, TrainingCheckpoint } from './checkpoint';
import { CheckpointError } from './checkpoint';
import type { GrpoConfig } from './config';
import { grpoStep, type StepStats } from './grpo-step';
import type { TurnSample } from './samples';

/** Where a step's planner turns come from (the agent loop, or the toy task). */
export interface RolloutSource {
  /** Plays `queriesPerStep` queries × `groupSize` rollouts with the backend's current adapter. */
  collect(step: number, rng: Rng): Promise<{ samples: TurnSample[]; rolloutMs?: number }>;
}

export interface TrainerOptions {
  runId: string;
  store?: CheckpointStore;
  baseModel?: string;
  /** Control runs: see StepContext.zeroAdvantages. */
  zeroAdvantages?: boolean;
  onStep?: (s: StepStats & { rolloutMs: number }) => void;
}

export class GrpoTrainer {
  step = 0;
  optimizerSteps = 0;
  readonly rng: Rng;
  readonly history: Array<StepStats & { rolloutMs: number }> = [];

  constructor(readonly backend: PolicyBackend, readonly config: GrpoConfig, readonly source: RolloutSource, readonly options: TrainerOptions) {
    this.rng = new Rng(config.seed);
  }

  /** Collects rollouts and runs one Flow-GRPO step. */
  async trainStep(): Promise<StepStats & { rolloutMs: number }> {
    const next = this.step + 1;
    const t0 = typeof performance !== 'undefined' ? performance.now() : Date.now();
    const { samples, rolloutMs } = await this.source.collect(next, this.rng);
    const t1 = typeof performance !== 'undefined' ? performance.now() : Date.now();
    const stats = await grpoStep(this.backend, samples, this.config, {
      step: next,
      optimizerSteps: this.optimizerSteps,
      random: () => this.rng.next(),
      zeroAdvantages: this.options.zeroAdvantages,
    });
    this.step = next;
    this.optimizerSteps = stats.optimizerSteps;
    const full = { ...stats, rolloutMs: rolloutMs ?? t1 - t0 };
    this.history.push(full);
    this.options.onStep?.(full);
    if (this.options.store && this.config.checkpointEvery > 0 && this.step % this.config.checkpointEvery === 0) await this.saveCheckpoint();
    return full;
  }

  async run(steps: number, signal?: AbortSignal): Promise<Array<StepStats & { rolloutMs: number }>> {
    const out: Array<StepStats & { rolloutMs: number }> = [];
    for (let i = 0; i < steps; i++) {
      if (signal?.aborted) break;
      out.push(await this.trainStep());
    }
    return out;
  }

  async checkpoint(): Promise<TrainingCheckpoint> {
    const { adapter, moments } = await this.backend.exportState();
    return {
      runId: this.options.runId,
      step: this.step,
      optimizerSteps: this.optimizerSteps,
      rngState: this.rng.state,
      config: { ...this.config },
      adapter,
      moments,
      createdAt: Date.now(),
      baseModel: this.options.baseModel,
    };
  }

  async saveCheckpoint(): Promise<TrainingCheckpoint> {
    if (!this.options.store) throw new CheckpointError('no checkpoint store was given to the trainer');
    const c = await this.checkpoint();
    await this.options.store.save(c);
    return c;
  }

  /** Restores adapter, moments, step counters and RNG from `c` into this trainer and its backend. */
  async restore(c: TrainingCheckpoint): Promise<void> {
    if (c.runId !== this.options.runId) throw new CheckpointError(`checkpoint belongs to run '${c.runId}', not '${this.options.runId}'`);
    await this.backend.importState({ adapter: c.adapter, moments: c.moments });
    this.step = c.step;
    this.optimizerSteps = c.optimizerSteps;
    this.rng.state = c.rngState >>> 0;
  }

  /** Restores the run's latest checkpoint from the store; false when there is none. */
  async resume(): Promise<boolean> {
    if (!this.options.store) throw new CheckpointError('no checkpoint store was given to the trainer');
    const c = await this.options.store.latest(this.options.runId);
    if (!c) return false;
    await this.restore(c);
    return true;
  }
}

// The optimizer side of Flow-GRPO: given a step's planner-turn samples (pushed by whoever played the
// rollouts: src/trainer/run/training-run.ts), run one step and record statistics. Mini-batch shuffling draws
// from one seeded Rng whose state goes into the checkpoint (the session saves it: training-host.ts), so a
// resumed run takes the same next step as an uninterrupted one.
import { Rng } from '../util/rng';
import type { PolicyBackend } from './backend';
import type { TrainingCheckpoint } from './checkpoint-store';
import { CheckpointError } from './checkpoint-store';
import type { GrpoConfig } from './grpo-config';
import { grpoStep, type StepStats } from './grpo-step';
import type { TurnSample } from '../model/samples';

export interface TrainerOptions {
  runId: string;
  baseModel?: string;
  /** Control runs: see StepContext.zeroAdvantages. */
  zeroAdvantages?: boolean;
}

export class GrpoTrainer {
  step = 0;
  optimizerSteps = 0;
  readonly rng: Rng;

  constructor(readonly backend: PolicyBackend, readonly config: GrpoConfig, readonly options: TrainerOptions) {
    this.rng = new Rng(config.seed);
  }

  /**
   * One Flow-GRPO step on `samples`: the planner turns of this step's groups, each carrying its rollout's
   * reward (and the sampling logprobs when they were recorded).
   */
  async trainStep(samples: readonly TurnSample[]): Promise<StepStats> {
    const next = this.step + 1;
    const stats = await grpoStep(this.backend, samples, this.config, {
      step: next,
      optimizerSteps: this.optimizerSteps,
      random: () => this.rng.next(),
      zeroAdvantages: this.options.zeroAdvantages,
    });
    this.step = next;
    this.optimizerSteps = stats.optimizerSteps;
    return stats;
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

  /** Restores adapter, moments, step counters and RNG from `c` into this trainer and its backend. */
  async restore(c: TrainingCheckpoint): Promise<void> {
    if (c.runId !== this.options.runId) throw new CheckpointError(`checkpoint belongs to run '${c.runId}', not '${this.options.runId}'`);
    await this.backend.importState({ adapter: c.adapter, moments: c.moments });
    this.step = c.step;
    this.optimizerSteps = c.optimizerSteps;
    this.rng.state = c.rngState >>> 0;
  }
}

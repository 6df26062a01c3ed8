// What a training run records per step (the Training tab's charts, the CLI's metrics.jsonl), and how the
// run's best step is judged: by the rolling mean reward, so one lucky step does not count as the best.

export interface StepMetrics {
  step: number;
  /** Mean 0/1 reward over the step's rollouts, and its (population) standard deviation. */
  reward: number;
  rewardStd: number;
  /** Mean reward over the last `window` steps, this one included (fewer at the start). */
  rollingReward: number;
  loss: number;
  kl: number;
  /** Global gradient norm before clipping, of the step's last update. */
  gradNorm: number;
  clipFraction: number;
  /** Forward+backward tokens per second over the update. */
  tokensPerSecond: number;
  /** Planner response tokens trained on, planner turns (samples), and groups whose rewards were all equal. */
  plannerTokens: number;
  samples: number;
  noGradientGroups: number;
  /** Wall time of the step's rollouts and of its update, in seconds. */
  rolloutSeconds: number;
  updateSeconds: number;
  /** Sequences the planner decoded per decode step during the rollouts (1 = no batching), when it reports them. */
  plannerSequencesPerStep?: number;
  /** The update was skipped (non-finite loss or gradients): the adapter is unchanged. Why. */
  skippedUpdate?: string;
  /**
   * The step had no reward signal: every group's rewards were equal (after any extra rollouts), so no policy
   * gradient; with beta > 0 the update took the KL term alone, else none ran. Why, in words.
   */
  noSignal?: string;
  /** Dynamic sampling: extra rollouts drawn for groups with no success, and how many of those groups then had one. */
  extraRollouts?: number;
  rescuedGroups?: number;
  /**
   * With a trust region (GrpoConfig.maxUpdateKl): the step's last update's KL from the sampling policy on its
   * batch, and the share of AdamW's update it kept (1 = all).
   */
  updateKl?: number;
  updateScale?: number;
  /** This step is the run's best so far by rolling reward: its checkpoint is the run's result. */
  best?: boolean;
}

/**
 * One held-out evaluation during a run (`cli train --eval-data`, eval.jsonl; the Training tab charts it beside
 * the training reward): the adapter as it was after `step` (0: the adapter the run started from), every
 * held-out item played once through the agent loop at temperature 0 and scored by the run's reward rule.
 */
export interface EvalPoint {
  /** The training step whose adapter was evaluated; 0 is the starting adapter. */
  step: number;
  /** correct / total (0 when nothing was scored, e.g. the evaluation failed). */
  accuracy: number;
  correct: number;
  /** Items scored (an item whose run failed counts, as wrong). */
  total: number;
  /**
   * Items whose run recorded an error (a module reply that did not parse, a tool or engine failure, or the run
   * threw): where to look when accuracy is low.
   */
  errors?: number;
  /** Wall time of the evaluation. */
  seconds: number;
  /** The checkpoint evaluated: its adapter id (IndexedDB id, or the checkpoint directory). */
  adapter: string;
  /** The evaluation itself failed (not one item): why. accuracy, correct and total are then 0; charts skip it. */
  error?: string;
  /** The last evaluation of a finished run: its final step. */
  final?: boolean;
}

/**
 * Whether any step of a run learned from its rewards: took an update with a reward signal. False for a run
 * whose every step had all-equal groups (or skipped its update): its adapter moved at most on the KL term,
 * which from a fresh adapter (equal to the reference) is no move at all.
 */
export function learnedFromReward(history: ReadonlyArray<Pick<StepMetrics, 'noSignal' | 'skippedUpdate'>>): boolean {
  return history.some((m) => !m.noSignal && !m.skippedUpdate);
}

/** A run that learned nothing, in words (the CLI's stderr, the Training tab), or null when some step learned. */
export function noLearningNote(history: ReadonlyArray<Pick<StepMetrics, 'step' | 'noSignal' | 'skippedUpdate'>>): string | null {
  if (!history.length || learnedFromReward(history)) return null;
  const why = history.find((m) => m.noSignal)?.noSignal ?? history.find((m) => m.skippedUpdate)?.skippedUpdate ?? '';
  return (
    `no step of this run learned anything: all ${history.length} step${history.length === 1 ? '' : 's'} had no reward signal or skipped the update ` +
    `(step ${history[0].step}: ${why}). Its result is the adapter it started from, untouched by any reward.`
  );
}

/** Default number of steps the rolling reward averages (and the best step is judged by). */
export const DEFAULT_BEST_WINDOW = 20;

export function mean(xs: readonly number[]): number {
  return xs.length ? xs.reduce((a, b) => a + b, 0) / xs.length : 0;
}

export function populationStd(xs: readonly number[]): number {
  if (xs.length < 2) return 0;
  const m = mean(xs);
  return Math.sqrt(xs.reduce((a, x) => a + (x - m) ** 2, 0) / xs.length);
}

/**
 * Tracks the rolling mean reward and the best step by it. A step can be the best only once the window is
 * full (min(window, the run's steps) points), so a run's first lucky steps are not taken for learning. Only a
 * strictly higher rolling reward makes a new best: on a plateau the run keeps the step that reached it
 * (and does not write a checkpoint every step).
 */
export class BestTracker {
  private readonly rewards: number[] = [];
  best: { step: number; rollingReward: number } | null = null;

  constructor(
    readonly window: number,
    /** The run's length: a run shorter than the window judges over the whole run. */
    readonly steps: number,
  ) {
    if (!Number.isInteger(window) || window < 1) throw new Error(`training: the rolling-reward window must be a positive integer, got ${window}`);
  }

  private get needed(): number {
    return Math.min(this.window, Math.max(1, this.steps));
  }

  /** Feeds one step's mean reward; returns the rolling reward and whether the step is the new best. */
  push(step: number, reward: number): { rollingReward: number; best: boolean } {
    this.rewards.push(reward);
    if (this.rewards.length > this.window) this.rewards.shift();
    const rollingReward = mean(this.rewards);
    const full = this.rewards.length >= this.needed;
    const best = full && (this.best === null || rollingReward > this.best.rollingReward);
    if (best) this.best = { step, rollingReward };
    return { rollingReward, best };
  }

  /** Rebuilds the tracker from stored steps (a resumed run). */
  static replay(window: number, steps: number, history: ReadonlyArray<Pick<StepMetrics, 'step' | 'reward'>>): BestTracker {
    const t = new BestTracker(window, steps);
    for (const m of history) t.push(m.step, m.reward);
    return t;
  }
}

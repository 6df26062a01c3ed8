// Flow-GRPO training settings: the defaults, why each is what it is, and validation that names the
// setting at fault. Everything the step and the loop read comes from a validated GrpoConfig.
import { AgentFlowError, type ErrorCategory } from '../errors';
import type { AdvantageBaseline } from '../agent/advantages';

export interface GrpoConfig {
  /** Rollouts per query (G). */
  groupSize: number;
  /** Queries per training step. */
  queriesPerStep: number;
  /** AdamW learning rate (the peak: see lrDecaySteps). */
  learningRate: number;
  /**
   * Cosine decay of the learning rate from `learningRate` at step 1 to `learningRate × lrFinalRatio` at this
   * step, constant after it; 0 = a constant rate.
   */
  lrDecaySteps: number;
  /** The decayed rate's fraction of learningRate (see lrDecaySteps). */
  lrFinalRatio: number;
  /** Lower clip of the ratio: rho is clipped to [1 - epsLow, 1 + epsHigh]. */
  epsLow: number;
  /** Upper clip of the ratio ("clip-higher", DAPO): larger than epsLow so low-probability tokens can still rise. */
  epsHigh: number;
  /** Weight of the k3 KL estimate against the reference (adapter-off) policy. */
  beta: number;
  /** k3 is clamped to [-klClamp, klClamp] per token, as in the fixture's loss. */
  klClamp: number;
  /** A = (r - mean) / (std + advantageEps) (see advantageStd). */
  advantageEps: number;
  /**
   * Divide each group's advantages by its reward's standard deviation (GRPO, AgentFlow). false: A = r - mean
   * (Dr. GRPO, Liu et al. 2025), so a group's update scales with its reward spread: in a group of 8 a lone
   * success gets 0.875 against a half-solved group's 0.5, where the division gives it 2.47 against 0.94.
   */
  advantageStd: boolean;
  /**
   * 'group' (Flow-GRPO): each query's group is its own baseline, so an all-solved or all-failed group gives no
   * gradient. 'batch': the step's mean and std over all its turns (REINFORCE++'s global normalisation), so a
   * solved query keeps pulling towards what solved it while other queries' groups move the weights it shares
   * with them, and an all-failed group pushes away from what it did. 'group-failed-batch': the group's, except
   * for a group that all failed (every reward equal, below the step's mean), measured from the step's mean and
   * std instead — pushed away from what it did, so a planner whose choice is wrong for a query, and too sure of
   * it to ever draw another, still gets a gradient there; an all-solved group still gives none.
   */
  advantageBaseline: AdvantageBaseline;
  adamBeta1: number;
  adamBeta2: number;
  adamEps: number;
  /** Decoupled AdamW weight decay on the LoRA tensors. */
  weightDecay: number;
  /** Clip the global gradient L2 norm to this (0 = no clipping). */
  maxGradNorm: number;
  /** Passes over each step's batch (PPO epochs). */
  epochs: number;
  /** Optimizer steps per epoch: the batch's samples are split into this many mini-batches. */
  miniBatches: number;
  /** Token budget of one forward+backward (micro-batch); gradients are accumulated across micro-batches. */
  microBatchTokens: number;
  /** Planner turns per rollout (the agent loop's max turns). */
  maxTurns: number;
  /** Sampling temperature of rollouts. */
  temperature: number;
  /** Steps between checkpoints (0 = only at the end). */
  checkpointEvery: number;
  /** Seed of the trainer's RNG (sampling, shuffling); stored in checkpoints. */
  seed: number;
  /**
   * Dynamic sampling: up to this many more rollouts of a query whose group has no success (every reward equal
   * and below 1), drawn groupSize at a time until one differs; they join its group. 0 = never.
   */
  extraRollouts: number;
  /**
   * Each update's learning rate is multiplied by the share of the step's groups that have a reward spread, so a
   * step where one group of eight carries the evidence moves the adapter an eighth as far. AdamW divides the
   * gradient by its running size, so without this a late step's few unsolved groups move every weight about
   * the learning rate, as far as an early step's many (README, "What an update does, measured").
   */
  lrBySignal: boolean;
  /**
   * Weight of an entropy bonus: the loss gains −entropyCoef × H per response token, H the entropy of the
   * model's whole next-token distribution at that token or of the choices there (entropyOver); PPO's entropy
   * bonus, not in Flow-GRPO's objective, so that a choice the rewards have not settled does not peak before it
   * is read. 0 = none. The float64 CPU
   * backends implement it; grpoStep refuses a non-zero value on the GPU backend (its loss kernels have no
   * entropy term). It rides on updates only: a step with no reward spread and beta 0 still takes no update
   * (the momentum drift that takes no-signal steps out, grpo-step.ts, would come back with the bonus alone).
   */
  entropyCoef: number;
  /**
   * Which distribution the entropy bonus spreads: 'vocabulary' (the model's whole next-token distribution at
   * every response token in the loss) or 'choices' (only where a reply's grammar left a few tokens to choose
   * from, such as a tool name's first token, and over those tokens alone, renormalised: the distribution the
   * draw actually came from, with tokens that spell the same reply up to the next choice counted as one
   * outcome). The whole-vocabulary bonus mostly moves mass to tokens the grammar masks anyway; 'choices' keeps
   * a choice between tools open without touching the rest. Needs rollouts that recorded their choices
   * (TurnSample.choices: the float64 CPU planner records them, the GPU planner does not); rows without any get
   * no bonus, and a step where no turn has any is refused.
   */
  entropyOver: 'vocabulary' | 'choices';
  /**
   * Whose turns take the entropy bonus: 'all' (every turn of an update), or 'all-failed' (only the turns of
   * groups whose rewards are all equal and below the step's mean: the queries no rollout solved, which give no
   * policy gradient, so the bonus there widens what the next rollouts try without unsettling what solved
   * groups have learned). A fixed bonus on every turn strong enough to loosen a peaked choice also shook whole
   * learned kinds on the tool task (README, "An entropy bonus over the choices themselves").
   */
  entropyGroups: 'all' | 'all-failed';
  /**
   * A trust region on each update, in policy space: after AdamW, the batch is scored again and the mean k3
   * estimate of KL(sampling policy ‖ updated policy) over its response tokens measured; above this, the update
   * is scaled back toward the adapter it started from until within it (a few rescorings at most). AdamW moves
   * every weight about the learning rate whatever the gradient, so without it how far the policy moves depends
   * on the rate: a doubled rate flipped solved kinds onto one tool (README, "A trust region on each update").
   * 0 = off (no extra scoring).
   */
  maxUpdateKl: number;
}

/**
 * Defaults, with reasons:
 * - groupSize 8, epsLow 0.2, epsHigh 0.3, beta 0.001, maxTurns 3: AgentFlow's Flow-GRPO recipe (its 7B runs
 *   use group 8, clip 0.2 / 0.3, KL 0.001 and 3 planner turns).
 * - learningRate 2e-5: AgentFlow fine-tunes all 7B weights with 1e-6; a LoRA adapter has far fewer,
 *   zero-initialised parameters whose update is scaled by alpha/r, so it takes larger steps. AdamW moves each
 *   weight by about the learning rate per step whatever the gradient's size, and small groups give noisy
 *   advantages, so the default sits low in the 1e-5 to 5e-5 range of LoRA GRPO recipes for 0.5B-7B models
 *   (the Training panel shows the same value; the toy task uses its own large rate on a tiny model).
 * - lrDecaySteps 0 (constant rate): AgentFlow's recipe keeps a constant rate. The toy run decays it over the run
 *   (TOY_GRPO, reasons in README "Toy training"); lrFinalRatio 0.1 is the usual cosine floor.
 * - weightDecay 0.01, adam betas 0.9/0.999, eps 1e-8, maxGradNorm 1.0: the usual AdamW settings of
 *   verl / TRL, which AgentFlow builds on.
 * - epochs 1, miniBatches 1: one on-policy update per batch, so old logprobs equal the current ones at the
 *   first (and only) update and the ratio clip only matters when a user asks for more passes.
 * - microBatchTokens 768: the largest pass that keeps Qwen2.5-0.5B training near 2.7 GB of GPU memory with
 *   every activation kept for the backward (2 MB per row; see the memory plan in backward.ts). A batch of
 *   8 turns × 600 tokens then runs as 7 micro-batches with gradient accumulation, which gives the same
 *   gradient as one pass. Raise it on large GPUs for speed; it must be at least the longest turn.
 * - temperature 1.0: sampling at the policy's own distribution keeps old logprobs the true behaviour policy.
 * - klClamp 10 and advantageEps 1e-6: the values of the reference loss (shared fixture).
 * - advantageStd true: Flow-GRPO's (and verl's GRPO's) advantage. Dr. GRPO's unscaled one is a setting: on the
 *   tool-choice task it moved held-out accuracy more gradually but trained no better on four tuning seeds
 *   (README, "Tool-choice task").
 * - extraRollouts 8 (one more group's worth): a query whose group all failed gives no gradient, so a query
 *   the base planner rarely solves is never learned unless a success is sampled (DAPO's dynamic sampling
 *   resamples for the same reason). Only all-failed groups are resampled: an all-solved group's rare failure
 *   is the full-size late update that flipped solved toy queries (README, "Toy training"), and resampling
 *   solved queries would multiply the rollout cost of a run that has learned. Bounded because each extra
 *   agent rollout costs as much as a group's.
 */
export const DEFAULT_GRPO_CONFIG: Readonly<GrpoConfig> = Object.freeze({
  groupSize: 8,
  queriesPerStep: 4,
  learningRate: 2e-5,
  lrDecaySteps: 0,
  lrFinalRatio: 0.1,
  epsLow: 0.2,
  epsHigh: 0.3,
  beta: 0.001,
  klClamp: 10,
  advantageEps: 1e-6,
  advantageStd: true,
  advantageBaseline: 'group',
  adamBeta1: 0.9,
  adamBeta2: 0.999,
  adamEps: 1e-8,
  weightDecay: 0.01,
  maxGradNorm: 1.0,
  epochs: 1,
  miniBatches: 1,
  microBatchTokens: 768,
  maxTurns: 3,
  temperature: 1.0,
  checkpointEvery: 10,
  seed: 1,
  extraRollouts: 8,
  lrBySignal: false,
  entropyCoef: 0,
  entropyOver: 'vocabulary',
  entropyGroups: 'all',
  maxUpdateKl: 0,
});

export class GrpoConfigError extends AgentFlowError {
  override readonly category: ErrorCategory = 'bad-setting';
  constructor(public readonly setting: string, message: string) {
    super(`Flow-GRPO setting '${setting}' ${message}`);
    this.name = 'GrpoConfigError';
  }
}

type Rule = { bool?: true; oneOf?: readonly string[]; int?: boolean; min?: number; minExclusive?: boolean; max?: number; maxExclusive?: boolean };

const RULES: Record<keyof GrpoConfig, Rule> = {
  groupSize: { int: true, min: 2 },
  queriesPerStep: { int: true, min: 1 },
  learningRate: { min: 0, minExclusive: true, max: 1 },
  lrDecaySteps: { int: true, min: 0 },
  lrFinalRatio: { min: 0, max: 1 },
  epsLow: { min: 0, max: 1, maxExclusive: true },
  epsHigh: { min: 0 },
  beta: { min: 0 },
  klClamp: { min: 0, minExclusive: true },
  advantageEps: { min: 0, minExclusive: true },
  advantageStd: { bool: true },
  advantageBaseline: { oneOf: ['group', 'batch', 'group-failed-batch'] },
  adamBeta1: { min: 0, max: 1, maxExclusive: true },
  adamBeta2: { min: 0, max: 1, maxExclusive: true },
  adamEps: { min: 0, minExclusive: true },
  weightDecay: { min: 0 },
  maxGradNorm: { min: 0 },
  epochs: { int: true, min: 1 },
  miniBatches: { int: true, min: 1 },
  microBatchTokens: { int: true, min: 2 },
  maxTurns: { int: true, min: 1 },
  temperature: { min: 0, minExclusive: true },
  checkpointEvery: { int: true, min: 0 },
  seed: { int: true, min: 0, max: 2 ** 32 - 1 },
  extraRollouts: { int: true, min: 0, max: 4096 },
  lrBySignal: { bool: true },
  entropyCoef: { min: 0 },
  entropyOver: { oneOf: ['vocabulary', 'choices'] },
  entropyGroups: { oneOf: ['all', 'all-failed'] },
  maxUpdateKl: { min: 0 },
};

function describeRule(r: Rule): string {
  if (r.bool) return 'true or false';
  if (r.oneOf) return `one of ${r.oneOf.map((v) => `'${v}'`).join(', ')}`;
  const parts: string[] = [r.int ? 'an integer' : 'a finite number'];
  if (r.min !== undefined) parts.push(`${r.minExclusive ? '>' : '>='} ${r.min}`);
  if (r.max !== undefined) parts.push(`${r.maxExclusive ? '<' : '<='} ${r.max}`);
  return parts.join(' ');
}

/** Merges `overrides` onto the defaults and checks every setting; throws GrpoConfigError naming the first bad one. */
export function resolveGrpoConfig(overrides: Partial<Record<keyof GrpoConfig, unknown>> = {}): GrpoConfig {
  for (const key of Object.keys(overrides)) {
    if (!(key in RULES)) throw new GrpoConfigError(key, `is not a Flow-GRPO setting (known: ${Object.keys(RULES).join(', ')})`);
  }
  const cfg = { ...DEFAULT_GRPO_CONFIG } as Record<string, unknown>;
  for (const [k, v] of Object.entries(overrides)) if (v !== undefined) cfg[k] = v;
  for (const [key, rule] of Object.entries(RULES) as Array<[keyof GrpoConfig, Rule]>) {
    const v = cfg[key];
    if (rule.bool) {
      if (typeof v !== 'boolean') throw new GrpoConfigError(key, `must be true or false (got ${JSON.stringify(v)})`);
      continue;
    }
    if (rule.oneOf) {
      if (typeof v !== 'string' || !rule.oneOf.includes(v)) throw new GrpoConfigError(key, `must be ${describeRule(rule)} (got ${JSON.stringify(v)})`);
      continue;
    }
    const ok =
      typeof v === 'number' &&
      Number.isFinite(v) &&
      (!rule.int || Number.isInteger(v)) &&
      (rule.min === undefined || (rule.minExclusive ? v > rule.min : v >= rule.min)) &&
      (rule.max === undefined || (rule.maxExclusive ? v < rule.max : v <= rule.max));
    if (!ok) throw new GrpoConfigError(key, `must be ${describeRule(rule)} (got ${JSON.stringify(v)})`);
  }
  const c = cfg as unknown as GrpoConfig;
  if (c.miniBatches > c.queriesPerStep * c.groupSize) {
    throw new GrpoConfigError('miniBatches', `(${c.miniBatches}) cannot exceed the rollouts per step, queriesPerStep × groupSize = ${c.queriesPerStep * c.groupSize}`);
  }
  return c;
}

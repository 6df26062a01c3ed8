// One Flow-GRPO optimisation step over a batch of planner-turn samples: group advantages (the ones the
// samples carry, or computed here), old logprobs (recorded at sampling, or recomputed), reference logprobs
// (adapter off), then for each epoch and mini-batch: forward+backward over micro-batches with gradient
// accumulation, global-norm clip, AdamW.
import { clipFactor } from './adamw-cpu';
import { allFailedGroups, groupAdvantages, groupStats, type AdvantageResult, type GroupStats } from '../agent/advantages';
import type { PolicyBackend } from './backend';
import { GrpoConfigError, type GrpoConfig } from './grpo-config';
import { addSums, emptySums, type GrpoLossSums } from '../model/loss';
import { microBatches, miniBatches, packBatch, type TurnSample } from '../model/samples';
import { scoredMicroBatches } from './score-batches';
import { holdUpdateWithin } from './update-trust-region';

export interface StepStats {
  /** 1-based index of this training step. */
  step: number;
  /**
   * AdamW updates applied so far (epochs × mini-batches per step, less skipped ones: like a skipped step of
   * torch's GradScaler, a skipped update does not advance AdamW's bias correction). `step` counts every
   * step, skipped updates or not: its batch was used and the trainer's RNG moved on.
   */
  optimizerSteps: number;
  /** Mean final reward over the batch's rollouts. */
  rewardMean: number;
  /**
   * Mean over the last update's tokens (the loss the update descended, less an entropy bonus's term, which is not
   * measured; NaN/±Infinity when it was skipped).
   */
  loss: number;
  /** Mean k3 KL estimate to the reference policy over response tokens; NaN (not measured) when beta = 0 and the batch carried no reference logprobs. */
  kl: number;
  /** Fraction of response tokens whose ratio was clipped (no policy gradient). */
  clipFraction: number;
  ratioMean: number;
  /** Global gradient norm before clipping, of the last update. */
  gradNorm: number;
  /**
   * Why an update of this step was skipped; absent when every update ran. 'non-finite loss' or
   * 'non-finite gradient norm': a NaN or infinity was found before AdamW, so that update left the adapter
   * and the AdamW moments as they were (the step's other mini-batches and epochs still run).
   */
  skipped?: 'non-finite loss' | 'non-finite gradient norm';
  /** How many of the step's updates were skipped; absent when none was. */
  skippedUpdates?: number;
  /** Samples (turns), response tokens and all tokens in the batch. */
  samples: number;
  responseTokens: number;
  tokens: number;
  groups: number;
  /** Groups whose rewards were all equal: they give no policy gradient this step. */
  noGradientGroups: number;
  /**
   * Every group's rewards were equal: no policy gradient. With beta > 0 the update still ran, on the KL term
   * alone (Flow-GRPO's objective on such a batch). With beta = 0 no update ran (adapter, AdamW moments and
   * optimizerSteps unchanged), the reference logprobs were not scored, and loss, clip and gradient statistics
   * are 0 and kl NaN (not measured). Absent otherwise.
   */
  noSignal?: true;
  groupStats: GroupStats[];
  /** Forward+backward tokens per second over the update phase. */
  tokensPerSecond: number;
  ms: { oldLogprobs: number; refLogprobs: number; update: number; total: number };
  /**
   * With GrpoConfig.maxUpdateKl: the last update's KL from the sampling policy on its batch (mean k3 per
   * response token), and the share of AdamW's update kept to stay within the bound (1 = all). Absent otherwise
   * or when no update ran.
   */
  trustRegion?: { kl: number; scale: number };
}

export interface StepContext {
  /** Training step number being run (1-based). */
  step: number;
  /** Optimizer steps done before this one (AdamW bias correction continues from it). */
  optimizerSteps: number;
  /** Uniform [0, 1) source for mini-batch shuffling (the trainer's seeded RNG). */
  random: () => number;
  /**
   * Control runs only: every advantage is forced to 0, so the update sees the KL term alone. With the same
   * seed and loop, a learning curve that rises only without this flag shows the reward signal is what trains.
   */
  zeroAdvantages?: boolean;
}

/** The learning rate of training step `step` (1-based): cosine from learningRate down to learningRate × lrFinalRatio at lrDecaySteps. */
export function learningRateAt(cfg: Pick<GrpoConfig, 'learningRate' | 'lrDecaySteps' | 'lrFinalRatio'>, step: number): number {
  if (!(cfg.lrDecaySteps > 1)) return cfg.learningRate;
  const t = Math.min(1, Math.max(0, (step - 1) / (cfg.lrDecaySteps - 1)));
  return cfg.learningRate * (cfg.lrFinalRatio + (1 - cfg.lrFinalRatio) * 0.5 * (1 + Math.cos(Math.PI * t)));
}

const now = () => (typeof performance !== 'undefined' ? performance.now() : Date.now());

/** Fills per-row logprobs of `samples[i].key` for the given indices through the backend, micro-batched. */
async function scoreInto(backend: PolicyBackend, samples: TurnSample[], idx: number[], cfg: GrpoConfig, adapterOn: boolean, key: 'oldLogprobs' | 'refLogprobs'): Promise<void> {
  for await (const { batch, logprobs } of scoredMicroBatches(backend, samples, idx, backend.microBatchTokens ?? cfg.microBatchTokens, adapterOn)) {
    for (const s of batch.seqs) {
      const p = s.promptLen;
      samples[s.sample][key] = Array.from(logprobs.subarray(s.start + p - 1, s.start + s.length - 1));
    }
  }
}

/** Mean final reward over rollouts (each rollout counted once, however many turns it has). */
export function rolloutRewardMean(samples: readonly TurnSample[]): number {
  const byRollout = new Map<string, number>();
  for (const s of samples) byRollout.set(`${s.groupId}\u0000${s.rolloutId}`, s.reward);
  let sum = 0;
  for (const r of byRollout.values()) sum += r;
  return byRollout.size ? sum / byRollout.size : 0;
}

/**
 * The batch's advantages and group statistics. A training run's samples carry the advantages it computed
 * when it built the batch (and stored with each turn); a batch without them gets them here, by the same rule.
 */
function stepAdvantages(input: readonly TurnSample[], cfg: GrpoConfig): AdvantageResult {
  if (!input.every((s) => s.advantage !== undefined)) return groupAdvantages(input, cfg.advantageEps, cfg.advantageStd, cfg.advantageBaseline);
  input.forEach((s, i) => {
    if (!Number.isFinite(s.advantage)) throw new Error(`grpoStep: sample ${i} (rollout '${s.rolloutId}', turn ${s.turn}) carries advantage ${s.advantage}; an advantage must be a finite number`);
  });
  const advantages = input.map((s) => s.advantage as number);
  return { ...groupStats(input, advantages), advantages };
}

export async function grpoStep(backend: PolicyBackend, input: readonly TurnSample[], cfg: GrpoConfig, ctx: StepContext): Promise<StepStats> {
  const t0 = now();
  if (input.length === 0) throw new Error('grpoStep: the batch has no samples (no planner turns were recorded)');
  if (cfg.entropyCoef > 0 && !backend.entropyBonus) throw new GrpoConfigError('entropyCoef', `is ${cfg.entropyCoef}, but this training backend has no entropy bonus (only the float64 CPU backends do); set it to 0`);
  // A bonus over choices with no choice set recorded would silently be no bonus at all.
  if (cfg.entropyCoef > 0 && cfg.entropyOver === 'choices' && !input.some((s) => s.choices)) {
    throw new GrpoConfigError('entropyOver', `is 'choices', but none of this step's ${input.length} planner turns recorded its choice sets (the engine that sampled them does not; the float64 CPU planner does); use 'vocabulary' or set entropyCoef to 0`);
  }
  const adv = stepAdvantages(input, cfg);
  const failed = cfg.entropyCoef > 0 && cfg.entropyGroups === 'all-failed' ? allFailedGroups(input) : null;
  const samples: TurnSample[] = input.map((s, i) => ({ ...s, advantage: ctx.zeroAdvantages ? 0 : adv.advantages[i], ...(failed ? { entropyWeight: failed.has(s.groupId) ? 1 : 0 } : {}) }));
  // With every group's rewards equal the policy gradient is zero. With beta = 0 no optimizer step runs: there
  // is nothing to descend, yet AdamW would still move every weight on its momentum, about the learning rate
  // per step for several steps; once a run has solved most queries most steps are like this, and that drift
  // is what flipped solved queries onto wrong answers (README, "Toy training"). With beta > 0 the objective
  // still has its KL term, so the step descends it alone: skipping it would optimise a different objective
  // from Flow-GRPO's (which never drops a step), and the KL pull is what keeps the adapter near the reference
  // while rewards give nothing. The control run's forced-zero advantages are not "no signal".
  const noSignal = adv.noGradientGroups === adv.groups.length;
  const noUpdate = noSignal && !(cfg.beta > 0) && !ctx.zeroAdvantages;
  const all = samples.map((_, i) => i);
  // A step with no signal keeps the full rate: with beta > 0 it descends the KL term alone (see above).
  const lrScale = cfg.lrBySignal && !noSignal ? (adv.groups.length - adv.noGradientGroups) / adv.groups.length : 1;

  const missingOld = all.filter((i) => !samples[i].oldLogprobs);
  if (missingOld.length) await scoreInto(backend, samples, missingOld, cfg, true, 'oldLogprobs');
  const t1 = now();
  // The reference policy is the base model (adapter off). With beta = 0 the KL term is not in the objective,
  // so its logprobs are not scored: a forward of every sample, about a third of a CPU update (and 22-45 s for
  // 1.7k-token agent prompts on lavapipe), for a statistic only. Such a step reports kl as NaN (not measured);
  // the loss still reads a reference per row, so the old logprobs stand in for it (finite, multiplied by 0;
  // a 0 stand-in would overflow the k3 estimate, exp(ref - logp), on improbable tokens).
  const measureKl = cfg.beta > 0 || samples.every((s) => s.refLogprobs);
  const missingRef = noUpdate || !measureKl ? [] : all.filter((i) => !samples[i].refLogprobs);
  if (missingRef.length) await scoreInto(backend, samples, missingRef, cfg, false, 'refLogprobs');
  if (!measureKl) for (const s of samples) s.refLogprobs ??= s.oldLogprobs;
  const t2 = now();

  const lossParams = { epsLow: cfg.epsLow, epsHigh: cfg.epsHigh, beta: cfg.beta, klClamp: cfg.klClamp, entropyCoef: cfg.entropyCoef, entropyOver: cfg.entropyOver };
  let optimizerSteps = ctx.optimizerSteps;
  let last = emptySums();
  let gradNorm = 0;
  let processed = 0;
  let skipped: StepStats['skipped'];
  let skippedUpdates = 0;
  let trustRegion: StepStats['trustRegion'];
  for (let epoch = 0; epoch < (noUpdate ? 0 : cfg.epochs); epoch++) {
    const parts = cfg.miniBatches === 1 ? [all] : miniBatches(samples, cfg.miniBatches, ctx.random);
    for (const part of parts) {
      const micro = microBatches(samples, part, backend.microBatchTokens ?? cfg.microBatchTokens).map((mb) => packBatch(samples, mb, backend.modelConfig.vocabSize));
      // At least 1: a mini-batch of forced tokens only has no loss rows (and nothing to divide).
      const N = Math.max(1, micro.reduce((n, b) => n + b.responseTokens, 0));
      backend.zeroGrads();
      let sums = emptySums();
      for (const b of micro) {
        sums = addSums(sums, await backend.accumulate(b, lossParams, N));
        processed += b.rows;
      }
      gradNorm = await backend.gradNorm();
      last = sums;
      // One NaN or infinity in the gradients would reach every parameter through AdamW's moments.
      const bad = !Number.isFinite(sums.policy) || !Number.isFinite(sums.kl) ? 'non-finite loss' : !Number.isFinite(gradNorm) ? 'non-finite gradient norm' : null;
      if (bad) {
        skipped ??= bad;
        skippedUpdates++;
        continue;
      }
      optimizerSteps++;
      const before = cfg.maxUpdateKl > 0 ? await backend.exportAdapter() : null;
      await backend.adamw({
        lr: learningRateAt(cfg, ctx.step) * lrScale,
        beta1: cfg.adamBeta1,
        beta2: cfg.adamBeta2,
        eps: cfg.adamEps,
        weightDecay: cfg.weightDecay,
        step: optimizerSteps,
        gradScale: clipFactor(gradNorm, cfg.maxGradNorm),
      });
      if (before) trustRegion = await holdUpdateWithin(backend, samples, part, backend.microBatchTokens ?? cfg.microBatchTokens, before, cfg.maxUpdateKl);
    }
  }
  const t3 = now();
  const tokens = samples.reduce((n, s) => n + s.promptTokens.length + s.responseTokens.length, 0);
  const responseTokens = samples.reduce((n, s) => n + s.responseTokens.length, 0);
  if (noUpdate) last = { ...emptySums(), tokens: responseTokens, ratio: responseTokens, kl: NaN };
  const T = Math.max(1, last.tokens);
  return {
    step: ctx.step,
    optimizerSteps,
    rewardMean: rolloutRewardMean(samples),
    loss: noUpdate ? 0 : (last.policy + cfg.beta * last.kl) / T,
    kl: measureKl ? last.kl / T : NaN,
    clipFraction: last.clipped / T,
    ratioMean: last.ratio / T,
    gradNorm,
    samples: samples.length,
    responseTokens,
    tokens,
    groups: adv.groups.length,
    noGradientGroups: adv.noGradientGroups,
    groupStats: adv.groups,
    tokensPerSecond: processed / Math.max(1e-9, (t3 - t2) / 1000),
    ms: { oldLogprobs: t1 - t0, refLogprobs: t2 - t1, update: t3 - t2, total: t3 - t0 },
    ...(skipped ? { skipped, skippedUpdates } : {}),
    ...(noSignal ? { noSignal: true as const } : {}),
    ...(trustRegion ? { trustRegion } : {}),
  };
}

// A trust region on one AdamW update, measured in policy space (GrpoConfig.maxUpdateKl): the batch is scored
// with the updated adapter, and if its response tokens' KL from the sampling policy is above the bound, the
// update is scaled back toward the adapter it started from. AdamW's step is about the learning rate per weight
// whatever the gradient's size, so the rate alone decides how far the policy moves; this bounds the move
// itself, as PPO's target KL and TRPO's line search do.
import type { LoraAdapter } from '../io/peft';
import type { PolicyBackend } from './backend';
import { adapterTensors, cloneAdapter } from './lora-init';
import type { TurnSample } from '../model/samples';
import { scoredMicroBatches } from './score-batches';

/** Scorings after the first before the trust region settles for the smallest scale tried. */
const MAX_SHRINKS = 4;

export interface TrustRegionResult {
  /** The accepted update's KL (mean k3 over response tokens), measured. */
  kl: number;
  /** The share of AdamW's update kept: 1 = all of it. */
  scale: number;
}

/**
 * Mean over the response tokens of `idx` of the k3 estimate of KL(old ‖ current): r − 1 − log r with
 * r = p_current / p_old, p_old the samples' recorded (sampling) logprobs — unbiased and never negative.
 */
export async function batchKlFromOld(backend: PolicyBackend, samples: readonly TurnSample[], idx: readonly number[], microBatchTokens: number): Promise<number> {
  let sum = 0;
  let n = 0;
  for await (const { batch, logprobs } of scoredMicroBatches(backend, samples, idx, microBatchTokens, true)) {
    for (const r of batch.lossRows) {
      const d = logprobs[r] - batch.oldLogprobs[r];
      sum += Math.expm1(d) - d;
      n++;
    }
  }
  return n ? sum / n : 0;
}

/** Writes into `into` the adapter `scale` of the way from `before` to `after`, tensor by tensor. */
export function blendAdapter(before: LoraAdapter, after: LoraAdapter, scale: number, into: LoraAdapter): LoraAdapter {
  const from = new Map(adapterTensors(before).map((t) => [t.name, t.data]));
  const to = new Map(adapterTensors(after).map((t) => [t.name, t.data]));
  for (const t of adapterTensors(into)) {
    const b = from.get(t.name);
    const a = to.get(t.name);
    if (!b || !a || b.length !== t.data.length || a.length !== t.data.length) throw new Error(`trust region: adapter tensor '${t.name}' changed shape during the update`);
    for (let i = 0; i < t.data.length; i++) t.data[i] = b[i] + scale * (a[i] - b[i]);
  }
  return into;
}

/**
 * Keeps the update just applied to `backend` (from the adapter `before`) within `maxKl` on the samples `idx`.
 * Each shrink guesses the scale from KL growing with the square of the step (so one rescoring usually does),
 * and never keeps more than 0.9 of the previous try. Only the adapter's weights move: AdamW's moments keep the
 * full update's (the gradient was seen).
 */
export async function holdUpdateWithin(
  backend: PolicyBackend,
  samples: readonly TurnSample[],
  idx: readonly number[],
  microBatchTokens: number,
  before: LoraAdapter,
  maxKl: number,
): Promise<TrustRegionResult> {
  let kl = await batchKlFromOld(backend, samples, idx, microBatchTokens);
  if (!(kl > maxKl)) return { kl, scale: 1 };
  const after = await backend.exportAdapter();
  const tried = cloneAdapter(after);
  let scale = 1;
  for (let i = 0; i < MAX_SHRINKS && kl > maxKl; i++) {
    // A NaN/infinite KL says nothing about the size: halve.
    scale *= Number.isFinite(kl) ? Math.min(0.9, 0.9 * Math.sqrt(maxKl / kl)) : 0.5;
    await backend.importAdapter(blendAdapter(before, after, scale, tried));
    kl = await batchKlFromOld(backend, samples, idx, microBatchTokens);
  }
  return { kl, scale };
}

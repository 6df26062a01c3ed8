// Loss and LoRA gradients of one Flow-GRPO batch without an optimizer step: the reference check against
// the fixture, and the `grpo-grad` CLI. Reference logprobs missing from a sample are computed by the
// backend with the adapter off.
import type { PolicyBackend } from './backend';
import { addSums, emptySums, type GrpoLossParams } from '../model/loss';
import { microBatches, packBatch, type TurnSample } from '../model/samples';

export interface GrpoGradResult {
  loss: number;
  /** Response tokens (N). */
  tokens: number;
  kl: number;
  clipFraction: number;
  /** The samples with refLogprobs filled in. */
  samples: TurnSample[];
}

export async function grpoLossAndGrads(backend: PolicyBackend, input: readonly TurnSample[], params: GrpoLossParams, microBatchTokens: number): Promise<GrpoGradResult> {
  const samples = input.map((s) => ({ ...s }));
  const all = samples.map((_, i) => i);
  const needRef = all.filter((i) => !samples[i].refLogprobs);
  for (const mb of microBatches(samples, needRef, microBatchTokens)) {
    const b = packBatch(samples, mb, backend.modelConfig.vocabSize);
    const lp = await backend.logprobs(b, false);
    for (const s of b.seqs) samples[s.sample].refLogprobs = Array.from(lp.subarray(s.start + s.promptLen - 1, s.start + s.length - 1));
  }
  for (const [i, s] of samples.entries()) {
    if (s.advantage === undefined || !s.oldLogprobs) throw new Error(`grpoLossAndGrads: sample ${i} needs 'advantage' and 'oldLogprobs'`);
  }
  const micro = microBatches(samples, all, microBatchTokens).map((mb) => packBatch(samples, mb, backend.modelConfig.vocabSize));
  const N = micro.reduce((n, b) => n + b.responseTokens, 0);
  backend.zeroGrads();
  let sums = emptySums();
  for (const b of micro) sums = addSums(sums, await backend.accumulate(b, params, N));
  return { loss: (sums.policy + params.beta * sums.kl) / N, tokens: N, kl: sums.kl / N, clipFraction: sums.clipped / N, samples };
}

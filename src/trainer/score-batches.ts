// Scoring a batch's turns through a backend, micro-batch by micro-batch: what the step's old and reference
// logprobs and the trust region's rescoring share.
import type { PolicyBackend } from './backend';
import { microBatches, packBatch, type PackedBatch, type TurnSample } from '../model/samples';

/** Each micro-batch of the turns `idx`, packed, with log p(target) of every row (adapter on or off: the reference). */
export async function* scoredMicroBatches(
  backend: PolicyBackend,
  samples: readonly TurnSample[],
  idx: readonly number[],
  microBatchTokens: number,
  adapterOn: boolean,
): AsyncGenerator<{ batch: PackedBatch; logprobs: Float32Array }> {
  for (const mb of microBatches(samples, idx, microBatchTokens)) {
    const batch = packBatch(samples, mb, backend.modelConfig.vocabSize);
    yield { batch, logprobs: await backend.logprobs(batch, adapterOn) };
  }
}

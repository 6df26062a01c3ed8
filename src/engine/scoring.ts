// Scoring and the training forward: given sequences packed into batches of whole sequences, one forward
// each plus log p(next token) of every row, read back per sequence.
import { assertDeviceAlive } from '../gpu/device';
import { validateTokenIds } from '../kernels/embedding/embedding';
import type { ActivationPlan } from '../model/activations';
import { packSequences, unpackLogprobs, writeBatch, type PackedBatch } from './batch';
import { recordForward, recordTargetLogprobs, ROW0_INPUT } from '../model/forward';
import { encodeSteps } from '../model/graph';
import { readF32 } from './gpu-calls';
import { firstNonFinite, nonFiniteError } from './non-finite';
import { bucket } from './runtime-options';
import type { RuntimeResources } from './runtime-resources';

/**
 * Entry t of row i is log p(seq[i][t+1] | seq[i][0..t]) under the active adapter (length len-1).
 * Sequences are packed into batches of whole sequences.
 */
export async function scoreSequences(res: RuntimeResources, sequences: number[][]): Promise<number[][]> {
  const { maxContext, maxBatchRows } = res.limits;
  sequences.forEach((s, i) => {
    if (!Array.isArray(s)) throw new Error(`score: sequence ${i} is not an array of token ids`);
    validateTokenIds(s, res.config.vocabSize, `score: sequence ${i}`);
    if (s.length > maxContext) throw new Error(`score: sequence ${i} has ${s.length} tokens, more than the context limit ${maxContext}`);
  });
  const out: number[][] = sequences.map(() => []);
  const order = sequences.map((_, i) => i).filter((i) => sequences[i].length >= 2);
  let b = 0;
  while (b < order.length) {
    const batch: number[] = [];
    let rows = 0;
    while (b < order.length && (batch.length === 0 || rows + sequences[order[b]].length <= maxBatchRows)) {
      rows += sequences[order[b]].length;
      batch.push(order[b++]);
    }
    await scoreBatch(res, sequences, batch, out);
  }
  return out;
}

/** Sequences `ids` of `sequences` as one packed batch; their logprobs go to out[id]. */
async function scoreBatch(res: RuntimeResources, sequences: number[][], ids: number[], out: number[][]): Promise<void> {
  const seqs = ids.map((i) => sequences[i]);
  const total = seqs.reduce((a, s) => a + s.length, 0);
  const n = bucket(total, res.limits.maxBatchRows);
  const plan = await res.plan('batch', n);
  const batch = packSequences(seqs, n);
  const lp = await runPacked(res, plan, batch, 'scoring');
  const rows = unpackLogprobs(batch, lp);
  // NaN or infinity means activations overflowed f32 (the weights were checked as they loaded): fail
  // naming the first such position rather than return it. The training forward (model/backward.ts) does
  // not check: the trainer skips a step whose loss is not finite.
  for (const [j, row] of rows.entries()) {
    const t = firstNonFinite(row);
    if (t >= 0) throw await nonFiniteError(res, 'score', seqs[j].slice(0, t + 1), ids[j]);
  }
  rows.forEach((row, j) => out[ids[j]].push(...row));
}

/**
 * Forward over a packed batch plus log p(target) of every real row (written to plan.logprobs and the
 * final log-sum-exp to plan.lse), in one submission; returns the per-row logprobs.
 */
async function runPacked(res: RuntimeResources, plan: ActivationPlan, batch: PackedBatch, doing: string): Promise<Float32Array> {
  const { ctx, weights } = res;
  const n = batch.rows;
  writeBatch(ctx, plan, batch);
  const forward = await res.records.get(`score:${plan.rows}:${n}`, (adapter) => recordForward(ctx, { plan, weights, adapter, n }), plan);
  const C = plan.logitsRows;
  assertDeviceAlive(ctx, doing);
  const enc = ctx.device.createCommandEncoder({ label: doing });
  encodeSteps(ctx, enc, forward);
  for (let r0 = 0; r0 < batch.tokens; r0 += C) {
    const rows = Math.min(C, batch.tokens - r0);
    const chunk = await res.records.get(`scoreChunk:${plan.rows}:${rows}`, () => recordTargetLogprobs(ctx, plan, weights, ROW0_INPUT, rows), plan);
    encodeSteps(ctx, enc, chunk, { row0: r0 });
  }
  ctx.device.queue.submit([enc.finish()]);
  return readF32(ctx, plan.logprobs, batch.tokens, 0, doing);
}

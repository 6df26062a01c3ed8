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
 * Sequences are packed into batches of whole sequences. With `from`, only entries t >= from[i] are computed
 * (the others are NaN): a training step needs its turns' response tokens only, and the LM head over a row
 * (151,936 logits at 0.5B) is ~1/5 of the whole forward's time per row on an H200 (the 2026-11-27 profile).
 */
export async function scoreSequences(res: RuntimeResources, sequences: number[][], from?: readonly number[]): Promise<number[][]> {
  const { maxContext, maxBatchRows } = res.limits;
  sequences.forEach((s, i) => {
    if (!Array.isArray(s)) throw new Error(`score: sequence ${i} is not an array of token ids`);
    validateTokenIds(s, res.config.vocabSize, `score: sequence ${i}`);
    if (s.length > maxContext) throw new Error(`score: sequence ${i} has ${s.length} tokens, more than the context limit ${maxContext}`);
  });
  if (from !== undefined) {
    if (from.length !== sequences.length) throw new Error(`score: from has ${from.length} entries for ${sequences.length} sequences`);
    from.forEach((f, i) => {
      if (!Number.isInteger(f) || f < 0) throw new Error(`score: from[${i}] must be a non-negative integer, got ${f}`);
    });
  }
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
    await scoreBatch(res, sequences, batch, out, from);
  }
  return out;
}

/** Sequences `ids` of `sequences` as one packed batch; their logprobs go to out[id]. */
async function scoreBatch(res: RuntimeResources, sequences: number[][], ids: number[], out: number[][], from?: readonly number[]): Promise<void> {
  const seqs = ids.map((i) => sequences[i]);
  const total = seqs.reduce((a, s) => a + s.length, 0);
  const n = bucket(total, res.limits.maxBatchRows);
  const plan = await res.plan('batch', n);
  const batch = packSequences(seqs, n);
  const firsts = ids.map((i) => Math.min(from?.[i] ?? 0, Math.max(0, sequences[i].length - 1)));
  // Row r's entry is log p(ids[r + 1]): sequence j needs rows start + first .. start + len - 2.
  const spans = batch.starts.map((start, j) => ({ row0: start + firsts[j], rows: Math.max(0, batch.lengths[j] - 1 - firsts[j]) }));
  const lp = await runPacked(res, plan, batch, 'scoring', from ? spans : [{ row0: 0, rows: batch.tokens }]);
  const rows = unpackLogprobs(batch, lp);
  // NaN or infinity means activations overflowed f32 (the weights were checked as they loaded): fail
  // naming the first such position rather than return it. The training forward (model/backward.ts) does
  // not check: the trainer skips a step whose loss is not finite.
  for (const [j, row] of rows.entries()) {
    row.fill(NaN, 0, firsts[j]);
    const t = firstNonFinite(row.slice(firsts[j]));
    if (t >= 0) throw await nonFiniteError(res, 'score', seqs[j].slice(0, firsts[j] + t + 1), ids[j]);
  }
  rows.forEach((row, j) => out[ids[j]].push(...row));
}

/**
 * Forward over a packed batch plus log p(target) of the rows in `spans` (written to plan.logprobs and the
 * final log-sum-exp to plan.lse), in one submission; returns the per-row logprobs (rows outside the spans hold
 * whatever an earlier call left there).
 */
async function runPacked(res: RuntimeResources, plan: ActivationPlan, batch: PackedBatch, doing: string, spans: { row0: number; rows: number }[]): Promise<Float32Array> {
  const { ctx, weights } = res;
  const n = batch.rows;
  writeBatch(ctx, plan, batch);
  const forward = await res.records.get(`scoreTiled:${plan.rows}:${n}`, (adapter) => recordForward(ctx, { plan, weights, adapter, n, tiledAttention: true }), plan);
  const C = plan.logitsRows;
  assertDeviceAlive(ctx, doing);
  const enc = ctx.device.createCommandEncoder({ label: doing });
  encodeSteps(ctx, enc, forward);
  for (const span of spans) {
    for (let r0 = span.row0; r0 < span.row0 + span.rows; r0 += C) {
      const rows = Math.min(C, span.row0 + span.rows - r0);
      const chunk = await res.records.get(`scoreChunk:${plan.rows}:${rows}`, () => recordTargetLogprobs(ctx, plan, weights, ROW0_INPUT, rows), plan);
      encodeSteps(ctx, enc, chunk, { row0: r0 });
    }
  }
  ctx.device.queue.submit([enc.finish()]);
  return readF32(ctx, plan.logprobs, batch.tokens, 0, doing);
}

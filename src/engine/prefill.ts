// Prefill: a prompt run through the model in the scoring / prefill plan, its K/V written to the KV cache (or
// to a generateBatch sequence's region of it), leaving the last position's logits in row 0 of the plan's
// logits.
import type { ActivationPlan } from '../model/activations';
import { packSequences, writeBatch } from './batch';
import { recordForward, recordLogits, recordTargetLogprobs, ROW0_INPUT } from '../model/forward';
import type { Step } from '../model/graph';
import { readF32, submitSteps } from './gpu-calls';
import type { KvCache } from '../model/kv-cache';
import { bucket } from './runtime-options';
import type { RuntimeResources } from './runtime-resources';

/**
 * Runs the prompt through the model and leaves the last position's logits in row 0 of the returned
 * plan's logits. With `cache`, K/V go to the KV cache (from cache row base + from: a sequence of
 * generateBatch has its own region from row `base`) for tokens from..; a prompt longer than maxBatchRows
 * is run in chunks of at most maxBatchRows rows, each attending to the cache filled by the ones before.
 */
export async function prefill(res: RuntimeResources, tokens: number[], cache: boolean, from = 0, base = 0): Promise<ActivationPlan> {
  if (!cache) return prefillChunk(res, tokens, 0, null);
  const kv = await res.kvCache();
  if (base + tokens.length > kv.maxCtx) throw new Error(`prompt of ${tokens.length} tokens at cache row ${base} does not fit the cache's ${kv.maxCtx} rows`);
  if (!(from >= 0 && from < tokens.length)) throw new Error(`prefill: start ${from} outside the prompt of ${tokens.length} tokens`);
  const C = res.limits.maxBatchRows;
  let plan: ActivationPlan | null = null;
  for (let c0 = from; c0 < tokens.length; c0 += C) plan = await prefillChunk(res, tokens.slice(c0, c0 + C), c0, kv, base);
  return plan!;
}

/** Rows of the plan a prefill chunk of P tokens at cache row `start` runs in (P rounded up to a bucket). */
export function prefillRows(res: RuntimeResources, P: number, start: number, kv: KvCache | null): number {
  // Padding rows of a cached prefill write cache rows past the prompt (each decode step overwrites its
  // row before any query reads it), so the padded chunk must still fit the cache.
  return Math.max(P, Math.min(bucket(P, res.limits.maxBatchRows), kv ? kv.maxCtx - start : Infinity));
}

/**
 * Prompt rows at positions start.. (in the cache when `kv` is given, from cache row base + start), and
 * logits of the last row.
 */
async function prefillChunk(res: RuntimeResources, tokens: number[], start: number, kv: KvCache | null, base = 0): Promise<ActivationPlan> {
  const { ctx, weights } = res;
  const P = tokens.length;
  const n = prefillRows(res, P, base + start, kv);
  const plan = await res.plan('batch', n);
  const batch = packSequences([tokens], n);
  if (start > 0 || base > 0) {
    // Positions continue the prompt; every row sees its region of the cache up to itself.
    for (let r = 0; r < n; r++) {
      batch.pos[r] = start + r;
      batch.ranges[2 * r] = base;
      batch.ranges[2 * r + 1] = base + start + r + 1;
    }
  }
  writeBatch(ctx, plan, batch);
  let forward: Step[];
  if (kv) {
    forward = await res.records.get(`prefill:${plan.rows}:${n}`, (adapter) => recordForward(ctx, { plan, weights, adapter, n, cache: { kv } }));
  } else {
    forward = await res.records.get(`score:${plan.rows}:${n}`, (adapter) => recordForward(ctx, { plan, weights, adapter, n }));
  }
  const logitSteps = await res.records.get(`lastLogits:${plan.rows}`, () => recordLogits(ctx, plan, weights, ROW0_INPUT, 1));
  submitSteps(ctx, [forward, logitSteps], 'prefill', { cacheRow: base + start, row0: P - 1 });
  return plan;
}

/**
 * Appends `run` to a sequence in the cache: its tokens at positions start.. (cache rows base + start..),
 * attending to the sequence's rows before them, exactly run.length rows (no padding rows: in a batch the
 * rows past a sequence's tokens may be another's). Leaves the last token's logits in row 0 of the returned
 * plan's logits, and returns log p(run[j + 1] | ...) for j < run.length - 1 (the model's own, temperature 1).
 * Jump-forward under a constraint: the forced tokens enter the cache in one forward, not one each.
 */
export async function appendRun(res: RuntimeResources, run: number[], start: number, base: number): Promise<{ plan: ActivationPlan; logprobs: Float32Array }> {
  const { ctx, weights } = res;
  const P = run.length;
  const kv = await res.kvCache();
  if (P < 1 || P > res.limits.maxBatchRows) throw new Error(`appendRun: ${P} tokens, outside 1..${res.limits.maxBatchRows}`);
  if (base + start + P > kv.maxCtx) throw new Error(`appendRun: ${P} tokens at cache row ${base + start} do not fit the cache's ${kv.maxCtx} rows`);
  const plan = await res.plan('batch', P);
  if (P - 1 > plan.logitsRows) throw new Error(`appendRun: ${P - 1} logprobs exceed the plan's ${plan.logitsRows} logits rows`);
  const batch = packSequences([run], P);
  for (let r = 0; r < P; r++) {
    batch.pos[r] = start + r;
    batch.ranges[2 * r] = base;
    batch.ranges[2 * r + 1] = base + start + r + 1;
  }
  writeBatch(ctx, plan, batch);
  const forward = await res.records.get(`prefill:${plan.rows}:${P}`, (adapter) => recordForward(ctx, { plan, weights, adapter, n: P, cache: { kv } }));
  // Target logprobs first: they use the logits rows that the last row's logits then overwrite at row 0.
  const targets = P > 1 ? await res.records.get(`appendLogprobs:${plan.rows}:${P - 1}`, () => recordTargetLogprobs(ctx, plan, weights, 0, P - 1)) : [];
  const logitSteps = await res.records.get(`lastLogits:${plan.rows}`, () => recordLogits(ctx, plan, weights, ROW0_INPUT, 1));
  submitSteps(ctx, [forward, targets, logitSteps], 'appending forced tokens', { cacheRow: base + start, row0: P - 1 });
  const logprobs = P > 1 ? await readF32(ctx, plan.logprobs, P - 1, 0, 'appending forced tokens') : new Float32Array(0);
  return { plan, logprobs };
}

// Which decode forward a step runs, recorded once per adapter and shape (step-records.ts): the fused 4-bit
// decode kernels of decode-forward.ts where the weights allow, else the general forward over the KV cache.
import { ATTN_DECODE_SINGLE_MAX_KEYS } from '../kernels/attention/attention.decode';
import type { ActivationPlan } from '../model/activations';
import { recordDecodeForward } from '../model/decode-forward';
import { recordForward } from '../model/forward';
import type { Step } from '../model/graph';
import type { KvCache } from '../model/kv-cache';
import type { RuntimeResources } from './runtime-resources';

/** A generateBatch step's rows: each a sequence in its own region of the cache. */
export interface DecodeBatch {
  n: number;
  /** u32 per row: its cache row, for the fused KV write (the general forward's copies take the encode input cacheRows). */
  rows: GPUBuffer;
  /** Fused decode: u32 [n, 2] per row, the key range of the prompt prefix it shares (batch-layout.ts). */
  prefixes?: GPUBuffer;
}

/**
 * The decode forward over the KV cache, one row (generate: its K/V go to the encode input cacheRow) or
 * `batch.n` rows of generateBatch: on 4-bit weights with fused q/k/v and gate/up (a web-llm build) the
 * fused decode kernels (about 40% fewer dispatches, no residual copies), else the general forward.
 */
export function recordedDecode(res: RuntimeResources, plan: ActivationPlan, kv: KvCache, position: number, batch?: DecodeBatch): Promise<Step[]> {
  const { ctx, weights } = res;
  const n = batch?.n ?? 1;
  const rows = batch && { buffer: batch.rows };
  const prefixes = batch?.prefixes;
  const tag = batch ? `decodeBatch:${n}` : 'decode';
  if (!res.fusedDecode) {
    return res.records.get(tag, (adapter) => recordForward(ctx, { plan, weights, adapter, n, cache: { kv, rows } }));
  }
  // Two recordings: attention in one workgroup per KV head while the context is short, split over key
  // slices once it may be long (the ranges themselves are only on the GPU). No sequence is longer than
  // maxContext, whatever rows a batch grew the cache to.
  const short = position + 1 <= ATTN_DECODE_SINGLE_MAX_KEYS;
  const maxKeys = short ? ATTN_DECODE_SINGLE_MAX_KEYS : Math.min(kv.maxCtx, res.limits.maxContext);
  return res.records.get(short ? tag : `${tag}:long`, (adapter) => recordDecodeForward(ctx, { plan, weights, adapter, n, cache: { kv, maxKeys, rows, prefixes } }));
}

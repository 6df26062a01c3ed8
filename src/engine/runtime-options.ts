// What a Qwen2Runtime is created with, its defaults and checks, and the row counts its calls round to.
import { Q4_SMALL_N } from '../kernels/q4/q4matmul.wgsl';
import { SMALL_N } from '../kernels/matmul/matmul.wgsl';
import { SGM_MIN_ROWS } from '../kernels/common/sgm-tile.wgsl';
import { checkStallMs } from './decode-stall';
import type { Qwen2Config } from '../io/qwen2-config';
import type { UploadProgress } from '../model/weights';

export interface RuntimeOptions {
  /** Longest prompt + generation (KV cache rows). Default min(max_position_embeddings, 4096). */
  maxContext?: number;
  /** Rows in one packed scoring / prefill batch (longer single sequences get their own batch). Default 512. */
  maxBatchRows?: number;
  /** Rows of logits computed at once when scoring. Default defaultLogitsRows (32; 64 with subgroup matrices). */
  logitsRows?: number;
  onProgress?: (p: UploadProgress) => void;
  /** Cap on one embedding / LM-head chunk (default: the device's binding limit). */
  maxChunkBytes?: number;
  /**
   * A 4-bit (MLC) source is kept 4-bit on the GPU unless this is set: then its dequantized f16 tensors are
   * uploaded instead (4x the memory; for comparisons).
   */
  dequantize?: boolean;
  /**
   * KV-cache rows generateBatch may use for the sequences it decodes together (each needs prompt +
   * maxNewTokens rows). Default maxContext: the cache generate() uses anyway, so batching costs no memory
   * but fits fewer long sequences at once. Raising it grows the cache when a batch needs it, at
   * 2 x layers x kvHeads x headDim x 4 bytes per row (24 KiB a row for Qwen2.5-0.5B).
   */
  batchContext?: number;
  /**
   * How long a decode (generate, generateBatch) waits for any one GPU read before it fails with a
   * GpuStallError naming the read (decode-stall.ts), so a hung driver cannot hold the runtime. Default
   * DEFAULT_STALL_MS (300 s: a software adapter's first dispatch of a kernel compiles it inside such a wait);
   * Infinity waits for ever.
   */
  stallTimeoutMs?: number;
}

/** The row limits a runtime runs under: RuntimeOptions with their defaults applied, checked. */
export interface RuntimeLimits {
  readonly maxContext: number;
  readonly maxBatchRows: number;
  readonly logitsRows: number;
  readonly batchContext: number;
  /** RuntimeOptions.stallTimeoutMs, defaulted. */
  readonly stallMs: number;
}

export interface GpuMemoryReport {
  weights: number;
  adapters: number;
  activations: number;
  kvCache: number;
}

/** The context (KV-cache rows) a runtime gets without RuntimeOptions.maxContext. */
export function defaultMaxContext(config: Qwen2Config): number {
  return Math.min(config.maxPositionEmbeddings, 4096);
}

/**
 * Logits rows per LM-head chunk when not asked for: 32 (a [32, vocab] f32 buffer, 19 MB for Qwen2.5), or
 * SGM_MIN_ROWS on a device with subgroup matrices, so scoring's and training's LM-head chunks reach the
 * tensor-core kernels (which take 64 rows or more; 32-row chunks ran on the f32 tiles, 63 ms of a 596 ms update
 * on an H200, 2026-11-27). Timed on an H200 (2026-11-28, same call): the LM head's GPU time in the update 73 -> 35 ms,
 * the 0.5B 4-bit training step 1,096 -> 926 ms (docs/performance.md, ninth call).
 */
export function defaultLogitsRows(caps: { subgroupMatrix: unknown }): number {
  return caps.subgroupMatrix ? SGM_MIN_ROWS : 32;
}

export function runtimeLimits(config: Qwen2Config, o: RuntimeOptions, caps: { subgroupMatrix: unknown } = { subgroupMatrix: null }): RuntimeLimits {
  const maxContext = o.maxContext ?? defaultMaxContext(config);
  const batchContext = o.batchContext ?? maxContext;
  if (!Number.isInteger(batchContext) || batchContext < maxContext) {
    throw new Error(`runtime: batchContext must be an integer >= maxContext (${maxContext}), got ${o.batchContext}`);
  }
  return { maxContext, maxBatchRows: o.maxBatchRows ?? 512, logitsRows: o.logitsRows ?? defaultLogitsRows(caps), batchContext, stallMs: checkStallMs(o.stallTimeoutMs) };
}

/**
 * Sequences generateBatch decodes in one step on 4-bit web-llm weights: the fused decode kernels (4-bit rows
 * kernel, fused decode linears, decode attention) take up to this many rows, reading each weight once for
 * all of them, so a default Flow-GRPO group of 8 decodes together.
 */
export const MAX_DECODE_ROWS = Q4_SMALL_N;
/**
 * The same for any other weights (the general forward): the f16 matmul's rows kernel takes up to SMALL_N
 * rows; more would switch to the tiled kernel, whose f32 sums differ from a lone sequence's.
 */
export const GENERAL_DECODE_ROWS = SMALL_N;

const BUCKET_STEP = 64;

// Batches are rounded up to a few row counts so step lists are recorded once per count, not per call: powers
// of two up to 64, then multiples of 64 (so a 300-row prefill computes 320 rows, not 512). Up to 4 rows stay
// exact: the matmul's row kernel handles them, and padding them to 8 would switch to the tiled kernel, which
// is far slower for a handful of rows. Every tile shape gives the same bits, so padding never changes a result.
export function bucket(n: number, max: number): number {
  if (n <= 4) return n;
  let b = 8;
  while (b < n && b < BUCKET_STEP) b *= 2;
  if (b < n) b = Math.ceil(n / BUCKET_STEP) * BUCKET_STEP;
  return Math.min(Math.max(b, n), Math.max(max, n));
}

/**
 * The rows a decode step of n sequences computes: 1, 2, 4 or 8 (at most `max`). The kernels are built per
 * row count and the step lists recorded per row count, so as a batch's sequences stop one by one it runs
 * a few shapes, not every count from 8 down; a padding row costs next to nothing in a step bound by reading
 * the weights, and rows never see each other's values.
 */
export function decodeRowBucket(n: number, max: number): number {
  let b = 1;
  while (b < n) b *= 2;
  return Math.max(n, Math.min(b, max));
}

import type { GpuContext } from '../../gpu/device';
import { getPipeline, grid1d, type Dispatch } from '../../gpu/pipelines';
import { checkDims, paramsUniform } from '../common/params';
import { matmul } from '../matmul/matmul';
import { LSE_SMALL_WG, LSE_WG, lseChunkSmallWgsl, lseChunkWgsl, lseFinalizeWgsl } from './logits.wgsl';

export interface LmHeadArgs {
  /** f32 [rows, H]: final-normed hidden states of the rows that need logits. */
  x: GPUBuffer;
  /** f16 bits [rowCount, H]: vocabulary rows rowOffset .. rowOffset+rowCount of the (tied or untied) head. */
  E: GPUBuffer;
  /** f32 [rows, ld] logits; this chunk's scores land at columns colOffset .. colOffset+rowCount. */
  logits: GPUBuffer;
  rows: number;
  hidden: number;
  rowOffset: number;
  rowCount: number;
  /** Row stride of `logits` (default: rowOffset + rowCount is not enough; pass V for a full [rows, V] buffer). */
  ld: number;
  /** Column in `logits` of vocab id rowOffset (default rowOffset: a full-width buffer). Use 0 for a chunk-only buffer. */
  colOffset?: number;
}

/**
 * LM head for one vocabulary chunk: logits[r, colOffset + j] = x[r] · E[j] for j < rowCount.
 * Buffers: x f32 [rows, H], E f16 [rowCount, H], logits f32 [rows, ld].
 */
export async function lmHead(ctx: GpuContext, a: LmHeadArgs): Promise<Dispatch> {
  return matmul(ctx, lmHeadMatmulArgs(a));
}

/** An LM head chunk as a matmul's arguments, whatever form its vocabulary rows `E` take (f16 or 4-bit). */
export function lmHeadMatmulArgs<E>(a: Omit<LmHeadArgs, 'E'> & { E: E }) {
  return { x: a.x, W: a.E, y: a.logits, n: a.rows, inDim: a.hidden, outDim: a.rowCount, yStride: a.ld, yOffset: a.colOffset ?? a.rowOffset };
}

export interface LseChunkArgs {
  /** f32 [rows, ld]: this chunk's logits at columns colOffset .. colOffset+cols. */
  logits: GPUBuffer;
  /** f32 [rows, 3] running (max, sumexp, target logit), scaled by `scale`. */
  stats: GPUBuffer;
  /** Optional u32 [rows]: vocab id whose logit to gather (ids outside every chunk leave -3e38). */
  targets?: GPUBuffer;
  rows: number;
  cols: number;
  ld: number;
  colOffset?: number;
  /** Vocab id of the chunk's first column (default 0). */
  vocabOffset?: number;
  /** True for the first chunk of a pass: overwrite stats instead of merging. */
  first: boolean;
  /** Multiplies logits before the softmax: 1/temperature. Default 1. */
  scale?: number;
}

/** Vocabulary chunks up to this many columns take the small-vocabulary kernel (each of its fold loops runs <= 4 times). */
export const LSE_SMALL_COLS = 4 * LSE_WG;

/**
 * Threads per row for a chunk of `cols` columns over `rows` rows; LSE_WG means the wide kernel. Every choice
 * gives the same bits. SwiftShader, 8 dispatches of 320 columns: 512 rows 2.2 s wide, 69 ms at 4 threads, 55 ms
 * at 1; 8 rows 32 ms wide, 2.7 ms at 1 or 4 (one thread per row leaves a workgroup's other lanes idle when
 * rows are few, hence 4 there).
 * Large vocabularies keep the wide kernel, whose 256 threads share a row's long fold.
 */
export function lseThreadsPerRow(rows: number, cols: number): number {
  if (cols > LSE_SMALL_COLS) return LSE_WG;
  return rows >= LSE_SMALL_WG ? 1 : 4;
}

/** Merges one vocabulary chunk of logits f32 [rows, ld] into stats f32 [rows, 3] (and gathers targets u32 [rows]). */
export async function lseChunk(ctx: GpuContext, a: LseChunkArgs): Promise<Dispatch> {
  const colOffset = a.colOffset ?? 0;
  const vocabOffset = a.vocabOffset ?? 0;
  checkDims('lseChunk', { rows: a.rows, cols: a.cols, ld: a.ld, colOffset, vocabOffset }, ['colOffset', 'vocabOffset']);
  if (colOffset + a.cols > a.ld) throw new Error(`lseChunk: colOffset ${colOffset} + cols ${a.cols} exceeds ld ${a.ld}`);
  const scale = a.scale ?? 1;
  if (!(scale > 0) || !Number.isFinite(scale)) throw new Error(`lseChunk: scale must be finite and > 0, got ${scale}`);
  const withTargets = !!a.targets;
  const T = lseThreadsPerRow(a.rows, a.cols);
  const name = `lse_chunk${T === LSE_WG ? '' : `_small${T}`}${withTargets ? '_targets' : ''}`;
  const pipeline = await getPipeline(ctx, name, T === LSE_WG ? lseChunkWgsl(withTargets) : lseChunkSmallWgsl(withTargets, T));
  const dims = paramsUniform(ctx, 'lseChunk.dims', [
    ['u32', a.rows],
    ['u32', a.cols],
    ['u32', a.ld],
    ['u32', colOffset],
    ['u32', vocabOffset],
    ['u32', a.first ? 1 : 0],
    ['f32', scale],
  ]);
  const buffers = [a.logits, a.stats, dims];
  if (a.targets) buffers.push(a.targets);
  const workgroups = T === LSE_WG ? a.rows : Math.ceil(a.rows / (LSE_SMALL_WG / T));
  return { pipeline, buffers, workgroups: grid1d(ctx, workgroups), label: 'lse_chunk' };
}

export interface LseFinalizeArgs {
  /** f32 [rows, 3] after every chunk was merged. */
  stats: GPUBuffer;
  /** f32 [rows] output: log-sum-exp over the vocabulary (saved for the backward). */
  lse: GPUBuffer;
  /** f32 [rows] output: logit[target] - lse. */
  logprob: GPUBuffer;
  rows: number;
}

/** lse[rows] = max + log(sumexp); logprob[rows] = target logit - lse, from stats f32 [rows, 3]. */
export async function lseFinalize(ctx: GpuContext, a: LseFinalizeArgs): Promise<Dispatch> {
  checkDims('lseFinalize', { rows: a.rows });
  const pipeline = await getPipeline(ctx, 'lse_finalize', lseFinalizeWgsl());
  const dims = paramsUniform(ctx, 'lseFinalize.count', [['u32', a.rows]]);
  return { pipeline, buffers: [a.stats, a.lse, a.logprob, dims], workgroups: grid1d(ctx, Math.ceil(a.rows / LSE_WG)), label: 'lse_finalize' };
}

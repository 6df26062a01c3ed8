// Split-K for the input gradient of a frozen linear, dx[n, in] (+)= dy[n, out] · W[out, in], when `out` is
// long and dx has few tiles: the LM head (n = 32 rows of dlogits, out = a vocabulary of 151,936, in = 896)
// makes 14 workgroups of 4-bit tiles (112 of f16 ones), each walking the whole vocabulary, on a GPU with
// 132 multiprocessors. Splitting `out` into slices gives each (tile, slice) its own workgroup; each writes
// its partial sum to `partials` [splits, n, in], and a second dispatch adds the slices in a fixed order.
// The same holds, less extremely, for the layers' gate and up backward over n = 512 rows (in = 896, out =
// 4864: 112 workgroups of 64 x 64). Grids already about a wave deep, or short reductions, stay plain.

import type { GpuContext } from '../../gpu/device';
import { getPipeline, grid1d, type Dispatch } from '../../gpu/pipelines';
import { checkDims, paramsUniform } from '../common/params';
import { SPLITK_REDUCE_WG, splitKReduceWgsl } from './matmul.splitk.wgsl';

/** At most this many slices: bounds the partials scratch (splitKPartialsBytes). */
export const SPLIT_K_MAX = 64;
/** Aim for about this many workgroups: several per multiprocessor on a 132-SM GPU, one wave or so. */
export const SPLIT_K_TARGET_WORKGROUPS = 1024;
/** A slice walks at least this many outputs, so writing and re-reading its partial tile stays small. */
export const SPLIT_K_MIN_SLICE = 512;

/** Bytes of a partials scratch that allows every split for up to n rows of width inDim (a smaller one caps the slices). */
export function splitKPartialsBytes(n: number, inDim: number): number {
  return SPLIT_K_MAX * n * inDim * 4;
}

/** Extra arguments of the split-K entry points (q4MatmulBackwardSplitK, matmulBackwardSplitK). */
export interface SplitKArgs {
  /**
   * f32 scratch, overwritten: up to splitKPartialsBytes(n, inDim) bytes are used; a smaller buffer (any
   * buffer dead during the call) caps the slices at the [n, inDim] blocks it holds. None: one dispatch.
   */
  partials?: GPUBuffer;
  /** Force a slice count (tests); default planSplitK's choice. 1 = the plain kernel. */
  splits?: number;
}

export interface SplitKPlan {
  /** Number of slices (1: the plain kernel). */
  splits: number;
  /** Outputs per slice, a multiple of `step` (the last slice may be shorter). */
  slice: number;
}

/**
 * How to split a reduction of `outDim` outputs walked in steps of `step` for a grid of `tiles` workgroups:
 * enough slices to reach SPLIT_K_TARGET_WORKGROUPS, none shorter than SPLIT_K_MIN_SLICE, at most `room`
 * (the slices the caller's partials buffer holds). `forced` (tests) asks for a slice count directly; the
 * plan may come out with fewer when slices round up to `step`.
 */
export function planSplitK(kernel: string, tiles: number, outDim: number, step: number, forced?: number, room = SPLIT_K_MAX): SplitKPlan {
  let want: number;
  if (forced !== undefined) {
    if (!Number.isInteger(forced) || forced < 1 || forced > SPLIT_K_MAX) throw new Error(`${kernel}: splits must be an integer in 1..${SPLIT_K_MAX}, got ${forced}`);
    want = forced;
  } else {
    want = Math.min(SPLIT_K_MAX, room, Math.ceil(SPLIT_K_TARGET_WORKGROUPS / tiles), Math.floor(outDim / SPLIT_K_MIN_SLICE));
  }
  if (want <= 1) return { splits: 1, slice: outDim };
  const slice = Math.ceil(outDim / want / step) * step;
  const splits = Math.ceil(outDim / slice);
  return splits <= 1 ? { splits: 1, slice: outDim } : { splits, slice };
}

/** Slices of [n, inDim] f32 that `partials` holds (0 without one). */
export function partialsRoom(partials: GPUBuffer | undefined, n: number, inDim: number): number {
  return partials ? Math.floor(partials.size / (n * inDim * 4)) : 0;
}

/** Throws, naming the kernel and the buffer, unless `partials` holds [splits, n, inDim] f32. */
export function checkPartials(kernel: string, partials: GPUBuffer | undefined, splits: number, n: number, inDim: number): GPUBuffer {
  if (!partials) throw new Error(`${kernel}: splitting the reduction in ${splits} needs a 'partials' scratch buffer (splitKPartialsBytes(${n}, ${inDim}) bytes)`);
  if (partials.size < splits * n * inDim * 4) {
    throw new Error(`${kernel}: partials ('${partials.label}', ${partials.size} B) is smaller than [${splits}, ${n}, ${inDim}] f32`);
  }
  return partials;
}

export interface SplitKReduceArgs {
  /** f32 [splits, n, inDim] from the split dispatch. */
  partials: GPUBuffer;
  /** f32 [n, inDim] out. */
  dx: GPUBuffer;
  n: number;
  inDim: number;
  splits: number;
  accumulate?: boolean;
}

/** dx (+)= sum over s of partials[s] (s ascending). */
export async function splitKReduce(ctx: GpuContext, a: SplitKReduceArgs): Promise<Dispatch> {
  checkDims('splitKReduce', { n: a.n, inDim: a.inDim, splits: a.splits });
  const count = a.n * a.inDim;
  checkPartials('splitKReduce', a.partials, a.splits, a.n, a.inDim);
  if (a.dx.size < count * 4) throw new Error(`splitKReduce: dx ('${a.dx.label}') is smaller than [${a.n}, ${a.inDim}] f32`);
  if (a.dx === a.partials) throw new Error('splitKReduce: partials and dx must be different buffers');
  const pipeline = await getPipeline(ctx, 'matmul_splitk_reduce', splitKReduceWgsl());
  const params = paramsUniform(ctx, 'splitKReduce.params', [['u32', count], ['u32', a.splits], ['u32', a.accumulate ? 1 : 0]]);
  return { pipeline, buffers: [a.partials, a.dx, params], workgroups: grid1d(ctx, Math.ceil(count / SPLITK_REDUCE_WG)), label: 'matmul_splitk_reduce' };
}

import type { GpuContext } from '../../gpu/device';
import type { Dispatch } from '../../gpu/pipelines';
import { ropeDispatch, type RopeArgs } from './rope';

/** RopeArgs with the gradients of the rotated q and k in their places, rotated back in place. */
export interface RopeBackwardArgs extends Omit<RopeArgs, 'q' | 'k'> {
  /** f32 [n, nH*hd] */
  dq: GPUBuffer;
  /** f32 [n, nKV*hd] */
  dk: GPUBuffer;
}

/** Inverse rotation in place on dq and dk (the same arguments as the forward `rope`). */
export function ropeBackward(ctx: GpuContext, a: RopeBackwardArgs): Promise<Dispatch> {
  if (a.dq.size < a.n * a.nHeads * a.headDim * 4) throw new Error(`ropeBackward: 'dq' ('${a.dq.label}') is smaller than [${a.n}, ${a.nHeads * a.headDim}] f32`);
  if (a.dk.size < a.n * a.nKvHeads * a.headDim * 4) throw new Error(`ropeBackward: 'dk' ('${a.dk.label}') is smaller than [${a.n}, ${a.nKvHeads * a.headDim}] f32`);
  if (a.pos.size < a.n * 4) throw new Error(`ropeBackward: 'pos' ('${a.pos.label}') holds fewer than ${a.n} positions`);
  return ropeDispatch(ctx, 'rope_backward', { ...a, q: a.dq, k: a.dk }, true);
}

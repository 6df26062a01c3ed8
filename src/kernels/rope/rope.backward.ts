import type { GpuContext } from '../../gpu/device';
import { getPipeline, grid1d, type Dispatch } from '../../gpu/pipelines';
import { checkDims, paramsUniform } from '../common/params';
import { ROPE_BWD_MAX_HALF, ROPE_BWD_WG, ropeBackwardWgsl } from './rope.backward.wgsl';
import { ropeInvFreq } from './rope';

export interface RopeBackwardArgs {
  /** f32 [n, nH*hd]: gradient of the rotated q, rotated back in place */
  dq: GPUBuffer;
  /** f32 [n, nKV*hd]: gradient of the rotated k, rotated back in place */
  dk: GPUBuffer;
  /** u32 [n] positions the forward used */
  pos: GPUBuffer;
  n: number;
  nHeads: number;
  nKvHeads: number;
  headDim: number;
  theta: number;
}

/** Inverse rotation in place on dq and dk (the same arguments as the forward `rope`). */
export async function ropeBackward(ctx: GpuContext, a: RopeBackwardArgs): Promise<Dispatch> {
  checkDims('ropeBackward', { n: a.n, nHeads: a.nHeads, nKvHeads: a.nKvHeads, headDim: a.headDim });
  if (a.headDim % 2 !== 0 || a.headDim / 2 > ROPE_BWD_MAX_HALF) throw new Error(`ropeBackward: headDim must be even and <= ${2 * ROPE_BWD_MAX_HALF}, got ${a.headDim}`);
  if (!(a.theta > 0)) throw new Error(`ropeBackward: theta must be > 0, got ${a.theta}`);
  if (a.dq.size < a.n * a.nHeads * a.headDim * 4) throw new Error(`ropeBackward: 'dq' ('${a.dq.label}') is smaller than [${a.n}, ${a.nHeads * a.headDim}] f32`);
  if (a.dk.size < a.n * a.nKvHeads * a.headDim * 4) throw new Error(`ropeBackward: 'dk' ('${a.dk.label}') is smaller than [${a.n}, ${a.nKvHeads * a.headDim}] f32`);
  if (a.pos.size < a.n * 4) throw new Error(`ropeBackward: 'pos' ('${a.pos.label}') holds fewer than ${a.n} positions`);
  const pipeline = await getPipeline(ctx, 'rope_backward', ropeBackwardWgsl());
  const table = new Float32Array(ROPE_BWD_MAX_HALF);
  table.set(ropeInvFreq(a.theta, a.headDim));
  const dims = paramsUniform(ctx, 'ropeBackward.dims', [['u32', a.n], ['u32', a.nHeads], ['u32', a.nKvHeads], ['u32', a.headDim]], table);
  const threads = a.n * (a.nHeads + a.nKvHeads) * (a.headDim / 2);
  return { pipeline, buffers: [a.dq, a.dk, a.pos, dims], workgroups: grid1d(ctx, Math.ceil(threads / ROPE_BWD_WG)), label: 'rope_backward' };
}

import type { GpuContext } from '../../gpu/device';
import { getPipeline, grid1d, type Dispatch } from '../../gpu/pipelines';
import { checkDims, paramsUniform } from '../common/params';
import { SWIGLU_WG, swigluWgsl } from './swiglu.wgsl';

export interface SwigluArgs {
  /** f32 [N, I]. */
  gate: GPUBuffer;
  /** f32 [N, I]. */
  up: GPUBuffer;
  /** f32 [N, I] output (a third buffer; gate and up are kept for the backward). */
  act: GPUBuffer;
  n: number;
  intermediate: number;
}

/** act[N, I] = silu(gate[N, I]) * up[N, I], all f32. */
export async function swiglu(ctx: GpuContext, a: SwigluArgs): Promise<Dispatch> {
  checkDims('swiglu', { n: a.n, intermediate: a.intermediate });
  const count = a.n * a.intermediate;
  const pipeline = await getPipeline(ctx, 'swiglu', swigluWgsl());
  const dims = paramsUniform(ctx, 'swiglu.count', [['u32', count]]);
  return { pipeline, buffers: [a.gate, a.up, a.act, dims], workgroups: grid1d(ctx, Math.ceil(count / SWIGLU_WG)), label: 'swiglu' };
}

import type { GpuContext } from '../../gpu/device';
import { getPipeline, grid1d, type Dispatch } from '../../gpu/pipelines';
import { checkDims, paramsUniform } from '../common/params';
import { RESIDUAL_WG, residualWgsl } from './residual.wgsl';

export interface ResidualArgs {
  /** f32 [count] (e.g. [N, H]), updated in place. */
  x: GPUBuffer;
  /** f32 [count], must be a different buffer. */
  y: GPUBuffer;
  /** Number of elements (N * H). */
  count: number;
}

/** x[N, H] += y[N, H], f32, in place. */
export async function residual(ctx: GpuContext, a: ResidualArgs): Promise<Dispatch> {
  checkDims('residual', { count: a.count });
  if (a.x === a.y) throw new Error('residual: x and y must be different buffers');
  const pipeline = await getPipeline(ctx, 'residual', residualWgsl());
  const dims = paramsUniform(ctx, 'residual.count', [['u32', a.count]]);
  return { pipeline, buffers: [a.x, a.y, dims], workgroups: grid1d(ctx, Math.ceil(a.count / RESIDUAL_WG)), label: 'residual' };
}

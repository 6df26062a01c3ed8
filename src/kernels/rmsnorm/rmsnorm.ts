import type { GpuContext } from '../../gpu/device';
import { getPipeline, grid1d, type Dispatch } from '../../gpu/pipelines';
import { checkDims, paramsUniform } from '../common/params';
import { rmsnormWgsl } from './rmsnorm.wgsl';

export interface RmsnormArgs {
  /** f32 [N, H] input (not modified). */
  x: GPUBuffer;
  /** f32 [H] norm weight. */
  w: GPUBuffer;
  /** f32 [N, H] output; must be a different buffer from x. */
  y: GPUBuffer;
  /** f32 [N] output: 1/sqrt(mean(x^2)+eps), saved for the backward. */
  rstd: GPUBuffer;
  n: number;
  hidden: number;
  /** rms_norm_eps from the model config. */
  eps: number;
}

/** RMSNorm: y[N,H] = x[N,H] * rstd[N] * w[H]; also writes rstd[N]. All f32. */
export async function rmsnorm(ctx: GpuContext, a: RmsnormArgs): Promise<Dispatch> {
  checkDims('rmsnorm', { n: a.n, hidden: a.hidden });
  if (!(a.eps >= 0)) throw new Error(`rmsnorm: eps must be >= 0, got ${a.eps}`);
  if (a.x === a.y) throw new Error('rmsnorm: x and y must be different buffers');
  const pipeline = await getPipeline(ctx, 'rmsnorm', rmsnormWgsl());
  const dims = paramsUniform(ctx, 'rmsnorm.dims', [['u32', a.n], ['u32', a.hidden], ['f32', a.eps]]);
  return { pipeline, buffers: [a.x, a.w, a.y, a.rstd, dims], workgroups: grid1d(ctx, a.n), label: 'rmsnorm' };
}

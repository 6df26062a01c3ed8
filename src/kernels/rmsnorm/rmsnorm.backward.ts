import type { GpuContext } from '../../gpu/device';
import { getPipeline, grid1d, type Dispatch } from '../../gpu/pipelines';
import { checkDims, paramsUniform } from '../common/params';
import { rmsnormBackwardWgsl } from './rmsnorm.backward.wgsl';

export interface RmsnormBackwardArgs {
  /** f32 [n, h] gradient of the norm's output */
  dy: GPUBuffer;
  /** f32 [n, h] the norm's input */
  x: GPUBuffer;
  /** f32 [h] frozen norm weight */
  w: GPUBuffer;
  /** f32 [n] saved by the forward */
  rstd: GPUBuffer;
  /** f32 [n, h] out */
  dx: GPUBuffer;
  n: number;
  hidden: number;
  /** add into dx (the residual gradient already there) instead of overwriting; default false */
  accumulate?: boolean;
}

export async function rmsnormBackward(ctx: GpuContext, a: RmsnormBackwardArgs): Promise<Dispatch> {
  checkDims('rmsnormBackward', { n: a.n, hidden: a.hidden });
  for (const [k, count] of [['dy', a.n * a.hidden], ['x', a.n * a.hidden], ['w', a.hidden], ['rstd', a.n], ['dx', a.n * a.hidden]] as const) {
    if (a[k].size < count * 4) throw new Error(`rmsnormBackward: '${k}' ('${a[k].label}') holds ${a[k].size / 4} floats, needs ${count}`);
  }
  const pipeline = await getPipeline(ctx, 'rmsnorm_backward', rmsnormBackwardWgsl());
  const params = paramsUniform(ctx, 'rmsnormBackward.params', [['u32', a.n], ['u32', a.hidden], ['u32', a.accumulate ? 1 : 0]]);
  return { pipeline, buffers: [a.dy, a.x, a.w, a.rstd, a.dx, params], workgroups: grid1d(ctx, a.n), label: 'rmsnorm_backward' };
}

import type { GpuContext } from '../../gpu/device';
import { getPipeline, grid1d, type Dispatch } from '../../gpu/pipelines';
import { checkDims, paramsUniform } from '../common/params';
import { SWIGLU_BWD_WG, swigluBackwardWgsl } from './swiglu.backward.wgsl';

export interface SwigluBackwardArgs {
  /** f32 [n, I] gradient of act */
  dact: GPUBuffer;
  /** f32 [n, I] saved gate projection */
  gate: GPUBuffer;
  /** f32 [n, I] saved up projection */
  up: GPUBuffer;
  /** f32 [n, I] out */
  dgate: GPUBuffer;
  /** f32 [n, I] out */
  dup: GPUBuffer;
  n: number;
  intermediate: number;
}

export async function swigluBackward(ctx: GpuContext, a: SwigluBackwardArgs): Promise<Dispatch> {
  checkDims('swigluBackward', { n: a.n, intermediate: a.intermediate });
  const count = a.n * a.intermediate;
  for (const k of ['dact', 'gate', 'up', 'dgate', 'dup'] as const) {
    if (a[k].size < count * 4) throw new Error(`swigluBackward: '${k}' ('${a[k].label}') holds ${a[k].size / 4} floats, needs ${count}`);
  }
  const pipeline = await getPipeline(ctx, 'swiglu_backward', swigluBackwardWgsl());
  const params = paramsUniform(ctx, 'swigluBackward.params', [['u32', count]]);
  return {
    pipeline,
    buffers: [a.dact, a.gate, a.up, a.dgate, a.dup, params],
    workgroups: grid1d(ctx, Math.ceil(count / SWIGLU_BWD_WG)),
    label: 'swiglu_backward',
  };
}

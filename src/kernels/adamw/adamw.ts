import type { GpuContext } from '../../gpu/device';
import { writeBuffer } from '../../gpu/buffers';
import { getPipeline, grid1d, type Dispatch } from '../../gpu/pipelines';
import { checkDims, paramsUniform } from '../common/params';
import { ADAMW_HYPER_FLOATS, ADAMW_WG, adamwWgsl } from './adamw.wgsl';
import type { AdamwHyper } from './adamw.ref';

export type { AdamwHyper } from './adamw.ref';
export { ADAMW_HYPER_FLOATS } from './adamw.wgsl';

/** Bytes of the `hyper` storage buffer the caller allocates (createStorage). */
export const ADAMW_HYPER_BYTES = ADAMW_HYPER_FLOATS * 4;

/** Writes this step's hyper-parameters (step t starts at 1) into `hyper`; call before each step. */
export function writeAdamwHyper(ctx: GpuContext, hyper: GPUBuffer, h: AdamwHyper, step: number): void {
  if (!Number.isInteger(step) || step < 1) throw new Error(`adamw: 'step' must be an integer >= 1, got ${step}`);
  for (const k of ['lr', 'beta1', 'beta2', 'eps', 'weightDecay'] as const) {
    if (!Number.isFinite(h[k]) || h[k] < 0) throw new Error(`adamw: '${k}' must be a finite number >= 0, got ${h[k]}`);
  }
  if (h.beta1 >= 1 || h.beta2 >= 1) throw new Error(`adamw: betas must be < 1, got ${h.beta1}, ${h.beta2}`);
  const a = new Float32Array(ADAMW_HYPER_FLOATS);
  a.set([h.lr, h.beta1, h.beta2, h.eps, h.weightDecay, 1 - h.beta1 ** step, 1 - h.beta2 ** step]);
  writeBuffer(ctx, hyper, a);
}

export interface AdamwArgs {
  /** f32 [count] parameter, updated in place */
  p: GPUBuffer;
  /** f32 [count] gradient */
  g: GPUBuffer;
  /** f32 [count] first moment (zero-initialised by the owner) */
  m: GPUBuffer;
  /** f32 [count] second moment (zero-initialised by the owner) */
  v: GPUBuffer;
  /** f32 buffer holding the gradient scale at `scaleIndex` (reduce's `out`, CLIP_SCALE_INDEX) */
  clip: GPUBuffer;
  scaleIndex: number;
  /** f32 [ADAMW_HYPER_FLOATS] written by writeAdamwHyper */
  hyper: GPUBuffer;
  count: number;
}

export async function adamw(ctx: GpuContext, a: AdamwArgs): Promise<Dispatch> {
  checkDims('adamw', { count: a.count, scaleIndex: a.scaleIndex }, ['scaleIndex']);
  for (const k of ['p', 'g', 'm', 'v'] as const) {
    if (a[k].size < a.count * 4) throw new Error(`adamw: '${k}' ('${a[k].label}') holds ${a[k].size / 4} floats, needs ${a.count}`);
  }
  if (a.clip.size < (a.scaleIndex + 1) * 4) throw new Error(`adamw: 'clip' ('${a.clip.label}') has no element ${a.scaleIndex}`);
  if (a.hyper.size < ADAMW_HYPER_BYTES) throw new Error(`adamw: 'hyper' ('${a.hyper.label}') must hold ${ADAMW_HYPER_FLOATS} floats`);
  const pipeline = await getPipeline(ctx, 'adamw', adamwWgsl());
  const params = paramsUniform(ctx, 'adamw.params', [['u32', a.count], ['u32', a.scaleIndex]]);
  return {
    pipeline,
    buffers: [a.p, a.g, a.m, a.v, a.clip, a.hyper, params],
    workgroups: grid1d(ctx, Math.ceil(a.count / ADAMW_WG)),
    label: 'adamw',
  };
}

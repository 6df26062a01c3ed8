import type { GpuContext } from '../../gpu/device';
import { getPipeline, grid1d, type Dispatch } from '../../gpu/pipelines';
import { checkDims, paramsUniform } from '../common/params';
import { LORA_BWD_WG, loraGradAWgsl, loraGradBWgsl, loraGradTWgsl, loraGradXWgsl } from './lora.backward.wgsl';

export interface LoraBackwardArgs {
  /** f32 [n, inDim]: the input of the adapted linear (saved activation) */
  x: GPUBuffer;
  /** f32 [n, rank]: x A^T saved by the forward */
  t: GPUBuffer;
  /** f32 [rank, inDim] */
  A: GPUBuffer;
  /** f32 [outDim, rank] */
  B: GPUBuffer;
  /** f32 [n, outDim]: gradient of the linear's output */
  dy: GPUBuffer;
  /** f32 [rank, inDim], accumulated (+=) */
  dA: GPUBuffer;
  /** f32 [outDim, rank], accumulated (+=) */
  dB: GPUBuffer;
  /** f32 [n, rank] scratch, overwritten */
  dt: GPUBuffer;
  /** f32 [n, inDim], accumulated (+=): run after the frozen linear's matmulBackward wrote its part */
  dx: GPUBuffer;
  n: number;
  inDim: number;
  outDim: number;
  rank: number;
  /** LoRA scale (alpha/r, or alpha/sqrt(r) with rslora) */
  scale: number;
}

/** The four LoRA backward dispatches, in the order they must run. */
export async function loraBackward(ctx: GpuContext, a: LoraBackwardArgs): Promise<Dispatch[]> {
  checkDims('loraBackward', { n: a.n, inDim: a.inDim, outDim: a.outDim, rank: a.rank });
  if (!Number.isFinite(a.scale)) throw new Error(`loraBackward: 'scale' must be finite, got ${a.scale}`);
  const need: Array<[keyof LoraBackwardArgs, number]> = [
    ['x', a.n * a.inDim], ['t', a.n * a.rank], ['A', a.rank * a.inDim], ['B', a.outDim * a.rank], ['dy', a.n * a.outDim],
    ['dA', a.rank * a.inDim], ['dB', a.outDim * a.rank], ['dt', a.n * a.rank], ['dx', a.n * a.inDim],
  ];
  for (const [k, count] of need) {
    const b = a[k] as GPUBuffer;
    if (b.size < count * 4) throw new Error(`loraBackward: '${k}' ('${b.label}') holds ${b.size / 4} floats, needs ${count}`);
  }
  const params = paramsUniform(ctx, 'loraBackward.params', [['u32', a.n], ['u32', a.inDim], ['u32', a.outDim], ['u32', a.rank], ['f32', a.scale]]);
  const [pB, pT, pA, pX] = await Promise.all([
    getPipeline(ctx, 'lora_backward_dB', loraGradBWgsl()),
    getPipeline(ctx, 'lora_backward_dt', loraGradTWgsl()),
    getPipeline(ctx, 'lora_backward_dA', loraGradAWgsl()),
    getPipeline(ctx, 'lora_backward_dx', loraGradXWgsl()),
  ]);
  const per = (count: number) => grid1d(ctx, Math.ceil(count / LORA_BWD_WG));
  return [
    { pipeline: pB, buffers: [a.dy, a.t, a.dB, params], workgroups: per(a.outDim * a.rank), label: 'lora_backward_dB' },
    { pipeline: pT, buffers: [a.dy, a.B, a.dt, params], workgroups: grid1d(ctx, a.n * a.rank), label: 'lora_backward_dt' },
    { pipeline: pA, buffers: [a.dt, a.x, a.dA, params], workgroups: per(a.rank * a.inDim), label: 'lora_backward_dA' },
    { pipeline: pX, buffers: [a.dt, a.A, a.dx, params], workgroups: per(a.n * a.inDim), label: 'lora_backward_dx' },
  ];
}

import type { GpuContext } from '../../gpu/device';
import { getPipeline, grid1d, type Dispatch } from '../../gpu/pipelines';
import { checkDims, paramsUniform } from '../common/params';
import { loraDownShape, loraDownSlices, loraDownWgsl, loraDownWorkgroups, loraUpWgsl, loraUpWorkgroups } from './lora.wgsl';

export interface LoraDownArgs {
  /** f32 [N, in] layer input (the same x the base matmul reads). */
  x: GPUBuffer;
  /** f32 [r, in] (PEFT lora_A.weight). */
  A: GPUBuffer;
  /** f32 [N, r] output, saved for the backward. */
  t: GPUBuffer;
  n: number;
  inDim: number;
  rank: number;
  /** Use subgroup reductions where the device has `subgroups` (default true; tests turn it off). */
  subgroups?: boolean;
}

export interface LoraUpArgs {
  /** f32 [N, r] from loraDown. */
  t: GPUBuffer;
  /** f32 [out, r] (PEFT lora_B.weight). */
  B: GPUBuffer;
  /** f32 [N, out], accumulated into: y += scale * t B^T. */
  y: GPUBuffer;
  n: number;
  outDim: number;
  rank: number;
  /** alpha / r (or alpha / sqrt(r) with rslora). */
  scale: number;
}

/** t[N, r] = x[N, in] · A^T with A f32 [r, in]. */
export async function loraDown(ctx: GpuContext, a: LoraDownArgs): Promise<Dispatch> {
  checkDims('loraDown', { n: a.n, inDim: a.inDim, rank: a.rank });
  const shape = loraDownShape(a.n);
  const sg = a.subgroups !== false && ctx.caps.subgroups;
  // The label stays 'lora_down' (profiles count kinds by label); the pipeline name tells the variants apart.
  const pipeline = await getPipeline(ctx, `lora_down_${shape.rows}x${shape.ranks}${sg ? '_sg' : ''}`, loraDownWgsl(shape, sg));
  const dims = paramsUniform(ctx, 'loraDown.dims', [['u32', a.n], ['u32', a.inDim], ['u32', a.rank], ['u32', loraDownSlices(shape, [a.rank])]]);
  return { pipeline, buffers: [a.x, a.A, a.t, dims], workgroups: grid1d(ctx, loraDownWorkgroups(shape, a.n, [a.rank])), label: 'lora_down' };
}

/** y[N, out] += scale · t[N, r] · B^T with B f32 [out, r]. */
export async function loraUp(ctx: GpuContext, a: LoraUpArgs): Promise<Dispatch> {
  checkDims('loraUp', { n: a.n, outDim: a.outDim, rank: a.rank });
  if (!Number.isFinite(a.scale)) throw new Error(`loraUp: scale must be finite, got ${a.scale}`);
  const pipeline = await getPipeline(ctx, 'lora_up', loraUpWgsl());
  const dims = paramsUniform(ctx, 'loraUp.dims', [['u32', a.n], ['u32', a.outDim], ['u32', a.rank], ['f32', a.scale]]);
  return { pipeline, buffers: [a.t, a.B, a.y, dims], workgroups: grid1d(ctx, loraUpWorkgroups(a.n, [a.outDim])), label: 'lora_up' };
}

/**
 * Both LoRA dispatches, in order: t[N, r] = x[N, in] A^T (A f32 [r, in]); y[N, out] += scale · t B^T
 * (B f32 [out, r]). Encode after the base matmul that wrote y.
 */
export async function lora(ctx: GpuContext, a: Omit<LoraDownArgs, 'x'> & Omit<LoraUpArgs, 't'> & { x: GPUBuffer }): Promise<Dispatch[]> {
  return [await loraDown(ctx, a), await loraUp(ctx, a)];
}

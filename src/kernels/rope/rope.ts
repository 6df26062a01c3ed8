import type { GpuContext } from '../../gpu/device';
import { getPipeline, grid1d, type Dispatch } from '../../gpu/pipelines';
import { checkDims, paramsUniform } from '../common/params';
import { ROPE_MAX_HALF, ROPE_WG, ropeWgsl } from './rope.wgsl';

export interface RopeArgs {
  /** f32 [N, nH*hd], rotated in place. */
  q: GPUBuffer;
  /** f32 [N, nKV*hd], rotated in place (the rows about to be written to / already in the KV cache slot). */
  k: GPUBuffer;
  /** u32 [N] position of each row. */
  pos: GPUBuffer;
  n: number;
  nHeads: number;
  nKvHeads: number;
  headDim: number;
  /** rope_theta from the model config. */
  theta: number;
}

/** inv_freq[i] = theta^(-2i/hd), float64 on the CPU then rounded to f32 (the kernel's table). */
export function ropeInvFreq(theta: number, headDim: number): Float32Array {
  const half = headDim / 2;
  const out = new Float32Array(half);
  for (let i = 0; i < half; i++) out[i] = Math.pow(theta, (-2 * i) / headDim);
  return out;
}

/** In-place rotate-half RoPE on q f32 [N, nH*hd] and k f32 [N, nKV*hd] at positions pos u32 [N]. */
export function rope(ctx: GpuContext, a: RopeArgs): Promise<Dispatch> {
  return ropeDispatch(ctx, 'rope', a, false);
}

/** Shared by the forward and the backward (`inverse`: rotation by -angle, in place on the gradients). */
export async function ropeDispatch(ctx: GpuContext, name: string, a: RopeArgs, inverse: boolean): Promise<Dispatch> {
  checkDims(name, { n: a.n, nHeads: a.nHeads, nKvHeads: a.nKvHeads, headDim: a.headDim });
  if (a.headDim % 2 !== 0 || a.headDim / 2 > ROPE_MAX_HALF) throw new Error(`${name}: headDim must be even and <= ${2 * ROPE_MAX_HALF}, got ${a.headDim}`);
  if (!(a.theta > 0)) throw new Error(`${name}: theta must be > 0, got ${a.theta}`);
  const pipeline = await getPipeline(ctx, name, ropeWgsl(inverse));
  const table = new Float32Array(ROPE_MAX_HALF);
  table.set(ropeInvFreq(a.theta, a.headDim));
  const dims = paramsUniform(ctx, `${name}.dims`, [['u32', a.n], ['u32', a.nHeads], ['u32', a.nKvHeads], ['u32', a.headDim]], table);
  const threads = a.n * (a.nHeads + a.nKvHeads) * (a.headDim / 2);
  return { pipeline, buffers: [a.q, a.k, a.pos, dims], workgroups: grid1d(ctx, Math.ceil(threads / ROPE_WG)), label: name };
}

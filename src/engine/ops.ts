// The kernel calls the forward pass makes, in the engine's vocabulary. Each wraps one dispatch builder
// from src/kernels/<op>/ (which own the WGSL and the layouts of LAYOUTS.md); this file only maps names.
import type { GpuContext } from '../gpu/device';
import type { Dispatch } from '../gpu/pipelines';
import { embedding } from '../kernels/embedding/embedding';
import { rmsnorm as rmsnormKernel } from '../kernels/rmsnorm/rmsnorm';
import { matmul, type MatmulArgs } from '../kernels/matmul/matmul';
import { loraDown, loraUp } from '../kernels/lora/lora';
export { rope } from '../kernels/rope/rope';
export { attention } from '../kernels/attention/attention';
export { swiglu } from '../kernels/swiglu/swiglu';
export { lseChunk, lseFinalize } from '../kernels/logits/logits';
import type { Qwen2Weights } from './weights';

/** x[n] = embed[ids[n]], one dispatch per embedding chunk. */
export async function embed(ctx: GpuContext, w: Qwen2Weights, ids: GPUBuffer, x: GPUBuffer, n: number): Promise<Dispatch[]> {
  const out: Dispatch[] = [];
  for (const ch of w.embed) {
    out.push(await embedding(ctx, { E: ch.buffer, ids, x, n, hidden: w.config.hiddenSize, vocab: w.config.vocabSize, rowOffset: ch.rowOffset, rowCount: ch.rowCount }));
  }
  return out;
}

export function rmsnorm(ctx: GpuContext, x: GPUBuffer, w: GPUBuffer, y: GPUBuffer, rstd: GPUBuffer, n: number, hidden: number, eps: number): Promise<Dispatch> {
  return rmsnormKernel(ctx, { x, w, y, rstd, n, hidden, eps });
}

export function linear(ctx: GpuContext, a: MatmulArgs): Promise<Dispatch> {
  return matmul(ctx, a);
}

export interface LoraOpArgs {
  x: GPUBuffer;
  A: GPUBuffer;
  B: GPUBuffer;
  t: GPUBuffer;
  y: GPUBuffer;
  n: number;
  inDim: number;
  outDim: number;
  r: number;
  scale: number;
}

/** t = x A^T; y += scale * t B^T. */
export async function lora(ctx: GpuContext, a: LoraOpArgs): Promise<Dispatch[]> {
  return [
    await loraDown(ctx, { x: a.x, A: a.A, t: a.t, n: a.n, inDim: a.inDim, rank: a.r }),
    await loraUp(ctx, { t: a.t, B: a.B, y: a.y, n: a.n, outDim: a.outDim, rank: a.r, scale: a.scale }),
  ];
}

import type { GpuContext } from '../../gpu/device';
import { createUniform } from '../../gpu/buffers';
import { getPipeline, grid1d, type Dispatch } from '../../gpu/pipelines';
import { matvecWgsl } from './matvec.wgsl';

export interface MatvecArgs {
  /** f16 bits, [rows, cols] row-major. */
  W: GPUBuffer;
  x: GPUBuffer;
  y: GPUBuffer;
  rows: number;
  cols: number;
}

export async function matvec(ctx: GpuContext, a: MatvecArgs): Promise<Dispatch> {
  const pipeline = await getPipeline(ctx, `matvec_${ctx.caps.f16 ? 'f16' : 'packed'}`, matvecWgsl({ f16: ctx.caps.f16 }));
  const dims = createUniform(ctx, 'matvec.dims', new Uint32Array([a.rows, a.cols]));
  return { pipeline, buffers: [a.W, a.x, a.y, dims], workgroups: grid1d(ctx, a.rows) };
}

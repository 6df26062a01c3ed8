import type { GpuContext } from '../../gpu/device';
import { getPipeline, grid1d, type Dispatch } from '../../gpu/pipelines';
import { paramsUniform } from '../common/params';
import { q4PathName } from './q4.wgsl';
import { Q4_DEQUANT_WG, q4DequantWgsl } from './q4dequant.wgsl';
import { checkQ4Weight, q4Path, type Q4Weight } from './q4weight';

/**
 * out (f16 [rows, inDim], the caller's buffer) = deq(W) for all `rows` rows of W's buffers (rowBase ignored:
 * the copy serves every window of a fused matrix). One dispatch; needs native f16.
 */
export async function q4DequantF16(ctx: GpuContext, W: Q4Weight, rows: number, inDim: number, out: GPUBuffer): Promise<Dispatch> {
  checkQ4Weight('q4DequantF16', { ...W, rowBase: 0 }, inDim, rows);
  const p = q4Path(ctx, W);
  if (!p.f16) throw new Error(`q4DequantF16 ('${out.label}'): the device has no shader-f16`);
  if (out.size < rows * inDim * 2) throw new Error(`q4DequantF16: out ('${out.label}', ${out.size} B) is smaller than [${rows}, ${inDim}] f16`);
  const words = (rows * inDim) / 8;
  const pipeline = await getPipeline(ctx, `q4_dequant_${q4PathName(p)}`, q4DequantWgsl(p));
  const dims = paramsUniform(ctx, 'q4DequantF16.dims', [['u32', words], ['u32', inDim]]);
  return { pipeline, buffers: [W.qWeight, W.qScale, out, dims], workgroups: grid1d(ctx, Math.ceil(words / Q4_DEQUANT_WG)), label: 'q4_dequant' };
}

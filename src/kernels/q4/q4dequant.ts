import type { GpuContext } from '../../gpu/device';
import { createStorageChecked } from '../../gpu/buffers';
import { getPipeline, grid1d, submitDispatches } from '../../gpu/pipelines';
import { paramsUniform } from '../common/params';
import { q4PathName } from './q4.wgsl';
import { Q4_DEQUANT_WG, q4DequantWgsl } from './q4dequant.wgsl';
import { checkQ4Weight, q4Path, type Q4Weight } from './q4weight';

/**
 * A new f16 [rows, inDim] buffer holding deq(W) for all `rows` rows of W's buffers (rowBase ignored: the copy
 * serves every window of a fused matrix), filled on the GPU by one submitted dispatch. Needs native f16.
 */
export async function q4DequantF16(ctx: GpuContext, label: string, W: Q4Weight, rows: number, inDim: number): Promise<GPUBuffer> {
  checkQ4Weight('q4DequantF16', { ...W, rowBase: 0 }, inDim, rows);
  const p = q4Path(ctx, W);
  if (!p.f16) throw new Error(`q4DequantF16 ('${label}'): the device has no shader-f16`);
  const words = (rows * inDim) / 8;
  const out = await createStorageChecked(ctx, label, rows * inDim * 2);
  const pipeline = await getPipeline(ctx, `q4_dequant_${q4PathName(p)}`, q4DequantWgsl(p));
  const dims = paramsUniform(ctx, 'q4DequantF16.dims', [['u32', words], ['u32', inDim]]);
  submitDispatches(ctx, [{ pipeline, buffers: [W.qWeight, W.qScale, out, dims], workgroups: grid1d(ctx, Math.ceil(words / Q4_DEQUANT_WG)), label: 'q4_dequant' }]);
  dims.destroy();
  return out;
}

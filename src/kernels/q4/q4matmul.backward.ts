import type { GpuContext } from '../../gpu/device';
import { getPipeline, type Dispatch } from '../../gpu/pipelines';
import { checkDims, paramsUniform } from '../common/params';
import type { MatmulBackwardArgs } from '../matmul/matmul.backward';
import { q4PathName } from './q4.wgsl';
import { checkTileRows, tileGrid, tileRowsFor, type TileRows } from '../common/tile.wgsl';
import { q4MatmulBackwardWgsl } from './q4matmul.backward.wgsl';
import { checkQ4Weight, q4Path, type Q4Weight } from './q4weight';

/** MatmulBackwardArgs with a frozen 4-bit W. */
export interface Q4MatmulBackwardArgs extends Omit<MatmulBackwardArgs, 'W'> {
  /** 4-bit [rowOffset + outDim (at least), inDim] (rows counted from W.rowBase). */
  W: Q4Weight;
  /** dx rows per workgroup: 16, 32 or 64 (default tileRowsFor(n)); every shape gives the same bits. */
  tileRows?: TileRows;
}

/** dx (+)= dy · deq(W)[rowOffset .. rowOffset+outDim, :]. Buffers: dy f32 [n, dyStride], dx f32 [n, inDim]. */
export async function q4MatmulBackward(ctx: GpuContext, a: Q4MatmulBackwardArgs): Promise<Dispatch> {
  const rowOffset = a.rowOffset ?? 0;
  const dyStride = a.dyStride ?? a.outDim;
  const dyOffset = a.dyOffset ?? 0;
  checkDims('q4MatmulBackward', { n: a.n, inDim: a.inDim, outDim: a.outDim, rowOffset, dyStride, dyOffset }, ['rowOffset', 'dyOffset']);
  checkQ4Weight('q4MatmulBackward', a.W, a.inDim, a.outDim, rowOffset);
  if (dyOffset + a.outDim > dyStride) throw new Error(`q4MatmulBackward: dyOffset ${dyOffset} + outDim ${a.outDim} exceeds dyStride ${dyStride}`);
  if (a.dy.size < a.n * dyStride * 4) throw new Error(`q4MatmulBackward: dy ('${a.dy.label}') is smaller than [${a.n}, ${dyStride}] f32`);
  if (a.dx.size < a.n * a.inDim * 4) throw new Error(`q4MatmulBackward: dx ('${a.dx.label}') is smaller than [${a.n}, ${a.inDim}] f32`);
  if (a.dx === a.dy) throw new Error('q4MatmulBackward: dy and dx must be different buffers');
  const tileRows = checkTileRows('q4MatmulBackward', a.tileRows ?? tileRowsFor(a.n));
  const workgroups = tileGrid('q4MatmulBackward', a.n, a.inDim, tileRows, ctx.caps.limits.maxComputeWorkgroupsPerDimension);
  const p = q4Path(ctx, a.W);
  const name = `q4_matmul_backward${tileRows !== 64 ? tileRows : ''}_${q4PathName(p)}`;
  const pipeline = await getPipeline(ctx, name, q4MatmulBackwardWgsl(p, tileRows));
  const params = paramsUniform(ctx, 'q4MatmulBackward.params', [
    ['u32', a.n], ['u32', a.inDim], ['u32', a.outDim], ['u32', (a.W.rowBase ?? 0) + rowOffset], ['u32', a.accumulate ? 1 : 0], ['u32', dyStride], ['u32', dyOffset],
  ]);
  return { pipeline, buffers: [a.W.qWeight, a.W.qScale, a.dy, a.dx, params], workgroups, label: name };
}

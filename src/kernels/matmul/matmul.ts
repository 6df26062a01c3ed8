import type { GpuContext } from '../../gpu/device';
import { getPipeline, grid1d, type Dispatch } from '../../gpu/pipelines';
import { checkDims, paramsUniform } from '../common/params';
import { checkTileRows, tileGrid, tileRowsFor, type TileRows } from '../common/tile.wgsl';
import { SMALL_N, TILE_K, matmulRowsWgsl, matmulTiledWgsl } from './matmul.wgsl';

export interface MatmulArgs {
  /** f32 [N, in] input rows. */
  x: GPUBuffer;
  /** f16 bits [out, in] (HF layout, y = x W^T). May be a row chunk of a larger matrix. */
  W: GPUBuffer;
  /** f32 output; row n, column o is at y[n * yStride + yOffset + o]. Must differ from x. */
  y: GPUBuffer;
  /** Optional f32 [out] bias. */
  bias?: GPUBuffer;
  n: number;
  inDim: number;
  outDim: number;
  /** y += result instead of y = result (residual fusion). */
  accumulate?: boolean;
  /** Row stride of y in elements (default outDim). */
  yStride?: number;
  /** Column offset in y (default 0): lets a vocabulary chunk land at its columns of [rows, V] logits. */
  yOffset?: number;
  /** Force a kernel (tests); default: 'rows' for N <= 4, 'tiled' (in tileRowsFor(N)-row tiles) otherwise. */
  kernel?: 'tiled' | 'rows';
  /**
   * Output rows per workgroup of the tiled kernel: 16, 32, 64 or 128 (default tileRowsFor(n)). Every shape
   * gives bit-identical results; this only changes how much of each tile is padding.
   */
  tileRows?: TileRows;
  /** Use the subgroup reduction in the rows kernel where the device has `subgroups` (default true). */
  subgroups?: boolean;
}

/**
 * y[N, out] (+)= x[N, in] · W^T + b. Buffers: x f32 [N, in], W f16 [out, in], b f32 [out],
 * y f32 [N, yStride] written at columns yOffset .. yOffset+out.
 */
export async function matmul(ctx: GpuContext, a: MatmulArgs): Promise<Dispatch> {
  const yStride = a.yStride ?? a.outDim;
  const yOffset = a.yOffset ?? 0;
  checkDims('matmul', { n: a.n, inDim: a.inDim, outDim: a.outDim, yStride, yOffset }, ['yOffset']);
  if (yOffset + a.outDim > yStride) throw new Error(`matmul: yOffset ${yOffset} + outDim ${a.outDim} exceeds yStride ${yStride}`);
  if (a.x === a.y) throw new Error('matmul: x and y must be different buffers');
  const kernel = a.kernel ?? (a.n <= SMALL_N ? 'rows' : 'tiled');
  if (kernel === 'rows' && a.n > SMALL_N) throw new Error(`matmul: the rows kernel handles N <= ${SMALL_N}, got ${a.n}`);
  const variant = { bias: !!a.bias, accumulate: !!a.accumulate, subgroups: kernel === 'rows' && ctx.caps.subgroups && a.subgroups !== false };
  const maxStorage = ctx.caps.limits.maxComputeWorkgroupStorageSize;
  const tileRows = checkTileRows('matmul', a.tileRows ?? tileRowsFor(a.n, { cols: a.outDim, k: TILE_K, maxStorage }), TILE_K, maxStorage);
  const p = { f16: ctx.caps.f16 };
  const shape = kernel === 'tiled' && tileRows !== 64 ? String(tileRows) : '';
  const name = `matmul_${kernel}${shape}_${p.f16 ? 'f16' : 'packed'}${variant.bias ? '_bias' : ''}${variant.accumulate ? '_acc' : ''}${variant.subgroups ? '_sg' : ''}`;
  const code = kernel === 'tiled' ? matmulTiledWgsl(p, variant, tileRows) : matmulRowsWgsl(p, variant);
  const pipeline = await getPipeline(ctx, name, code);
  const dims = paramsUniform(ctx, 'matmul.dims', [['u32', a.n], ['u32', a.inDim], ['u32', a.outDim], ['u32', yStride], ['u32', yOffset]]);
  const buffers = [a.W, a.x, a.y, dims];
  if (a.bias) buffers.push(a.bias);
  const workgroups =
    kernel === 'tiled' ? tileGrid('matmul', a.n, a.outDim, tileRows, ctx.caps.limits.maxComputeWorkgroupsPerDimension) : grid1d(ctx, a.outDim);
  return { pipeline, buffers, workgroups, label: name };
}

import type { GpuContext } from '../../gpu/device';
import { getPipeline, grid1d, type Dispatch } from '../../gpu/pipelines';
import { checkDims, paramsUniform } from '../common/params';
import type { MatmulArgs } from '../matmul/matmul';
import { q4PathName } from './q4.wgsl';
import { checkTileRows, tileGrid, tileRowsFor } from '../common/tile.wgsl';
import { Q4_ROWS, Q4_ROWS_CHOICES, Q4_SMALL_N, Q4_TILE_K, q4RowsWgsl, q4TiledWgsl } from './q4matmul.wgsl';
import { checkQ4Weight, q4Path, type Q4Weight } from './q4weight';
import { q4SgmWgsl } from './q4matmul.sgm.wgsl';
import { SGM_MIN_ROWS, SGM_BLOCK_ROWS, sgmGeometry, sgmGrid, sgmProblem } from '../common/sgm-tile.wgsl';

/** MatmulArgs with a 4-bit W: swapping an f16 linear for a q4 one changes only `W`. */
export interface Q4MatmulArgs extends Omit<MatmulArgs, 'W'> {
  /** 4-bit [out, in] (HF layout, y = x W^T); `in` must be a multiple of 32. */
  W: Q4Weight;
  /** Use the subgroup reduction in the rows kernel when the device has it (default true; tests turn it off). */
  subgroups?: boolean;
  /** Output rows per workgroup of the rows kernel (tuning; one of Q4_ROWS_CHOICES, default Q4_ROWS = 16). */
  rowsPerWorkgroup?: number;
  /**
   * Take the subgroup-matrix kernel (q4matmul.sgm.wgsl.ts) where the device was made with it
   * (caps.subgroupMatrix), n >= SGM_MIN_ROWS and no kernel or tileRows is forced (default true).
   */
  subgroupMatrix?: boolean;
}

/**
 * y[N, out] (+)= x[N, in] · deq(W)^T + b. Buffers: x f32 [N, in], W q_weight u32 [out, in/8] + q_scale
 * [out, in/32], b f32 [out], y f32 [N, yStride] written at columns yOffset .. yOffset+out.
 * Decode (N <= Q4_SMALL_N = 8) uses the rows kernel (each weight word read once for all N rows), else the tiled one in
 * tileRowsFor(N)-row tiles (128 rows only where the device grants its 24 KiB of workgroup memory; all tile
 * shapes add each output up in the same order). Where the device was made with subgroup matrices (Node's default where offered,
 * src/gpu/device.ts) and N >= SGM_MIN_ROWS, the tensor-core kernel instead (f16-rounded operands, f32 sums).
 */
export async function q4Matmul(ctx: GpuContext, a: Q4MatmulArgs): Promise<Dispatch> {
  const yStride = a.yStride ?? a.outDim;
  const yOffset = a.yOffset ?? 0;
  checkDims('q4Matmul', { n: a.n, inDim: a.inDim, outDim: a.outDim, yStride, yOffset }, ['yOffset']);
  checkQ4Weight('q4Matmul', a.W, a.inDim, a.outDim);
  if (yOffset + a.outDim > yStride) throw new Error(`q4Matmul: yOffset ${yOffset} + outDim ${a.outDim} exceeds yStride ${yStride}`);
  if (a.x === a.y) throw new Error('q4Matmul: x and y must be different buffers');
  if (a.x.size < a.n * a.inDim * 4) throw new Error(`q4Matmul: x ('${a.x.label}') is smaller than [${a.n}, ${a.inDim}] f32`);
  if (a.y.size < ((a.n - 1) * yStride + yOffset + a.outDim) * 4) throw new Error(`q4Matmul: y ('${a.y.label}') is smaller than [${a.n}, ${yStride}] f32`);
  if (a.bias && a.bias.size < a.outDim * 4) throw new Error(`q4Matmul: bias ('${a.bias.label}') is smaller than [${a.outDim}] f32`);
  const sgm = ctx.caps.subgroupMatrix;
  if (sgm && a.subgroupMatrix !== false && a.kernel === undefined && a.tileRows === undefined && a.n >= SGM_MIN_ROWS && !sgmProblem(sgm, ctx.caps.limits, SGM_BLOCK_ROWS)) {
    return q4SgmDispatch(ctx, a, yStride, yOffset);
  }
  const kernel = a.kernel ?? (a.n <= Q4_SMALL_N ? 'rows' : 'tiled');
  const rows = a.rowsPerWorkgroup ?? Q4_ROWS;
  if (!Q4_ROWS_CHOICES.includes(rows)) throw new Error(`q4Matmul: rowsPerWorkgroup must be one of ${Q4_ROWS_CHOICES.join(', ')}, got ${rows}`);
  if (kernel === 'rows' && a.n > Q4_SMALL_N) throw new Error(`q4Matmul: the rows kernel handles N <= ${Q4_SMALL_N}, got ${a.n}`);
  const variant = { bias: !!a.bias, accumulate: !!a.accumulate };
  const maxStorage = ctx.caps.limits.maxComputeWorkgroupStorageSize;
  const tileRows = checkTileRows('q4Matmul', a.tileRows ?? tileRowsFor(a.n, { cols: a.outDim, k: Q4_TILE_K, maxStorage }), Q4_TILE_K, maxStorage);
  const p = q4Path(ctx, a.W);
  const sg = kernel === 'rows' && a.subgroups !== false && ctx.caps.subgroups;
  const shape = kernel === 'rows' ? `${a.n}x${rows}${sg ? '_sg' : ''}` : tileRows !== 64 ? String(tileRows) : '';
  const name = `q4_matmul_${kernel}${shape}_${q4PathName(p)}${variant.bias ? '_bias' : ''}${variant.accumulate ? '_acc' : ''}`;
  const code = kernel === 'tiled' ? q4TiledWgsl(p, variant, tileRows) : q4RowsWgsl(p, variant, a.n, sg, rows);
  const pipeline = await getPipeline(ctx, name, code);
  const dims = paramsUniform(ctx, 'q4Matmul.dims', [
    ['u32', a.n], ['u32', a.inDim], ['u32', a.outDim], ['u32', yStride], ['u32', yOffset], ['u32', a.W.rowBase ?? 0],
  ]);
  const buffers = [a.W.qWeight, a.W.qScale, a.x, a.y, dims];
  if (a.bias) buffers.push(a.bias);
  const workgroups =
    kernel === 'tiled'
      ? tileGrid('q4Matmul', a.n, a.outDim, tileRows, ctx.caps.limits.maxComputeWorkgroupsPerDimension)
      : grid1d(ctx, Math.ceil(a.outDim / rows));
  return { pipeline, buffers, workgroups, label: name };
}

/** The subgroup-matrix kernel: same bindings and uniform as the tiled one, its own block grid. */
async function q4SgmDispatch(ctx: GpuContext, a: Q4MatmulArgs, yStride: number, yOffset: number): Promise<Dispatch> {
  const s = ctx.caps.subgroupMatrix!;
  const rows = SGM_BLOCK_ROWS;
  const g = sgmGeometry(s, rows);
  if (typeof g === 'string') throw new Error(`q4Matmul: ${g}`);
  const p = q4Path(ctx, a.W);
  const variant = { bias: !!a.bias, accumulate: !!a.accumulate };
  // 'mma', not 'sgm': profiles name a kernel's kind by cutting the label at `_sg...` (subgroup variants).
  const name = `q4_matmul_mma${rows === 64 ? '64' : ''}_${s.M}x${s.N}x${s.K}_${q4PathName(p)}${variant.bias ? '_bias' : ''}${variant.accumulate ? '_acc' : ''}${s.emulated ? '_emulated' : ''}`;
  const pipeline = await getPipeline(ctx, name, q4SgmWgsl(p, variant, s, { rows }));
  const dims = paramsUniform(ctx, 'q4Matmul.dims', [
    ['u32', a.n], ['u32', a.inDim], ['u32', a.outDim], ['u32', yStride], ['u32', yOffset], ['u32', a.W.rowBase ?? 0],
  ]);
  const buffers = [a.W.qWeight, a.W.qScale, a.x, a.y, dims];
  if (a.bias) buffers.push(a.bias);
  const workgroups = sgmGrid('q4Matmul', g, a.n, a.outDim, ctx.caps.limits.maxComputeWorkgroupsPerDimension);
  return { pipeline, buffers, workgroups, label: name };
}

export interface Q4MatvecArgs {
  /** 4-bit [rows, cols]. */
  W: Q4Weight;
  /** f32 [cols]. */
  x: GPUBuffer;
  /** f32 [rows] out. */
  y: GPUBuffer;
  rows: number;
  cols: number;
  subgroups?: boolean;
  rowsPerWorkgroup?: number;
  /**
   * Take the subgroup-matrix kernel (q4matmul.sgm.wgsl.ts) where the device was made with it
   * (caps.subgroupMatrix), n >= SGM_MIN_ROWS and no kernel or tileRows is forced (default true).
   */
  subgroupMatrix?: boolean;
}

/** y[rows] = deq(W) x: the decode matvec (MatvecArgs with a 4-bit W). */
export function q4Matvec(ctx: GpuContext, a: Q4MatvecArgs): Promise<Dispatch> {
  return q4Matmul(ctx, { W: a.W, x: a.x, y: a.y, n: 1, inDim: a.cols, outDim: a.rows, kernel: 'rows', subgroups: a.subgroups, rowsPerWorkgroup: a.rowsPerWorkgroup });
}

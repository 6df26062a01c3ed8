import type { GpuContext } from '../../gpu/device';
import { getPipeline, type Dispatch } from '../../gpu/pipelines';
import { checkDims, paramsUniform } from '../common/params';
import { SGM_MIN_ROWS, SGM_TILE_K, SGM_BLOCK_ROWS, sgmGeometry, sgmGrid, sgmProblem, type SgmBlockRows } from '../common/sgm-tile.wgsl';
import type { MatmulArgs } from './matmul';
import { matmulSgmWgsl } from './matmul.sgm.wgsl';

/** MatmulArgs for the tensor-core kernel, which can also start at a row of W (the f16 copy of a fused matrix). */
export interface MatmulSgmArgs extends Omit<MatmulArgs, 'kernel' | 'tileRows' | 'subgroups'> {
  /** First row of W (default 0). */
  wRow?: number;
  /** Force the block height (benchmarks); default SGM_BLOCK_ROWS. */
  blockRows?: SgmBlockRows;
  /** Benchmarks: the older looped staging, or no scratch epilogue (whole blocks only; see SgmTileOptions). */
  variant?: { staging?: 'loop' | 'unchecked'; noScratch?: boolean };
}

/** Why matmulSgm cannot take this product on this device (null when it can): callers fall back to the tiled kernels. */
export function matmulSgmProblem(ctx: GpuContext, a: { n: number; inDim: number; outDim: number }): string | null {
  const s = ctx.caps.subgroupMatrix;
  if (!s) return 'the device was not made with subgroup matrices';
  if (a.n < SGM_MIN_ROWS) return `${a.n} rows: the tensor-core kernel takes ${SGM_MIN_ROWS} or more`;
  if (a.inDim % SGM_TILE_K) return `inDim ${a.inDim} is not a multiple of ${SGM_TILE_K}`;
  return sgmProblem(s, ctx.caps.limits, SGM_BLOCK_ROWS);
}

/**
 * y[N, out] (+)= x[N, in] · W[wRow .., :]^T + b on subgroup matrices: x rounded to f16 in the tiles, f32 sums
 * (so not the tiled kernels' bits: the kit's f16-check compares the two paths on a GPU). Buffers as matmul's.
 */
export async function matmulSgm(ctx: GpuContext, a: MatmulSgmArgs): Promise<Dispatch> {
  const yStride = a.yStride ?? a.outDim;
  const yOffset = a.yOffset ?? 0;
  const wRow = a.wRow ?? 0;
  checkDims('matmulSgm', { n: a.n, inDim: a.inDim, outDim: a.outDim, yStride, yOffset, wRow }, ['yOffset', 'wRow']);
  const problem = matmulSgmProblem(ctx, a);
  if (problem) throw new Error(`matmulSgm: ${problem}`);
  if (yOffset + a.outDim > yStride) throw new Error(`matmulSgm: yOffset ${yOffset} + outDim ${a.outDim} exceeds yStride ${yStride}`);
  if (a.x === a.y) throw new Error('matmulSgm: x and y must be different buffers');
  if (a.W.size < (wRow + a.outDim) * a.inDim * 2) throw new Error(`matmulSgm: W ('${a.W.label}', ${a.W.size} B) is smaller than rows [0, ${wRow + a.outDim}) x ${a.inDim} halves`);
  if (a.x.size < a.n * a.inDim * 4) throw new Error(`matmulSgm: x ('${a.x.label}') is smaller than [${a.n}, ${a.inDim}] f32`);
  if (a.y.size < ((a.n - 1) * yStride + yOffset + a.outDim) * 4) throw new Error(`matmulSgm: y ('${a.y.label}') is smaller than [${a.n}, ${yStride}] f32`);
  if (a.bias && a.bias.size < a.outDim * 4) throw new Error(`matmulSgm: bias ('${a.bias.label}') is smaller than [${a.outDim}] f32`);
  const s = ctx.caps.subgroupMatrix!;
  const rows = a.blockRows ?? SGM_BLOCK_ROWS;
  const g = sgmGeometry(s, rows);
  if (typeof g === 'string') throw new Error(`matmulSgm: ${g}`);
  const forced = a.blockRows !== undefined ? sgmProblem(s, ctx.caps.limits, rows) : null;
  if (forced) throw new Error(`matmulSgm: ${rows}-row blocks: ${forced}`);
  const variant = { bias: !!a.bias, accumulate: !!a.accumulate };
  // 'mma', not 'sgm': profiles name a kernel's kind by cutting the label at `_sg...` (subgroup variants).
  const bench = a.variant ?? {};
  if ((bench.noScratch || bench.staging === 'unchecked') && (a.n % g.blockRows || a.outDim % g.blockCols || variant.bias || variant.accumulate)) throw new Error('matmulSgm: noScratch and unchecked staging need whole blocks and a plain store');
  const name = `matmul_mma${rows === 64 ? '64' : ''}_${s.M}x${s.N}x${s.K}${variant.bias ? '_bias' : ''}${variant.accumulate ? '_acc' : ''}${bench.staging ? `_${bench.staging}` : ''}${bench.noScratch ? '_noscratch' : ''}${s.emulated ? '_emulated' : ''}`;
  const pipeline = await getPipeline(ctx, name, matmulSgmWgsl(variant, s, { rows, ...bench }));
  const dims = paramsUniform(ctx, 'matmulSgm.dims', [['u32', a.n], ['u32', a.inDim], ['u32', a.outDim], ['u32', yStride], ['u32', yOffset], ['u32', wRow]]);
  const buffers = [a.W, a.x, a.y, dims];
  if (a.bias) buffers.push(a.bias);
  return { pipeline, buffers, workgroups: sgmGrid('matmulSgm', g, a.n, a.outDim, ctx.caps.limits.maxComputeWorkgroupsPerDimension), label: name };
}

import type { GpuContext } from '../../gpu/device';
import { getPipeline, type Dispatch } from '../../gpu/pipelines';
import { checkDims, paramsUniform } from '../common/params';
import type { MatmulBackwardArgs } from '../matmul/matmul.backward';
import { q4PathName } from './q4.wgsl';
import { checkTileRows, tileGrid, tileRowsFor, type TileRows } from '../common/tile.wgsl';
import { q4MatmulBackwardWgsl } from './q4matmul.backward.wgsl';
import { checkQ4Weight, q4Path, type Q4Weight } from './q4weight';
import { checkPartials, partialsRoom, planSplitK, splitKReduce, type SplitKArgs } from '../matmul/matmul.splitk';
import { Q4_BWD_TILE_K } from './q4matmul.backward.wgsl';

/** MatmulBackwardArgs with a frozen 4-bit W. */
export interface Q4MatmulBackwardArgs extends Omit<MatmulBackwardArgs, 'W'> {
  /** 4-bit [rowOffset + outDim (at least), inDim] (rows counted from W.rowBase). */
  W: Q4Weight;
  /** dx rows per workgroup: 16, 32, 64 or 128 (default tileRowsFor(n)); every shape gives the same bits. */
  tileRows?: TileRows;
}

/** dx (+)= dy · deq(W)[rowOffset .. rowOffset+outDim, :]. Buffers: dy f32 [n, dyStride], dx f32 [n, inDim]. */
export async function q4MatmulBackward(ctx: GpuContext, a: Q4MatmulBackwardArgs): Promise<Dispatch> {
  return (await build(ctx, a, false)).main;
}

/**
 * q4MatmulBackward, split over outDim when dx has too few tiles for the reduction's length (the LM head;
 * matmul.splitk.ts): [split dispatch into a.partials, reduce into dx], or [the plain dispatch] when
 * splitting does not pay or a.partials holds fewer than 2 slices. Deterministic either way; the split sums differ from the plain ones by f32
 * reordering only.
 */
export async function q4MatmulBackwardSplitK(ctx: GpuContext, a: Q4MatmulBackwardArgs & SplitKArgs): Promise<Dispatch[]> {
  const b = await build(ctx, a, true);
  if (b.splits === 1) return [b.main];
  const reduce = await splitKReduce(ctx, { partials: a.partials!, dx: a.dx, n: a.n, inDim: a.inDim, splits: b.splits, accumulate: a.accumulate });
  return [b.main, reduce];
}

/** The main dispatch; with `maySplit`, over the slices planSplitK picks (or a.splits). */
async function build(ctx: GpuContext, a: Q4MatmulBackwardArgs & SplitKArgs, maySplit: boolean): Promise<{ main: Dispatch; splits: number }> {
  const rowOffset = a.rowOffset ?? 0;
  const dyStride = a.dyStride ?? a.outDim;
  const dyOffset = a.dyOffset ?? 0;
  checkDims('q4MatmulBackward', { n: a.n, inDim: a.inDim, outDim: a.outDim, rowOffset, dyStride, dyOffset }, ['rowOffset', 'dyOffset']);
  checkQ4Weight('q4MatmulBackward', a.W, a.inDim, a.outDim, rowOffset);
  if (dyOffset + a.outDim > dyStride) throw new Error(`q4MatmulBackward: dyOffset ${dyOffset} + outDim ${a.outDim} exceeds dyStride ${dyStride}`);
  if (a.dy.size < a.n * dyStride * 4) throw new Error(`q4MatmulBackward: dy ('${a.dy.label}') is smaller than [${a.n}, ${dyStride}] f32`);
  if (a.dx.size < a.n * a.inDim * 4) throw new Error(`q4MatmulBackward: dx ('${a.dx.label}') is smaller than [${a.n}, ${a.inDim}] f32`);
  if (a.dx === a.dy) throw new Error('q4MatmulBackward: dy and dx must be different buffers');
  const maxStorage = ctx.caps.limits.maxComputeWorkgroupStorageSize;
  const maxGrid = ctx.caps.limits.maxComputeWorkgroupsPerDimension;
  // Slices are planned on the 64-row grid whatever tile runs, so the split sums (and their order) do not
  // depend on the tile: the 128-row tile gives the 64-row one's bits here too.
  const [gx64, gy64] = tileGrid('q4MatmulBackward', a.n, a.inDim, 64, maxGrid);
  const plan = maySplit ? planSplitK('q4MatmulBackward', gx64 * gy64, a.outDim, Q4_BWD_TILE_K, a.splits, partialsRoom(a.partials, a.n, a.inDim)) : { splits: 1, slice: a.outDim };
  const wide = { cols: a.inDim, k: Q4_BWD_TILE_K, maxStorage, depth: plan.splits };
  // Split-K keeps the 64-row tile: on the H200 (2026-11-27, same call) the gate/up input gradient's split-K
  // took 359 us a dispatch with the 128-row tile against 318 us with 64 rows, while the unsplit backward and the
  // forward gained a little (53.1 + 51.7 against 111.9 ms; 226 against 231.6 ms).
  const tileRows = checkTileRows('q4MatmulBackward', a.tileRows ?? (plan.splits > 1 ? (Math.min(64, tileRowsFor(a.n, wide)) as TileRows) : tileRowsFor(a.n, wide)), Q4_BWD_TILE_K, maxStorage);
  const [gx, gy] = tileGrid('q4MatmulBackward', a.n, a.inDim, tileRows, maxGrid);
  const split = plan.splits > 1;
  const out = split ? checkPartials('q4MatmulBackward', a.partials, plan.splits, a.n, a.inDim) : a.dx;
  if (split && (out === a.dy || out === a.dx)) throw new Error('q4MatmulBackward: partials must be a buffer of its own');
  const p = q4Path(ctx, a.W);
  const name = `q4_matmul_backward${split ? '_splitk' : ''}${tileRows !== 64 ? tileRows : ''}_${q4PathName(p)}`;
  const pipeline = await getPipeline(ctx, name, q4MatmulBackwardWgsl(p, tileRows, split));
  const params = paramsUniform(ctx, 'q4MatmulBackward.params', [
    ['u32', a.n], ['u32', a.inDim], ['u32', a.outDim], ['u32', (a.W.rowBase ?? 0) + rowOffset], ['u32', a.accumulate ? 1 : 0], ['u32', dyStride], ['u32', dyOffset],
    ['u32', plan.slice],
  ]);
  return { main: { pipeline, buffers: [a.W.qWeight, a.W.qScale, a.dy, out, params], workgroups: split ? [gx, gy, plan.splits] : [gx, gy], label: name }, splits: plan.splits };
}

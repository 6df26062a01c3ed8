import type { GpuContext } from '../../gpu/device';
import { getPipeline, type Dispatch } from '../../gpu/pipelines';
import { checkDims, paramsUniform } from '../common/params';
import { MATMUL_BWD_TILE, matmulBackwardWgsl } from './matmul.backward.wgsl';
import { checkPartials, partialsRoom, planSplitK, splitKReduce, type SplitKArgs } from './matmul.splitk';

export interface MatmulBackwardArgs {
  /** f16 bits [rowOffset + outDim (at least), inDim]: the frozen weight (or an embedding chunk). */
  W: GPUBuffer;
  /** f32 [n, dyStride]: columns dyOffset .. dyOffset+outDim are this linear's output gradient */
  dy: GPUBuffer;
  /** f32 [n, inDim] out */
  dx: GPUBuffer;
  n: number;
  inDim: number;
  outDim: number;
  /** first row of W to use (LM-head chunks); default 0 */
  rowOffset?: number;
  /** add into dx instead of overwriting it (residual / several consumers of x); default false */
  accumulate?: boolean;
  /** row stride of dy (default outDim) */
  dyStride?: number;
  /** first column of dy (default 0) */
  dyOffset?: number;
}

/** dx (+)= dy · W[rowOffset .. rowOffset+outDim, :] */
export async function matmulBackward(ctx: GpuContext, a: MatmulBackwardArgs): Promise<Dispatch> {
  return (await build(ctx, a, false)).main;
}

/**
 * matmulBackward, split over outDim when dx has too few tiles for the reduction's length (the LM head;
 * matmul.splitk.ts): [split dispatch into a.partials, reduce into dx], or [the plain dispatch] when
 * splitting does not pay or a.partials holds fewer than 2 slices. Deterministic either way; the split sums differ from the plain ones by f32
 * reordering only.
 */
export async function matmulBackwardSplitK(ctx: GpuContext, a: MatmulBackwardArgs & SplitKArgs): Promise<Dispatch[]> {
  const b = await build(ctx, a, true);
  if (b.splits === 1) return [b.main];
  return [b.main, await splitKReduce(ctx, { partials: a.partials!, dx: a.dx, n: a.n, inDim: a.inDim, splits: b.splits, accumulate: a.accumulate })];
}

/** The main dispatch; with `maySplit`, over the slices planSplitK picks (or a.splits). */
async function build(ctx: GpuContext, a: MatmulBackwardArgs & SplitKArgs, maySplit: boolean): Promise<{ main: Dispatch; splits: number }> {
  const rowOffset = a.rowOffset ?? 0;
  const dyStride = a.dyStride ?? a.outDim;
  const dyOffset = a.dyOffset ?? 0;
  checkDims('matmulBackward', { n: a.n, inDim: a.inDim, outDim: a.outDim, rowOffset, dyStride, dyOffset }, ['rowOffset', 'dyOffset']);
  if (dyOffset + a.outDim > dyStride) throw new Error(`matmulBackward: dyOffset ${dyOffset} + outDim ${a.outDim} exceeds dyStride ${dyStride}`);
  if ((rowOffset + a.outDim) * a.inDim * 2 > a.W.size) {
    throw new Error(`matmulBackward: W ('${a.W.label}', ${a.W.size} B) is smaller than rows [${rowOffset}, ${rowOffset + a.outDim}) x ${a.inDim} halves`);
  }
  if (a.dy.size < a.n * dyStride * 4) throw new Error(`matmulBackward: dy ('${a.dy.label}') is smaller than [${a.n}, ${dyStride}] f32`);
  if (a.dx.size < a.n * a.inDim * 4) throw new Error(`matmulBackward: dx ('${a.dx.label}') is smaller than [${a.n}, ${a.inDim}] f32`);
  const wx = Math.ceil(a.inDim / MATMUL_BWD_TILE);
  const wy = Math.ceil(a.n / MATMUL_BWD_TILE);
  const max = ctx.caps.limits.maxComputeWorkgroupsPerDimension;
  if (wx > max || wy > max) throw new Error(`matmulBackward: [${a.n}, ${a.inDim}] needs ${wx}x${wy} workgroups, over the limit ${max}`);
  const plan = maySplit ? planSplitK('matmulBackward', wx * wy, a.outDim, MATMUL_BWD_TILE, a.splits, partialsRoom(a.partials, a.n, a.inDim)) : { splits: 1, slice: a.outDim };
  const split = plan.splits > 1;
  const out = split ? checkPartials('matmulBackward', a.partials, plan.splits, a.n, a.inDim) : a.dx;
  if (split && (out === a.dy || out === a.dx || out === a.W)) throw new Error('matmulBackward: partials must be a buffer of its own');
  const name = `matmul_backward${split ? '_splitk' : ''}`;
  const pipeline = await getPipeline(ctx, `${name}_${ctx.caps.f16 ? 'f16' : 'packed'}`, matmulBackwardWgsl({ f16: ctx.caps.f16 }, split));
  const params = paramsUniform(ctx, 'matmulBackward.params', [
    ['u32', a.n], ['u32', a.inDim], ['u32', a.outDim], ['u32', rowOffset], ['u32', a.accumulate ? 1 : 0], ['u32', dyStride], ['u32', dyOffset], ['u32', plan.slice],
  ]);
  return { main: { pipeline, buffers: [a.W, a.dy, out, params], workgroups: split ? [wx, wy, plan.splits] : [wx, wy], label: name }, splits: plan.splits };
}

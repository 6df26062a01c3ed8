// Dispatches of the tensor-core input gradient dx (+)= dy · W[rowOffset ..] (matmul.backward.sgm.wgsl.ts) for
// a frozen f16 W: the same arguments and semantics as matmulBackward / matmulBackwardSplitK, with operands
// rounded to f16 after a per-row power-of-two scaling of dy. Callers ask sgmBackwardProblem first and keep
// the f32 kernel when it names a reason.

import type { GpuContext, SubgroupMatrixShape } from '../../gpu/device';
import { getPipeline, type Dispatch } from '../../gpu/pipelines';
import { checkDims, paramsUniform } from '../common/params';
import type { MatmulBackwardArgs } from './matmul.backward';
import { matmulBackwardSgmWgsl, SGM_BWD_BLOCKS, SGM_BWD_STEP, SGM_BWD_WORKGROUP, sgmBackwardGeometry, type SgmBackwardBlock } from './matmul.backward.sgm.wgsl';
import { checkPartials, partialsRoom, planSplitK, splitKReduce, type SplitKArgs } from './matmul.splitk';

const KERNEL = 'matmulBackwardSgm';
/**
 * The block taken where the device can run it: 64 x 64. On an H200 (2026-11-27, kit table) the 128 x 128 block
 * of the down projection's input gradient (512 x 896 x 4864, a 152-workgroup grid) ran at 13.4 TFLOP/s, below
 * the f32 tiles' 16.3, while 64 x 64 blocks gave 21-29 TFLOP/s on the other shapes (as the forward's 64-row blocks
 * beat 128-row ones on every shape).
 */
export const SGM_BWD_BLOCK: SgmBackwardBlock = 64;

export interface SgmBackwardArgs extends MatmulBackwardArgs, SplitKArgs {
  /** Force the block (tests, benchmarks); default sgmBackwardBlock's choice. */
  block?: SgmBackwardBlock;
}

/** The blocks this device can run for shape `s` (largest first), or why none. */
function feasibleBlocks(ctx: GpuContext, s: SubgroupMatrixShape): SgmBackwardBlock[] | string {
  const reasons: string[] = [];
  const ok: SgmBackwardBlock[] = [];
  for (const block of SGM_BWD_BLOCKS) {
    const g = sgmBackwardGeometry(s, block);
    if (typeof g === 'string') reasons.push(`${block}x${block}: ${g}`);
    else if (g.workgroupBytes > ctx.caps.limits.maxComputeWorkgroupStorageSize) reasons.push(`${block}x${block}: needs ${g.workgroupBytes} B of workgroup memory, the device grants ${ctx.caps.limits.maxComputeWorkgroupStorageSize} B`);
    else ok.push(block);
  }
  return ok.length ? ok : reasons.join('; ');
}

/** Why matmulBackwardSgm cannot run these arguments on this device (null when it can): callers then keep matmulBackward. */
export function sgmBackwardProblem(ctx: GpuContext, a: Pick<SgmBackwardArgs, 'inDim' | 'outDim' | 'dyStride' | 'dyOffset' | 'block'>): string | null {
  const s = ctx.caps.subgroupMatrix;
  if (!s) return 'the device has no f16 subgroup matrices (chromium-experimental-subgroup-matrix)';
  if (!ctx.caps.f16) return 'the device has no shader-f16';
  if (SGM_BWD_WORKGROUP > ctx.caps.limits.maxComputeInvocationsPerWorkgroup) return `needs ${SGM_BWD_WORKGROUP} invocations per workgroup`;
  if (a.inDim % 4) return `inDim ${a.inDim} is not a multiple of 4 (W rows are read as vec4<f16>)`;
  // dy is read as vec4<f32>: its window must start and end on whole vec4s.
  for (const [k, v] of [['outDim', a.outDim], ['dyStride', a.dyStride ?? a.outDim], ['dyOffset', a.dyOffset ?? 0]] as const) {
    if (v % 4) return `${k} ${v} is not a multiple of 4 (dy is read as vec4<f32>)`;
  }
  const blocks = feasibleBlocks(ctx, s);
  if (typeof blocks === 'string') return blocks;
  if (a.block !== undefined && !blocks.includes(a.block)) return `block ${a.block} is not available here (only ${blocks.join(', ')})`;
  return null;
}

/** SGM_BWD_BLOCK where the device can run it, else the block it can. */
export function sgmBackwardBlock(ctx: GpuContext): SgmBackwardBlock {
  const s = ctx.caps.subgroupMatrix;
  const blocks = s ? feasibleBlocks(ctx, s) : 'no subgroup matrices';
  if (typeof blocks === 'string') throw new Error(`${KERNEL}: ${blocks}`);
  return blocks.includes(SGM_BWD_BLOCK) ? SGM_BWD_BLOCK : blocks[0];
}

/**
 * dx (+)= dy · W[rowOffset .. rowOffset+outDim, :] on subgroup matrices; W is the f16 copy. With a.partials,
 * split over outDim as matmulBackwardSplitK is ([split dispatch, reduce], slices of whole K steps), else one
 * dispatch. `emulate` (tests only) builds the kernel's emulated text for a device without the feature.
 */
export async function matmulBackwardSgm(ctx: GpuContext, a: SgmBackwardArgs, o: { emulate?: boolean } = {}): Promise<Dispatch[]> {
  const problem = sgmBackwardProblem(ctx, a);
  if (problem) throw new Error(`${KERNEL}: ${problem}`);
  const s = ctx.caps.subgroupMatrix!;
  const rowOffset = a.rowOffset ?? 0;
  const dyStride = a.dyStride ?? a.outDim;
  const dyOffset = a.dyOffset ?? 0;
  checkDims(KERNEL, { n: a.n, inDim: a.inDim, outDim: a.outDim, rowOffset, dyStride, dyOffset }, ['rowOffset', 'dyOffset']);
  if (dyOffset + a.outDim > dyStride) throw new Error(`${KERNEL}: dyOffset ${dyOffset} + outDim ${a.outDim} exceeds dyStride ${dyStride}`);
  if ((rowOffset + a.outDim) * a.inDim * 2 > a.W.size) {
    throw new Error(`${KERNEL}: W ('${a.W.label}', ${a.W.size} B) is smaller than rows [${rowOffset}, ${rowOffset + a.outDim}) x ${a.inDim} halves`);
  }
  if (a.dy.size < a.n * dyStride * 4) throw new Error(`${KERNEL}: dy ('${a.dy.label}') is smaller than [${a.n}, ${dyStride}] f32`);
  if (a.dx.size < a.n * a.inDim * 4) throw new Error(`${KERNEL}: dx ('${a.dx.label}') is smaller than [${a.n}, ${a.inDim}] f32`);
  const block = a.block ?? sgmBackwardBlock(ctx);
  const wx = Math.ceil(a.inDim / block);
  const wy = Math.ceil(a.n / block);
  const max = ctx.caps.limits.maxComputeWorkgroupsPerDimension;
  if (wx > max || wy > max) throw new Error(`${KERNEL}: [${a.n}, ${a.inDim}] needs ${wx}x${wy} workgroups, over the limit ${max}`);
  const plan = planSplitK(KERNEL, wx * wy, a.outDim, SGM_BWD_STEP, a.splits, partialsRoom(a.partials, a.n, a.inDim));
  const split = plan.splits > 1;
  const out = split ? checkPartials(KERNEL, a.partials, plan.splits, a.n, a.inDim) : a.dx;
  if (split && (out === a.dy || out === a.dx || out === a.W)) throw new Error(`${KERNEL}: partials must be a buffer of its own`);
  // Profiles cut labels at "_sg": the names avoid it.
  const shape = `${s.M}x${s.N}x${s.K}_w${s.subgroupSize}_b${block}`;
  const pipeline = await getPipeline(ctx, `matmul_backward_mma_${shape}${o.emulate || s.emulated ? '_emulated' : ''}`, matmulBackwardSgmWgsl(s, block, o));
  const params = paramsUniform(ctx, `${KERNEL}.params`, [
    ['u32', a.n], ['u32', a.inDim], ['u32', a.outDim], ['u32', rowOffset], ['u32', a.accumulate ? 1 : 0],
    ['u32', dyStride], ['u32', dyOffset], ['u32', plan.slice], ['u32', split ? 1 : 0],
  ]);
  const label = `matmul_backward_mma${split ? '_splitk' : ''}_${shape}`;
  const main: Dispatch = { pipeline, buffers: [a.W, a.dy, out, params], workgroups: [wx, wy, plan.splits], label };
  if (!split) return [main];
  return [main, await splitKReduce(ctx, { partials: out, dx: a.dx, n: a.n, inDim: a.inDim, splits: plan.splits, accumulate: a.accumulate })];
}

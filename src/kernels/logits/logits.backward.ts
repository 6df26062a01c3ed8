import type { GpuContext } from '../../gpu/device';
import { getPipeline, grid1d, type Dispatch } from '../../gpu/pipelines';
import { checkDims, paramsUniform } from '../common/params';
import { matmulBackward } from '../matmul/matmul.backward';
import { DLOGITS_WG, dlogitsWgsl } from './logits.backward.wgsl';

export interface DlogitsArgs {
  /** f32 [rows, ld]: logits of vocab ids [v0, v0+vc) at columns colOffset..; overwritten in place with dlogits */
  logits: GPUBuffer;
  /** f32 [rowOffset + rows]: d loss / d logp of each row (grpo's dlogp) */
  dlogp: GPUBuffer;
  /** f32 [rowOffset + rows]: log-sum-exp of each row's scaled logits over the FULL vocabulary (lseFinalize) */
  lse: GPUBuffer;
  /** u32 [rowOffset + rows]: target token of each row */
  targets: GPUBuffer;
  rows: number;
  vc: number;
  /** vocab id of the chunk's first column */
  v0: number;
  /** row stride of logits (default vc) */
  ld?: number;
  /** column of vocab id v0 in logits (default 0) */
  colOffset?: number;
  /** first entry of dlogp/lse/targets for row 0; default 0 */
  rowOffset?: number;
  /** logit multiplier the forward's softmax used (1/temperature); default 1 */
  scale?: number;
}

/** dlogits for one vocab chunk, in place over the chunk's logits. */
export async function dlogits(ctx: GpuContext, a: DlogitsArgs): Promise<Dispatch> {
  const rowOffset = a.rowOffset ?? 0;
  const ld = a.ld ?? a.vc;
  const colOffset = a.colOffset ?? 0;
  const scale = a.scale ?? 1;
  checkDims('dlogits', { rows: a.rows, vc: a.vc, v0: a.v0, rowOffset, ld, colOffset }, ['v0', 'rowOffset', 'colOffset']);
  if (colOffset + a.vc > ld) throw new Error(`dlogits: colOffset ${colOffset} + vc ${a.vc} exceeds ld ${ld}`);
  if (!(scale > 0) || !Number.isFinite(scale)) throw new Error(`dlogits: scale must be finite and > 0, got ${scale}`);
  if (a.logits.size < a.rows * ld * 4) throw new Error(`dlogits: 'logits' ('${a.logits.label}') is smaller than [${a.rows}, ${ld}] f32`);
  for (const k of ['dlogp', 'lse', 'targets'] as const) {
    if (a[k].size < (rowOffset + a.rows) * 4) throw new Error(`dlogits: '${k}' ('${a[k].label}') holds fewer than ${rowOffset + a.rows} rows`);
  }
  const pipeline = await getPipeline(ctx, 'dlogits', dlogitsWgsl());
  const params = paramsUniform(ctx, 'dlogits.params', [
    ['u32', a.rows], ['u32', a.vc], ['u32', a.v0], ['u32', rowOffset], ['u32', ld], ['u32', colOffset], ['f32', scale],
  ]);
  return {
    pipeline,
    buffers: [a.logits, a.dlogp, a.lse, a.targets, params],
    workgroups: grid1d(ctx, Math.ceil((a.rows * a.vc) / DLOGITS_WG)),
    label: 'dlogits',
  };
}

export interface LmHeadBackwardArgs {
  /** f16 bits: head rows (tied: embedding rows), [>= eRowOffset + vc, hidden] */
  E: GPUBuffer;
  /** f32 [rows, ld] with the chunk's dlogits at columns colOffset .. colOffset+vc (from dlogits) */
  dlogits: GPUBuffer;
  /** f32 [rows, hidden]: gradient of the final-norm output; accumulated over chunks */
  dx: GPUBuffer;
  rows: number;
  vc: number;
  hidden: number;
  /** row of E holding this chunk's first vocab id (E may itself be a chunk of the table) */
  eRowOffset: number;
  /** false for the first chunk (overwrite), true for the rest */
  accumulate: boolean;
  /** row stride of dlogits (default vc) */
  ld?: number;
  /** column of the chunk in dlogits (default 0) */
  colOffset?: number;
}

/** dx (+)= dlogits · E[eRowOffset .. eRowOffset+vc]: the frozen linear's backward with a row offset. */
export function lmHeadBackward(ctx: GpuContext, a: LmHeadBackwardArgs): Promise<Dispatch> {
  return matmulBackward(ctx, {
    W: a.E, dy: a.dlogits, dx: a.dx, n: a.rows, inDim: a.hidden, outDim: a.vc, rowOffset: a.eRowOffset, accumulate: a.accumulate,
    dyStride: a.ld ?? a.vc, dyOffset: a.colOffset ?? 0,
  });
}

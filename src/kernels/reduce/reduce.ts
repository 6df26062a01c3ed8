import type { GpuContext } from '../../gpu/device';
import { getPipeline, type Dispatch } from '../../gpu/pipelines';
import { paramsUniform } from '../common/params';
import { reduceFinalWgsl, reducePartialWgsl } from './reduce.wgsl';

export interface ReduceInput {
  /** f32 buffer */
  buffer: GPUBuffer;
  /** number of elements to include */
  count: number;
  /** first element (default 0) */
  offset?: number;
}

export interface ReduceArgs {
  inputs: ReduceInput[];
  /** f32 [inputs.length] out: partials[k] is input k's own sum (e.g. grpo's loss | clip | k3 planes) */
  partials: GPUBuffer;
  /** f32 [3] out: total, sqrt(total), clip scale (see below) */
  out: GPUBuffer;
  /** For gradient clipping: out[2] = min(1, maxNorm / (norm + 1e-6)); 1 when maxNorm is 0 or absent. */
  maxNorm?: number;
}

/** Index of the clip-by-norm scale in `out`, for adamw's `scaleIndex`. */
export const CLIP_SCALE_INDEX = 2;

async function reduce(ctx: GpuContext, a: ReduceArgs, square: boolean): Promise<Dispatch[]> {
  const name = square ? 'sumOfSquares' : 'sumOf';
  if (a.inputs.length === 0) throw new Error(`${name}: 'inputs' is empty`);
  if (a.partials.size < a.inputs.length * 4) throw new Error(`${name}: 'partials' holds ${a.partials.size / 4} floats, need ${a.inputs.length}`);
  if (a.out.size < 12) throw new Error(`${name}: 'out' must hold 3 floats`);
  const maxNorm = a.maxNorm ?? 0;
  if (!Number.isFinite(maxNorm) || maxNorm < 0) throw new Error(`${name}: 'maxNorm' must be >= 0, got ${maxNorm}`);
  const partialPipe = await getPipeline(ctx, 'reduce_partial', reducePartialWgsl());
  const finalPipe = await getPipeline(ctx, 'reduce_final', reduceFinalWgsl());
  const ds: Dispatch[] = a.inputs.map((inp, slot) => {
    const offset = inp.offset ?? 0;
    if (!Number.isInteger(inp.count) || inp.count < 0 || (offset + inp.count) * 4 > inp.buffer.size) {
      throw new Error(`${name}: input ${slot} ('${inp.buffer.label}') range [${offset}, ${offset + inp.count}) is outside its ${inp.buffer.size / 4} floats`);
    }
    const params = paramsUniform(ctx, `reduce.partial${slot}`, [['u32', inp.count], ['u32', offset], ['u32', slot], ['u32', square ? 1 : 0]]);
    return { pipeline: partialPipe, buffers: [inp.buffer, a.partials, params], workgroups: [1], label: `${name}_partial` };
  });
  const params = paramsUniform(ctx, 'reduce.final', [['u32', a.inputs.length], ['f32', maxNorm]]);
  ds.push({ pipeline: finalPipe, buffers: [a.partials, a.out, params], workgroups: [1], label: `${name}_final` });
  return ds;
}

/** Sum of squares of all inputs (global gradient norm^2), then norm and clip scale. */
export function sumOfSquares(ctx: GpuContext, a: ReduceArgs): Promise<Dispatch[]> {
  return reduce(ctx, a, true);
}

/** Plain sum of all inputs (e.g. the planes of grpo's stats: loss, clip fraction, mean k3). */
export function sumOf(ctx: GpuContext, a: ReduceArgs): Promise<Dispatch[]> {
  return reduce(ctx, a, false);
}

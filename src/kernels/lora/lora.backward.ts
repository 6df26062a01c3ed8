import type { GpuContext } from '../../gpu/device';
import { getPipeline, grid1d, type Dispatch } from '../../gpu/pipelines';
import { checkDims, paramsUniform } from '../common/params';
import { DT_ROWS, LORA_BWD_WG, RR_COLS, loraGradTWgsl, loraGradXWgsl, loraRowReduceWgsl, rankChunk } from './lora.backward.wgsl';

export interface LoraBackwardArgs {
  /** f32 [n, inDim]: the input of the adapted linear (saved activation) */
  x: GPUBuffer;
  /** f32 [n, rank]: x A^T saved by the forward */
  t: GPUBuffer;
  /** f32 [rank, inDim] */
  A: GPUBuffer;
  /** f32 [outDim, rank] */
  B: GPUBuffer;
  /** f32 [n, outDim]: gradient of the linear's output */
  dy: GPUBuffer;
  /** f32 [rank, inDim], accumulated (+=) */
  dA: GPUBuffer;
  /** f32 [outDim, rank], accumulated (+=) */
  dB: GPUBuffer;
  /** f32 [n, rank] scratch, overwritten */
  dt: GPUBuffer;
  /** f32 [n, inDim], accumulated (+=): run after the frozen linear's matmulBackward wrote its part */
  dx: GPUBuffer;
  n: number;
  inDim: number;
  outDim: number;
  rank: number;
  /** LoRA scale (alpha/r, or alpha/sqrt(r) with rslora) */
  scale: number;
}

/** The four LoRA backward dispatches, in the order they must run. */
export async function loraBackward(ctx: GpuContext, a: LoraBackwardArgs): Promise<Dispatch[]> {
  checkDims('loraBackward', { n: a.n, inDim: a.inDim, outDim: a.outDim, rank: a.rank });
  if (!Number.isFinite(a.scale)) throw new Error(`loraBackward: 'scale' must be finite, got ${a.scale}`);
  const need: Array<[keyof LoraBackwardArgs, number]> = [
    ['x', a.n * a.inDim], ['t', a.n * a.rank], ['A', a.rank * a.inDim], ['B', a.outDim * a.rank], ['dy', a.n * a.outDim],
    ['dA', a.rank * a.inDim], ['dB', a.outDim * a.rank], ['dt', a.n * a.rank], ['dx', a.n * a.inDim],
  ];
  for (const [k, count] of need) {
    const b = a[k] as GPUBuffer;
    if (b.size < count * 4) throw new Error(`loraBackward: '${k}' ('${b.label}') holds ${b.size / 4} floats, needs ${count}`);
  }
  const params = paramsUniform(ctx, 'loraBackward.params', [['u32', a.n], ['u32', a.inDim], ['u32', a.outDim], ['u32', a.rank], ['f32', a.scale]]);
  // dB[o, j] (row-major [out, r]) and dA[j, i] (row-major [r, in]) share one kernel: strides say where (p, j) goes.
  const paramsB = paramsUniform(ctx, 'loraBackward.dB.params', [['u32', a.n], ['u32', a.outDim], ['u32', a.rank], ['u32', 1], ['f32', a.scale]]);
  const paramsA = paramsUniform(ctx, 'loraBackward.dA.params', [['u32', a.n], ['u32', a.inDim], ['u32', 1], ['u32', a.inDim], ['f32', 1]]);
  const [pReduce, pT, pX] = await Promise.all([
    getPipeline(ctx, 'lora_backward_rows', loraRowReduceWgsl(a.rank)),
    getPipeline(ctx, 'lora_backward_dt', loraGradTWgsl(a.rank)),
    getPipeline(ctx, 'lora_backward_dx', loraGradXWgsl()),
  ]);
  const chunks = a.rank / rankChunk(a.rank);
  const max = ctx.caps.limits.maxComputeWorkgroupsPerDimension;
  const grid = (what: string, x: number): [number, number] => {
    if (x > max) throw new Error(`loraBackward: ${what} needs ${x} workgroups in x, the adapter allows ${max}`);
    return [x, chunks];
  };
  const per = (count: number) => grid1d(ctx, Math.ceil(count / LORA_BWD_WG));
  return [
    { pipeline: pReduce, buffers: [a.dy, a.t, a.dB, paramsB], workgroups: grid('dB (outDim)', Math.ceil(a.outDim / RR_COLS)), label: 'lora_backward_dB' },
    { pipeline: pT, buffers: [a.dy, a.B, a.dt, params], workgroups: grid('dt (n)', Math.ceil(a.n / DT_ROWS)), label: 'lora_backward_dt' },
    { pipeline: pReduce, buffers: [a.x, a.dt, a.dA, paramsA], workgroups: grid('dA (inDim)', Math.ceil(a.inDim / RR_COLS)), label: 'lora_backward_dA' },
    { pipeline: pX, buffers: [a.dt, a.A, a.dx, params], workgroups: per(a.n * a.inDim), label: 'lora_backward_dx' },
  ];
}


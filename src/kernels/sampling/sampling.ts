import type { GpuContext } from '../../gpu/device';
import { getPipeline, grid1d, type Dispatch } from '../../gpu/pipelines';
import { checkDims, paramsUniform } from '../common/params';
import { TOPK_MAX_K, TOPK_ROUNDS_MAX_K, TOPK_SLICE, topkWgsl } from './sampling.wgsl';
import { DRAW_EPS, DRAW_LOG_WORDS, gpuDrawWgsl } from './gpu-draw.wgsl';
import type { SamplingOptions } from './draw';

export type { SampleResult, SamplingOptions } from './draw';
export { DRAW_LOG_WORDS } from './gpu-draw.wgsl';

/** Where a GPU draw puts its tokens: the next step's ids, and entries of a draw log. */
export interface DrawTarget {
  /** u32 [>= rows]: row r's token id is written at [r] (the next decode step's input). */
  ids: GPUBuffer;
  /** u32 [entries * DRAW_LOG_WORDS]: see gpu-draw.wgsl.ts for an entry's words. */
  log: GPUBuffer;
}

/** One GPU draw's log entry, as read back. */
export interface DrawLogEntry {
  token: number;
  /** True: the GPU could not be sure of the CPU rule's token; redo the step on the CPU. */
  undecided: boolean;
  logit: number;
  /** log-sum-exp of the row at temperature 1, in float64 from the GPU's running max and sum. */
  lse1: number;
}

export function parseDrawLog(words: ArrayBuffer, entry = 0): DrawLogEntry {
  const u = new Uint32Array(words, entry * DRAW_LOG_WORDS * 4, DRAW_LOG_WORDS);
  const f = new Float32Array(words, entry * DRAW_LOG_WORDS * 4, DRAW_LOG_WORDS);
  return { token: u[0], undecided: u[1] !== 0, logit: f[2], lse1: f[3] + Math.log(f[4]) };
}

/** Whether the GPU draw can serve these options: its candidates are the top 64, so top-k above that cannot. */
export function gpuDrawServes(o: SamplingOptions, vocab: number, maxK = TOPK_MAX_K): boolean {
  const k = o.topK ?? 0;
  return (o.temperature ?? 0) === 0 || k === 0 || k <= maxK || k >= vocab;
}

export interface TopkPassArgs {
  /** f32 [rows, ld]: logits rows (first pass) or previous candidates' values, count used per row. */
  values: GPUBuffer;
  /** u32 [rows, ld] previous candidates' ids; absent on the first pass (ids = column positions). */
  ids?: GPUBuffer;
  /** f32 [rows, ceil(count / 1024), k] output values, sorted within each 1024-slice. */
  outValues: GPUBuffer;
  /** u32 [rows, ceil(count / 1024), k] output ids. */
  outIds: GPUBuffer;
  count: number;
  k: number;
  /** Rows (default 1) and their stride in the input (default count). */
  rows?: number;
  ld?: number;
}

/** One top-k pass: each 1024-slice of each row of values yields its k best (value desc, id asc). */
export async function topkPass(ctx: GpuContext, a: TopkPassArgs): Promise<Dispatch> {
  const rows = a.rows ?? 1;
  const ld = a.ld ?? a.count;
  checkDims('topkPass', { count: a.count, k: a.k, rows, ld });
  if (a.k > TOPK_MAX_K) throw new Error(`topkPass: k ${a.k} exceeds ${TOPK_MAX_K}`);
  if (ld < a.count) throw new Error(`topkPass: ld ${ld} is below count ${a.count}`);
  const indexed = !!a.ids;
  const sorted = a.k > TOPK_ROUNDS_MAX_K;
  const pipeline = await getPipeline(ctx, `topk${indexed ? '_indexed' : ''}${sorted ? '_sorted' : ''}`, topkWgsl(indexed, sorted));
  const slices = Math.ceil(a.count / TOPK_SLICE);
  const dims = paramsUniform(ctx, 'topk.dims', [['u32', a.count], ['u32', a.k], ['u32', ld], ['u32', slices], ['u32', rows]]);
  const buffers = [a.values, a.outValues, a.outIds, dims];
  if (a.ids) buffers.push(a.ids);
  return { pipeline, buffers, workgroups: grid1d(ctx, slices * rows), label: 'topk' };
}

export interface GpuDrawArgs {
  /** f32 / u32 [rows, k]: the last top-k pass's candidates per row, sorted. */
  values: GPUBuffer;
  ids: GPUBuffer;
  /** Per-row log-sum-exp stats at temperature 1, and at `temperature` (the same buffer when it is 1). */
  stats1: GPUBuffer;
  statsT: GPUBuffer;
  /** [rows, DRAW_ENTRY_WORDS]: each row's uniform, log index and plan (see gpu-draw.wgsl.ts). */
  step: GPUBuffer;
  out: DrawTarget;
  /** f32 [rows, vocab]: the logits rows (the tail draw past the candidates reads them). */
  logits: GPUBuffer;
  k: number;
  greedy: boolean;
  /** 0: no top-k. */
  topK: number;
  vocab: number;
  /** The draw's temperature (1 for greedy). */
  temperature: number;
  topP: number;
  /** The plan id a row's step entry must name (or any plan) for this draw to take it. */
  plan: number;
  rows: number;
}

/** The GPU draw over rows 0..rows-1: each row's token to out.ids[r] and a log entry (buffers passed in). */
export async function gpuDraw(ctx: GpuContext, a: GpuDrawArgs): Promise<Dispatch> {
  const pipeline = await getPipeline(ctx, 'sampler_draw', gpuDrawWgsl);
  const params = paramsUniform(ctx, 'sampler.draw', [
    ['u32', a.k], ['u32', a.greedy ? 1 : 0], ['u32', a.topK], ['u32', a.vocab], ['f32', 1 / a.temperature], ['f32', a.topP], ['f32', DRAW_EPS], ['u32', a.plan],
  ]);
  return {
    pipeline,
    buffers: [a.values, a.ids, a.stats1, a.statsT, a.step, a.out.ids, a.out.log, params, a.logits],
    workgroups: [a.rows],
    label: 'sampler_draw',
  };
}

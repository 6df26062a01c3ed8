import type { GpuContext } from '../../gpu/device';
import { getPipeline, grid1d, type Dispatch } from '../../gpu/pipelines';
import { checkDims, paramsUniform } from '../common/params';
import {
  ATTN_BWD_MAX_HD,
  ATTN_BWD_WG,
  attentionBackwardDkvWgsl,
  attentionBackwardDqWgsl,
  attentionBackwardStatsWgsl,
} from './attention.backward.wgsl';

export interface AttentionBackwardArgs {
  /** f32 [n, nH*hd] (after RoPE, as the forward used it) */
  q: GPUBuffer;
  /** f32 [m, nKV*hd] */
  k: GPUBuffer;
  /** f32 [m, nKV*hd] */
  v: GPUBuffer;
  /** f32 [n, nH*hd] forward output */
  out: GPUBuffer;
  /** f32 [n, nH] saved by the forward */
  lse: GPUBuffer;
  /** f32 [n, nH*hd] gradient of out */
  dout: GPUBuffer;
  /** u32 [n, 2] key range [start, end) of each query row */
  ranges: GPUBuffer;
  /** f32 [n, nH, 2] scratch (lse and rowsum(dout*out)) */
  stats: GPUBuffer;
  /** f32 [n, nH*hd] out (overwritten) */
  dq: GPUBuffer;
  /** f32 [m, nKV*hd] out (overwritten) */
  dk: GPUBuffer;
  /** f32 [m, nKV*hd] out (overwritten) */
  dv: GPUBuffer;
  /** query rows */
  n: number;
  /** rows of k and v (N for a packed batch, more for a KV cache) */
  kvRows: number;
  nHeads: number;
  nKvHeads: number;
  headDim: number;
  /**
   * K/V are the batch's own rows (kvRows = n) and ranges are those of causal packed sequences in order
   * (packedRanges: row i sees [first row of its sequence, i + 1)). Lets the dk/dv pass skip the rows that
   * cannot see a key. Default false (any ranges).
   */
  packed?: boolean;
}

/** Three dispatches, in order: stats, dq, dk+dv. Scale is 1/sqrt(headDim). */
export async function attentionBackward(ctx: GpuContext, a: AttentionBackwardArgs): Promise<Dispatch[]> {
  checkDims('attentionBackward', { n: a.n, kvRows: a.kvRows, nHeads: a.nHeads, nKvHeads: a.nKvHeads, headDim: a.headDim });
  if (a.nHeads % a.nKvHeads !== 0) throw new Error(`attentionBackward: nHeads (${a.nHeads}) must be a multiple of nKvHeads (${a.nKvHeads})`);
  if (a.packed && a.kvRows !== a.n) throw new Error(`attentionBackward: 'packed' needs kvRows (${a.kvRows}) = n (${a.n})`);
  if (a.headDim > ATTN_BWD_MAX_HD) throw new Error(`attentionBackward: headDim ${a.headDim} exceeds ${ATTN_BWD_MAX_HD}`);
  const qn = a.n * a.nHeads * a.headDim;
  const kvn = a.kvRows * a.nKvHeads * a.headDim;
  const need: Array<[keyof AttentionBackwardArgs, number]> = [
    ['q', qn], ['k', kvn], ['v', kvn], ['out', qn], ['lse', a.n * a.nHeads], ['dout', qn], ['ranges', 2 * a.n],
    ['stats', 2 * a.n * a.nHeads], ['dq', qn], ['dk', kvn], ['dv', kvn],
  ];
  for (const [key, count] of need) {
    const b = a[key] as GPUBuffer;
    if (b.size < count * 4) throw new Error(`attentionBackward: '${key}' ('${b.label}') holds ${b.size / 4} elements, needs ${count}`);
  }
  const [pS, pQ, pKV] = await Promise.all([
    getPipeline(ctx, 'attention_backward_stats', attentionBackwardStatsWgsl()),
    getPipeline(ctx, 'attention_backward_dq', attentionBackwardDqWgsl()),
    getPipeline(ctx, 'attention_backward_dkv', attentionBackwardDkvWgsl()),
  ]);
  const params = paramsUniform(ctx, 'attentionBackward.params', [
    ['u32', a.n], ['u32', a.kvRows], ['u32', a.nHeads], ['u32', a.nKvHeads], ['u32', a.headDim], ['f32', 1 / Math.sqrt(a.headDim)], ['u32', a.packed ? 1 : 0],
  ]);
  return [
    { pipeline: pS, buffers: [a.out, a.dout, a.lse, a.stats, params], workgroups: grid1d(ctx, Math.ceil((a.n * a.nHeads) / ATTN_BWD_WG)), label: 'attention_backward_stats' },
    { pipeline: pQ, buffers: [a.q, a.k, a.v, a.dout, a.stats, a.ranges, a.dq, params], workgroups: grid1d(ctx, a.n * a.nHeads), label: 'attention_backward_dq' },
    { pipeline: pKV, buffers: [a.q, a.k, a.v, a.dout, a.stats, a.ranges, a.dk, a.dv, params], workgroups: grid1d(ctx, a.kvRows * a.nKvHeads), label: 'attention_backward_dkv' },
  ];
}

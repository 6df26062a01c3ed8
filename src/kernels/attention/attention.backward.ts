import type { GpuContext } from '../../gpu/device';
import { getPipeline, grid1d, type Dispatch } from '../../gpu/pipelines';
import { checkDims, paramsUniform } from '../common/params';
import {
  ATTN_BWD_MAX_HD,
  ATTN_BWD_TILES,
  ATTN_BWD_WG,
  attentionBackwardDkvSumWgsl,
  attentionBackwardDkvWgsl,
  attentionBackwardDqWgsl,
  attentionBackwardStatsWgsl,
  attentionBackwardTileBytes,
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
  /**
   * Optional f32 scratch of at least 2 * m * nH * hd (overwritten): each query head's share of dk and dv,
   * summed per KV head by a last pass. Gives the dk/dv pass nH/nKV times as many workgroups (with few
   * KV heads, e.g. 2, the GPU is otherwise mostly idle). Without it one workgroup walks all the heads of
   * its group.
   */
  partials?: GPUBuffer;
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
  /** Tile size T (T keys x T query pairs, T*T threads); default the largest of 16, 8, 4 whose workgroup memory the device holds. */
  tile?: (typeof ATTN_BWD_TILES)[number];
}

/** The tile size used for head dim hd on this device: the largest whose workgroup memory fits. */
export function attentionBackwardTile(ctx: GpuContext, hd: number): (typeof ATTN_BWD_TILES)[number] {
  const limit = ctx.caps.limits.maxComputeWorkgroupStorageSize;
  for (const t of ATTN_BWD_TILES) if (attentionBackwardTileBytes(hd, t) <= limit) return t;
  throw new Error(`attentionBackward: head dim ${hd} needs ${attentionBackwardTileBytes(hd, 4)} bytes of workgroup memory; the device allows ${limit}`);
}

/** Dispatches, in order: stats, dq, dk+dv (and with `partials` the per-KV-head sum). Scale is 1/sqrt(headDim). */
export async function attentionBackward(ctx: GpuContext, a: AttentionBackwardArgs): Promise<Dispatch[]> {
  checkDims('attentionBackward', { n: a.n, kvRows: a.kvRows, nHeads: a.nHeads, nKvHeads: a.nKvHeads, headDim: a.headDim });
  if (a.nHeads % a.nKvHeads !== 0) throw new Error(`attentionBackward: nHeads (${a.nHeads}) must be a multiple of nKvHeads (${a.nKvHeads})`);
  if (a.packed && a.kvRows !== a.n) throw new Error(`attentionBackward: 'packed' needs kvRows (${a.kvRows}) = n (${a.n})`);
  if (a.headDim > ATTN_BWD_MAX_HD) throw new Error(`attentionBackward: headDim ${a.headDim} exceeds ${ATTN_BWD_MAX_HD}`);
  const t = a.tile ?? attentionBackwardTile(ctx, a.headDim);
  if (!(ATTN_BWD_TILES as readonly number[]).includes(t)) throw new Error(`attentionBackward: tile ${t} is not one of ${ATTN_BWD_TILES.join(', ')}`);
  const qn = a.n * a.nHeads * a.headDim;
  const kvn = a.kvRows * a.nKvHeads * a.headDim;
  const need: Array<[keyof AttentionBackwardArgs, number]> = [
    ['q', qn], ['k', kvn], ['v', kvn], ['out', qn], ['lse', a.n * a.nHeads], ['dout', qn], ['ranges', 2 * a.n],
    ['stats', 2 * a.n * a.nHeads], ['dq', qn], ['dk', kvn], ['dv', kvn],
  ];
  if (a.partials) need.push(['partials', 2 * a.kvRows * a.nHeads * a.headDim]);
  for (const [key, count] of need) {
    const b = a[key] as GPUBuffer;
    if (b.size < count * 4) throw new Error(`attentionBackward: '${key}' ('${b.label}') holds ${b.size / 4} elements, needs ${count}`);
  }
  const perHead = a.partials !== undefined;
  const [pS, pQ, pKV, pSum] = await Promise.all([
    getPipeline(ctx, 'attention_backward_stats', attentionBackwardStatsWgsl()),
    getPipeline(ctx, 'attention_backward_dq', attentionBackwardDqWgsl(a.headDim, t)),
    getPipeline(ctx, 'attention_backward_dkv', attentionBackwardDkvWgsl(a.headDim, t, perHead)),
    perHead ? getPipeline(ctx, 'attention_backward_dkv_sum', attentionBackwardDkvSumWgsl()) : undefined,
  ]);
  const params = paramsUniform(ctx, 'attentionBackward.params', [
    ['u32', a.n], ['u32', a.kvRows], ['u32', a.nHeads], ['u32', a.nKvHeads], ['u32', a.headDim], ['f32', 1 / Math.sqrt(a.headDim)], ['u32', a.packed ? 1 : 0],
  ]);
  const group = a.nHeads / a.nKvHeads;
  const keyBlocks = Math.ceil(a.kvRows / t);
  const out: Dispatch[] = [
    { pipeline: pS, buffers: [a.out, a.dout, a.lse, a.stats, params], workgroups: grid1d(ctx, Math.ceil((a.n * a.nHeads) / ATTN_BWD_WG)), label: 'attention_backward_stats' },
    { pipeline: pQ, buffers: [a.q, a.k, a.v, a.dout, a.stats, a.ranges, a.dq, params], workgroups: grid1d(ctx, Math.ceil((a.n * group) / t) * a.nKvHeads), label: 'attention_backward_dq' },
  ];
  const inputs = [a.q, a.k, a.v, a.dout, a.stats, a.ranges];
  if (a.partials && pSum) {
    out.push(
      { pipeline: pKV, buffers: [...inputs, a.partials, params], workgroups: grid1d(ctx, keyBlocks * a.nHeads), label: 'attention_backward_dkv' },
      { pipeline: pSum, buffers: [a.partials, a.dk, a.dv, params], workgroups: grid1d(ctx, Math.ceil(kvn / ATTN_BWD_WG)), label: 'attention_backward_dkv_sum' },
    );
  } else {
    out.push({ pipeline: pKV, buffers: [...inputs, a.dk, a.dv, params], workgroups: grid1d(ctx, keyBlocks * a.nKvHeads), label: 'attention_backward_dkv' });
  }
  return out;
}

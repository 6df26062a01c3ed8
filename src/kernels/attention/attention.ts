import type { GpuContext } from '../../gpu/device';
import { getPipeline, grid1d, type Dispatch } from '../../gpu/pipelines';
import { checkDims, paramsUniform } from '../common/params';
import { ATTN_MAX_HD, attentionWgsl } from './attention.wgsl';

export interface AttentionArgs {
  /** f32 [N, nH*hd] (after RoPE). */
  q: GPUBuffer;
  /** f32 [M, nKV*hd]: the batch's own keys (M = N) or a layer's KV cache (M = maxCtx). */
  k: GPUBuffer;
  /** f32 [M, nKV*hd]. */
  v: GPUBuffer;
  /** u32 [N, 2]: row i attends K/V rows [start, end). */
  ranges: GPUBuffer;
  /** f32 [N, nH*hd] output. */
  out: GPUBuffer;
  /** f32 [N, nH] output: log-sum-exp of each (row, head)'s scaled scores; -3e38 for an empty range. */
  lse: GPUBuffer;
  n: number;
  nHeads: number;
  nKvHeads: number;
  headDim: number;
}

/**
 * Causal GQA attention, softmax(q k^T / sqrt(hd)) v over each row's key range. Buffers: q f32 [N, nH*hd],
 * k/v f32 [M, nKV*hd], ranges u32 [N, 2], out f32 [N, nH*hd], lse f32 [N, nH]. Query head h reads KV head
 * h / (nH/nKV). For one or a few rows over a long KV cache (decode), attentionSplit() in attention.split.ts
 * computes the same in parallel over key slices.
 */
export async function attention(ctx: GpuContext, a: AttentionArgs): Promise<Dispatch> {
  checkDims('attention', { n: a.n, nHeads: a.nHeads, nKvHeads: a.nKvHeads, headDim: a.headDim });
  if (a.nHeads % a.nKvHeads !== 0) throw new Error(`attention: nHeads ${a.nHeads} is not a multiple of nKvHeads ${a.nKvHeads}`);
  if (a.headDim > ATTN_MAX_HD) throw new Error(`attention: headDim ${a.headDim} exceeds ${ATTN_MAX_HD}`);
  const pipeline = await getPipeline(ctx, 'attention', attentionWgsl());
  const dims = paramsUniform(ctx, 'attention.dims', [
    ['u32', a.n],
    ['u32', a.nHeads],
    ['u32', a.nKvHeads],
    ['u32', a.headDim],
    ['f32', 1 / Math.sqrt(a.headDim)],
  ]);
  return { pipeline, buffers: [a.q, a.k, a.v, a.ranges, a.out, a.lse, dims], workgroups: grid1d(ctx, a.n * a.nHeads), label: 'attention' };
}

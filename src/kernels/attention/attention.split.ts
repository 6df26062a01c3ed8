import type { GpuContext } from '../../gpu/device';
import { getPipeline, grid1d, type Dispatch } from '../../gpu/pipelines';
import { checkDims, paramsUniform } from '../common/params';
import type { AttentionArgs } from './attention';
import { attentionSplitCombineWgsl, attentionSplitPartialsWgsl } from './attention.split.wgsl';
import { ATTN_MAX_HD, ATTN_WG } from './attention.wgsl';

/** Default slice length: enough keys per workgroup to amortise pass 2, few enough to fill a large GPU. */
export const ATTN_SPLIT_KEYS = 256;
/** More slices than this add pass-2 work and scratch without more parallelism worth having. */
export const ATTN_MAX_SPLITS = 32;
/** The split path is for decode-like calls: at most this many query rows. */
export const ATTN_SPLIT_MAX_ROWS = 4;
/**
 * Below this cache length the single-pass kernel is kept. Ranges up to ATTN_SPLIT_KEYS are bit-identical
 * either way; longer ones differ in f32 summation order, so short-context decode (the e2e fixtures'
 * contexts) keeps the existing arithmetic.
 */
export const ATTN_SPLIT_MIN_KEYS = 1024;

/** Whether attention over `rows` query rows with key ranges up to `maxKeys` long takes the split path. */
export function splitAttentionPays(rows: number, maxKeys: number): boolean {
  return rows <= ATTN_SPLIT_MAX_ROWS && maxKeys > ATTN_SPLIT_MIN_KEYS;
}

/** Number of key slices per (row, head) for ranges up to maxKeys long. */
export function attentionSplits(maxKeys: number, keysPerSplit = ATTN_SPLIT_KEYS): number {
  return Math.min(ATTN_MAX_SPLITS, Math.max(1, Math.ceil(maxKeys / keysPerSplit)));
}

/** Bytes of `splits` partial softmaxes per (row, head): the partials layout, [n*nH*splits, hd + 2] f32. */
export function partialsBytesForSplits(n: number, nHeads: number, headDim: number, splits: number): number {
  return n * nHeads * splits * (headDim + 2) * 4;
}

/** Bytes of the `partials` scratch attentionSplit needs for ranges up to maxKeys long. */
export function attentionPartialsBytes(n: number, nHeads: number, headDim: number, maxKeys: number, keysPerSplit = ATTN_SPLIT_KEYS): number {
  return partialsBytesForSplits(n, nHeads, headDim, attentionSplits(maxKeys, keysPerSplit));
}

/**
 * The uniform of the split kernels. Its layout is the combine kernel's Dims, so every kernel that writes
 * partials for attention_split_combine (attentionSplit's, attentionDecode's) builds it here.
 */
export function splitDimsUniform(ctx: GpuContext, label: string, a: Pick<AttentionArgs, 'n' | 'nHeads' | 'nKvHeads' | 'headDim'>, splits: number, keysPerSplit: number): GPUBuffer {
  return paramsUniform(ctx, label, [
    ['u32', a.n],
    ['u32', a.nHeads],
    ['u32', a.nKvHeads],
    ['u32', a.headDim],
    ['f32', 1 / Math.sqrt(a.headDim)],
    ['u32', splits],
    ['u32', keysPerSplit],
  ]);
}

/**
 * The dispatch merging each (row, head)'s partial softmaxes into out and lse. `prefixes` (u32 [n, 2]):
 * each row's keys were its shared-prefix range's and then its own (attentionDecode with prefixes).
 */
export async function splitCombineDispatch(ctx: GpuContext, a: Pick<AttentionArgs, 'n' | 'nHeads' | 'ranges' | 'out' | 'lse'>, partials: GPUBuffer, dims: GPUBuffer, prefixes?: GPUBuffer): Promise<Dispatch> {
  const name = `attention_split_combine${prefixes ? '_pre' : ''}`;
  const pipeline = await getPipeline(ctx, name, attentionSplitCombineWgsl(!!prefixes));
  const buffers = [a.ranges, partials, a.out, a.lse, dims];
  if (prefixes) buffers.push(prefixes);
  return { pipeline, buffers, workgroups: grid1d(ctx, a.n * a.nHeads), label: name };
}

export interface AttentionSplitArgs extends AttentionArgs {
  /** Longest key range any row will have (a KV cache's maxCtx): sizes the number of slices. */
  maxKeys: number;
  /** f32 scratch of attentionPartialsBytes(n, nHeads, headDim, maxKeys, keysPerSplit) bytes; may be shared by every layer. */
  partials: GPUBuffer;
  /** Minimum slice length, a multiple of 64 (default ATTN_SPLIT_KEYS); tests use small ones. */
  keysPerSplit?: number;
}

/**
 * The same attention as attention() (out and lse, same layouts and range semantics), as two dispatches:
 * partial softmaxes over key slices, then their combination. For few rows over long ranges; a range of at
 * most keysPerSplit keys gives exactly attention()'s bits.
 */
export async function attentionSplit(ctx: GpuContext, a: AttentionSplitArgs): Promise<Dispatch[]> {
  const keysPerSplit = a.keysPerSplit ?? ATTN_SPLIT_KEYS;
  checkDims('attentionSplit', { n: a.n, nHeads: a.nHeads, nKvHeads: a.nKvHeads, headDim: a.headDim, maxKeys: a.maxKeys, keysPerSplit });
  if (a.nHeads % a.nKvHeads !== 0) throw new Error(`attentionSplit: nHeads ${a.nHeads} is not a multiple of nKvHeads ${a.nKvHeads}`);
  if (a.headDim > ATTN_MAX_HD) throw new Error(`attentionSplit: headDim ${a.headDim} exceeds ${ATTN_MAX_HD}`);
  if (keysPerSplit % ATTN_WG !== 0) throw new Error(`attentionSplit: keysPerSplit ${keysPerSplit} is not a multiple of ${ATTN_WG}`);
  const need = attentionPartialsBytes(a.n, a.nHeads, a.headDim, a.maxKeys, keysPerSplit);
  if (a.partials.size < need) throw new Error(`attentionSplit: 'partials' ('${a.partials.label}') holds ${a.partials.size} bytes, needs ${need}`);
  const splits = attentionSplits(a.maxKeys, keysPerSplit);
  const partial = await getPipeline(ctx, 'attention_split_partials', attentionSplitPartialsWgsl());
  const dims = splitDimsUniform(ctx, 'attentionSplit.dims', a, splits, keysPerSplit);
  return [
    { pipeline: partial, buffers: [a.q, a.k, a.v, a.ranges, a.partials, dims], workgroups: grid1d(ctx, a.n * a.nHeads * splits), label: 'attention_split_partials' },
    await splitCombineDispatch(ctx, a, a.partials, dims),
  ];
}

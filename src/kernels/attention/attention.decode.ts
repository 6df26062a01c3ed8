import type { GpuContext } from '../../gpu/device';
import { getPipeline, grid1d, type Dispatch } from '../../gpu/pipelines';
import { checkDims } from '../common/params';
import type { AttentionArgs } from './attention';
import { ATTN_MAX_SPLITS, partialsBytesForSplits, splitCombineDispatch, splitDimsUniform } from './attention.split';
import { ATTN_DECODE_WG, attentionDecodeWgsl, attentionDecodeWorkgroupBytes } from './attention.decode.wgsl';

/** Query rows a decode call serves (decode steps batch at most this many rows: Q4_SMALL_N). */
export const ATTN_DECODE_MAX_ROWS = 8;
/** Up to this many keys one workgroup per (row, KV head) is enough: a single dispatch. */
export const ATTN_DECODE_SINGLE_MAX_KEYS = 1024;
/** Minimum keys per slice when the range is split over workgroups. */
export const ATTN_DECODE_SPLIT_KEYS = 512;

/**
 * Workgroups per (row, KV head) for key ranges up to `maxLen` long: 1 (one dispatch, no scratch) up to
 * ATTN_DECODE_SINGLE_MAX_KEYS, else enough ATTN_DECODE_SPLIT_KEYS slices (at most ATTN_MAX_SPLITS). The
 * CPU knows how long the context of the steps it records will get; over-estimating only costs idle
 * workgroups, since each range is sliced on the GPU.
 */
export function attentionDecodeSplits(maxLen: number): number {
  if (maxLen <= ATTN_DECODE_SINGLE_MAX_KEYS) return 1;
  return Math.min(ATTN_MAX_SPLITS, Math.ceil(maxLen / ATTN_DECODE_SPLIT_KEYS));
}

/** Bytes of `partials` a split call needs: attention.split's partials layout. */
export const attentionDecodePartialsBytes = partialsBytesForSplits;

export interface AttentionDecodeArgs extends AttentionArgs {
  /** Workgroups per (row, KV head), see attentionDecodeSplits (default 1: one dispatch). */
  splits?: number;
  /** f32 scratch of attentionDecodePartialsBytes(...) bytes, needed when splits > 1 (a KvCache's `partials` fits). */
  partials?: GPUBuffer;
  /** Minimum keys per slice when splits > 1, a multiple of 64 (default ATTN_DECODE_SPLIT_KEYS); tests use small ones. */
  keysPerSplit?: number;
  /** Use subgroup reductions where the device has `subgroups` (default true). */
  subgroups?: boolean;
  /**
   * u32 [n, 2]: each row's shared-prefix key range, attended before its own range (ranges) as one sequence
   * of keys: sequences decoded together store their common prompt rows once. Absent: ranges alone.
   */
  prefixes?: GPUBuffer;
}

function needBytes(name: string, buf: GPUBuffer, bytes: number): void {
  if (buf.size < bytes) throw new Error(`attentionDecode: '${name}' ('${buf.label}') holds ${buf.size} bytes, needs ${bytes}`);
}

/**
 * Decode attention, the same as attention() (out f32 [n, nH*hd], lse f32 [n, nH], ranges u32 [n, 2] read
 * on the GPU, query head h reads KV head h / (nH/nKV); with prefixes, each row's prefix keys come first),
 * for n <= ATTN_DECODE_MAX_ROWS rows over a KV
 * cache. One workgroup per (row, KV head) serves all nH/nKV query heads of that KV head. splits = 1: one
 * dispatch writing out/lse. splits > 1: each range is cut on the GPU into up to `splits` slices of at
 * least keysPerSplit keys, then attention.split's combine kernel merges them (two dispatches).
 */
export async function attentionDecode(ctx: GpuContext, a: AttentionDecodeArgs): Promise<Dispatch[]> {
  const splits = a.splits ?? 1;
  const keysPerSplit = a.keysPerSplit ?? ATTN_DECODE_SPLIT_KEYS;
  checkDims('attentionDecode', { n: a.n, nHeads: a.nHeads, nKvHeads: a.nKvHeads, headDim: a.headDim, splits, keysPerSplit });
  if (a.n > ATTN_DECODE_MAX_ROWS) throw new Error(`attentionDecode: 'n' is ${a.n}, decode serves at most ${ATTN_DECODE_MAX_ROWS} rows (use attention())`);
  if (a.nHeads % a.nKvHeads !== 0) throw new Error(`attentionDecode: 'nHeads' ${a.nHeads} is not a multiple of 'nKvHeads' ${a.nKvHeads}`);
  if (a.headDim % 4 !== 0 || a.headDim > 4 * ATTN_DECODE_WG) throw new Error(`attentionDecode: 'headDim' must be a multiple of 4 up to ${4 * ATTN_DECODE_WG}, got ${a.headDim}`);
  if (splits > ATTN_MAX_SPLITS) throw new Error(`attentionDecode: 'splits' ${splits} exceeds ${ATTN_MAX_SPLITS}`);
  if (keysPerSplit % 64 !== 0) throw new Error(`attentionDecode: 'keysPerSplit' ${keysPerSplit} is not a multiple of 64`);
  const group = a.nHeads / a.nKvHeads;
  const wgBytes = attentionDecodeWorkgroupBytes({ group, headDim: a.headDim });
  const limit = ctx.caps.limits.maxComputeWorkgroupStorageSize;
  if (wgBytes > limit) {
    throw new Error(`attentionDecode: nHeads/nKvHeads = ${group} query heads per KV head at headDim ${a.headDim} need ${wgBytes} bytes of workgroup memory, the device allows ${limit}`);
  }
  const qd = a.nHeads * a.headDim * 4;
  needBytes('q', a.q, a.n * qd);
  needBytes('ranges', a.ranges, a.n * 8);
  if (a.prefixes) needBytes('prefixes', a.prefixes, a.n * 8);
  needBytes('out', a.out, a.n * qd);
  needBytes('lse', a.lse, a.n * a.nHeads * 4);
  const split = splits > 1;
  if (split) {
    if (!a.partials) throw new Error(`attentionDecode: 'partials' scratch is required when splits = ${splits} > 1`);
    needBytes('partials', a.partials, attentionDecodePartialsBytes(a.n, a.nHeads, a.headDim, splits));
  }
  const subgroups = ctx.caps.subgroups && a.subgroups !== false;
  const prefixed = !!a.prefixes;
  const name = `attention_decode_g${group}_hd${a.headDim}${split ? '_split' : ''}${subgroups ? '_sg' : ''}${prefixed ? '_pre' : ''}`;
  const pipeline = await getPipeline(ctx, name, attentionDecodeWgsl({ group, headDim: a.headDim, subgroups, split, prefixed }));
  const pre = a.prefixes ? [a.prefixes] : [];
  // The combine kernel reads the same fields (it slices each range the same way from splits and minKeys).
  const dims = splitDimsUniform(ctx, 'attentionDecode.dims', a, splits, keysPerSplit);
  const groups = a.n * a.nKvHeads * splits;
  if (!split) {
    return [{ pipeline, buffers: [a.q, a.k, a.v, a.ranges, a.out, a.lse, dims, ...pre], workgroups: grid1d(ctx, groups), label: name }];
  }
  const partials = a.partials as GPUBuffer;
  return [
    { pipeline, buffers: [a.q, a.k, a.v, a.ranges, partials, dims, ...pre], workgroups: grid1d(ctx, groups), label: name },
    await splitCombineDispatch(ctx, a, partials, dims, a.prefixes),
  ];
}

import type { GpuContext } from '../../gpu/device';
import { getPipeline, grid1d, type Dispatch } from '../../gpu/pipelines';
import { checkDims, paramsUniform } from '../common/params';
import type { AttentionArgs } from './attention';
import { ATTN_TRAIN_TILES, attentionTrainTileBytes, attentionTrainWgsl } from './attention.train.wgsl';

export const ATTN_TRAIN_MAX_HD = 256;

/**
 * attention() (same buffers, same results to f32 rounding) as tiles of T query pairs x T keys: for the
 * training forward of packed sequences, where many rows share keys. `tile` defaults to the largest of 16,
 * 8, 4 whose workgroup memory the device holds.
 */
export async function attentionTrain(ctx: GpuContext, a: AttentionArgs & { tile?: (typeof ATTN_TRAIN_TILES)[number] }): Promise<Dispatch> {
  checkDims('attentionTrain', { n: a.n, nHeads: a.nHeads, nKvHeads: a.nKvHeads, headDim: a.headDim });
  if (a.nHeads % a.nKvHeads !== 0) throw new Error(`attentionTrain: nHeads ${a.nHeads} is not a multiple of nKvHeads ${a.nKvHeads}`);
  if (a.headDim > ATTN_TRAIN_MAX_HD) throw new Error(`attentionTrain: headDim ${a.headDim} exceeds ${ATTN_TRAIN_MAX_HD}`);
  const limit = ctx.caps.limits.maxComputeWorkgroupStorageSize;
  const t = a.tile ?? ATTN_TRAIN_TILES.find((x) => attentionTrainTileBytes(a.headDim, x) <= limit);
  if (t === undefined) throw new Error(`attentionTrain: head dim ${a.headDim} needs ${attentionTrainTileBytes(a.headDim, 4)} bytes of workgroup memory; the device allows ${limit}`);
  if (!(ATTN_TRAIN_TILES as readonly number[]).includes(t)) throw new Error(`attentionTrain: tile ${t} is not one of ${ATTN_TRAIN_TILES.join(', ')}`);
  const pipeline = await getPipeline(ctx, 'attention_train', attentionTrainWgsl(a.headDim, t));
  const dims = paramsUniform(ctx, 'attentionTrain.dims', [
    ['u32', a.n],
    ['u32', a.nHeads],
    ['u32', a.nKvHeads],
    ['u32', a.headDim],
    ['f32', 1 / Math.sqrt(a.headDim)],
  ]);
  const group = a.nHeads / a.nKvHeads;
  return { pipeline, buffers: [a.q, a.k, a.v, a.ranges, a.out, a.lse, dims], workgroups: grid1d(ctx, Math.ceil((a.n * group) / t) * a.nKvHeads), label: 'attention_train' };
}

import type { GpuContext } from '../../gpu/device';
import { getPipeline, grid1d, type Dispatch } from '../../gpu/pipelines';
import { checkDims, paramsUniform } from '../common/params';
import type { EmbeddingArgs } from '../embedding/embedding';
import { q4PathName } from './q4.wgsl';
import { Q4_EMBEDDING_WG, q4EmbeddingWgsl } from './q4embedding.wgsl';
import { checkQ4Weight, q4Path, type Q4Weight } from './q4weight';

/** EmbeddingArgs with a 4-bit table. */
export interface Q4EmbeddingArgs extends Omit<EmbeddingArgs, 'E'> {
  /** 4-bit [rowCount, H] from E.rowBase: rows rowOffset .. rowOffset+rowCount of the full [V, H] table. */
  E: Q4Weight;
}

/**
 * x[n] = deq(E)[ids[n]] for the ids in rowOffset .. rowOffset+rowCount; ids >= vocab give zeros, other rows
 * are left untouched. Buffers: E q_weight u32 [*, H/8] + q_scale [*, H/32], ids u32 [N], x f32 [N, H].
 */
export async function q4Embedding(ctx: GpuContext, a: Q4EmbeddingArgs): Promise<Dispatch> {
  const rowOffset = a.rowOffset ?? 0;
  const rowCount = a.rowCount ?? a.vocab - rowOffset;
  checkDims('q4Embedding', { n: a.n, hidden: a.hidden, vocab: a.vocab, rowOffset, rowCount }, ['rowOffset']);
  if (rowOffset + rowCount > a.vocab) throw new Error(`q4Embedding: chunk rows ${rowOffset}+${rowCount} exceed vocab ${a.vocab}`);
  checkQ4Weight('q4Embedding', a.E, a.hidden, rowCount);
  if (a.ids.size < a.n * 4) throw new Error(`q4Embedding: ids ('${a.ids.label}') is smaller than [${a.n}] u32`);
  if (a.x.size < a.n * a.hidden * 4) throw new Error(`q4Embedding: x ('${a.x.label}') is smaller than [${a.n}, ${a.hidden}] f32`);
  const p = q4Path(ctx, a.E);
  const name = `q4_embedding_${q4PathName(p)}`;
  const pipeline = await getPipeline(ctx, name, q4EmbeddingWgsl(p));
  const dims = paramsUniform(ctx, 'q4Embedding.dims', [
    ['u32', a.n], ['u32', a.hidden], ['u32', rowOffset], ['u32', rowCount], ['u32', a.vocab], ['u32', a.E.rowBase ?? 0],
  ]);
  return {
    pipeline,
    buffers: [a.E.qWeight, a.E.qScale, a.ids, a.x, dims],
    workgroups: grid1d(ctx, Math.ceil((a.n * a.hidden) / 8 / Q4_EMBEDDING_WG)),
    label: name,
  };
}

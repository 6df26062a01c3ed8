import type { GpuContext } from '../../gpu/device';
import { getPipeline, grid1d, type Dispatch } from '../../gpu/pipelines';
import { checkDims, paramsUniform } from '../common/params';
import { EMBEDDING_WG, embeddingWgsl } from './embedding.wgsl';

export interface EmbeddingArgs {
  /** f16 bits [rowCount, H]: rows rowOffset .. rowOffset+rowCount of the full [V, H] table. */
  E: GPUBuffer;
  /** u32 [N] token ids. */
  ids: GPUBuffer;
  /** f32 [N, H] output; rows whose id is outside this chunk are left untouched. */
  x: GPUBuffer;
  n: number;
  hidden: number;
  /** Full vocabulary size V: ids >= V are written as zeros. */
  vocab: number;
  /** First table row held by `E` (default 0). */
  rowOffset?: number;
  /** Rows held by `E` (default vocab - rowOffset). */
  rowCount?: number;
}

/**
 * Embedding lookup for one row chunk of the table: x[n] = E[ids[n]] where rowOffset <= ids[n] < rowOffset+rowCount.
 * Buffers: E f16 [rowCount, H], ids u32 [N], x f32 [N, H]. Dispatch once per chunk to fill x.
 */
export async function embedding(ctx: GpuContext, a: EmbeddingArgs): Promise<Dispatch> {
  const rowOffset = a.rowOffset ?? 0;
  const rowCount = a.rowCount ?? a.vocab - rowOffset;
  checkDims('embedding', { n: a.n, hidden: a.hidden, vocab: a.vocab, rowOffset, rowCount }, ['rowOffset']);
  if (rowOffset + rowCount > a.vocab) throw new Error(`embedding: chunk rows ${rowOffset}+${rowCount} exceed vocab ${a.vocab}`);
  const pipeline = await getPipeline(ctx, `embedding_${ctx.caps.f16 ? 'f16' : 'packed'}`, embeddingWgsl({ f16: ctx.caps.f16 }));
  const dims = paramsUniform(ctx, 'embedding.dims', [['u32', a.n], ['u32', a.hidden], ['u32', rowOffset], ['u32', rowCount], ['u32', a.vocab]]);
  return { pipeline, buffers: [a.E, a.ids, a.x, dims], workgroups: grid1d(ctx, Math.ceil((a.n * a.hidden) / EMBEDDING_WG)), label: 'embedding' };
}

/** CPU-side check the engine runs before uploading ids: names the first bad id and its position. */
export function validateTokenIds(ids: ArrayLike<number>, vocab: number, what = 'token ids'): void {
  for (let i = 0; i < ids.length; i++) {
    const id = ids[i];
    if (!Number.isInteger(id) || id < 0 || id >= vocab) {
      throw new Error(`${what}: id ${id} at position ${i} is outside the vocabulary [0, ${vocab})`);
    }
  }
}

// Keys and values of every layer for one sequence being generated: [maxCtx, nKV*hd] f32 per layer, row
// p holding position p (after RoPE for keys). Prefill writes rows 0..P-1, each decode step one row.
import type { GpuContext } from '../gpu/device';
import { createStorageChecked } from '../gpu/buffers';
import type { Qwen2Config } from '../io/qwen2-config';
import { ATTN_SPLIT_MAX_ROWS, attentionPartialsBytes, splitAttentionPays } from '../kernels/attention/attention.split';
import { ATTN_DECODE_MAX_ROWS } from '../kernels/attention/attention.decode';

export class KvCache {
  /** Rows filled so far (the next position to write). */
  length = 0;
  private constructor(
    readonly maxCtx: number,
    readonly k: GPUBuffer[],
    readonly v: GPUBuffer[],
    readonly rowBytes: number,
    readonly bytes: number,
    /**
     * Scratch of split-K decode attention (each head's keys spread over workgroups) when the cache is long
     * enough for it to pay, else null; sized for the query rows of a split call (ATTN_SPLIT_MAX_ROWS) or of a
     * decode step (ATTN_DECODE_MAX_ROWS), whichever is more, and shared by every
     * layer (their dispatches run in order). Owned here so it is counted and freed with the cache.
     */
    readonly partials: GPUBuffer | null,
  ) {}

  static async create(ctx: GpuContext, config: Qwen2Config, maxCtx: number): Promise<KvCache> {
    if (!Number.isInteger(maxCtx) || maxCtx < 1) throw new Error(`KV cache: context length must be a positive integer, got ${maxCtx}`);
    const rowBytes = config.numKvHeads * config.headDim * 4;
    const k: GPUBuffer[] = [];
    const v: GPUBuffer[] = [];
    let partials: GPUBuffer | null = null;
    const partialsBytes = splitAttentionPays(1, maxCtx) ? attentionPartialsBytes(Math.max(ATTN_SPLIT_MAX_ROWS, ATTN_DECODE_MAX_ROWS), config.numHeads, config.headDim, maxCtx) : 0;
    try {
      for (let l = 0; l < config.numLayers; l++) {
        k.push(await createStorageChecked(ctx, `kv.k.${l}`, maxCtx * rowBytes));
        v.push(await createStorageChecked(ctx, `kv.v.${l}`, maxCtx * rowBytes));
      }
      if (partialsBytes > 0) partials = await createStorageChecked(ctx, 'kv.attention-partials', partialsBytes);
    } catch (e) {
      for (const b of [...k, ...v]) b.destroy();
      throw e;
    }
    return new KvCache(maxCtx, k, v, rowBytes, 2 * config.numLayers * maxCtx * rowBytes + partialsBytes, partials);
  }

  destroy(): void {
    for (const b of [...this.k, ...this.v]) b.destroy();
    this.partials?.destroy();
  }
}

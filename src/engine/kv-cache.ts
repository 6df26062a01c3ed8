// Keys and values of every layer for one sequence being generated: [maxCtx, nKV*hd] f32 per layer, row
// p holding position p (after RoPE for keys). Prefill writes rows 0..P-1, each decode step one row.
import type { GpuContext } from '../gpu/device';
import { createStorageChecked } from '../gpu/buffers';
import type { Qwen2Config } from './io/config';

export class KvCache {
  /** Rows filled so far (the next position to write). */
  length = 0;
  private constructor(
    readonly maxCtx: number,
    readonly k: GPUBuffer[],
    readonly v: GPUBuffer[],
    readonly rowBytes: number,
    readonly bytes: number,
  ) {}

  static async create(ctx: GpuContext, config: Qwen2Config, maxCtx: number): Promise<KvCache> {
    if (!Number.isInteger(maxCtx) || maxCtx < 1) throw new Error(`KV cache: context length must be a positive integer, got ${maxCtx}`);
    const rowBytes = config.numKvHeads * config.headDim * 4;
    const k: GPUBuffer[] = [];
    const v: GPUBuffer[] = [];
    try {
      for (let l = 0; l < config.numLayers; l++) {
        k.push(await createStorageChecked(ctx, `kv.k.${l}`, maxCtx * rowBytes));
        v.push(await createStorageChecked(ctx, `kv.v.${l}`, maxCtx * rowBytes));
      }
    } catch (e) {
      for (const b of [...k, ...v]) b.destroy();
      throw e;
    }
    return new KvCache(maxCtx, k, v, rowBytes, 2 * config.numLayers * maxCtx * rowBytes);
  }

  destroy(): void {
    for (const b of [...this.k, ...this.v]) b.destroy();
  }
}

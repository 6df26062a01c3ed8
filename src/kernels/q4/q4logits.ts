import type { GpuContext } from '../../gpu/device';
import type { Dispatch } from '../../gpu/pipelines';
import { lmHeadMatmulArgs, type LmHeadArgs } from '../logits/logits';
import { q4Matmul } from './q4matmul';
import type { Q4Weight } from './q4weight';

/** LmHeadArgs with a 4-bit head (the tied, quantized embedding). */
export interface Q4LmHeadArgs extends Omit<LmHeadArgs, 'E'> {
  /**
   * 4-bit vocabulary rows rowOffset .. rowOffset+rowCount, starting at E.rowBase of its buffers. A whole
   * q4 Qwen2.5-0.5B table (68 MiB + 4 MiB of scales) fits one binding, so pass `{ ...E, rowBase: rowOffset }`
   * to take a window of it without copying.
   */
  E: Q4Weight;
  subgroups?: boolean;
}

/**
 * LM head for one vocabulary window: logits[r, colOffset + j] = x[r] · deq(E)[j] for j < rowCount.
 * Buffers: x f32 [rows, H], E 4-bit, logits f32 [rows, ld]. rows <= Q4_SMALL_N (decode) reads each word once.
 */
export function q4LmHead(ctx: GpuContext, a: Q4LmHeadArgs): Promise<Dispatch> {
  return q4Matmul(ctx, { ...lmHeadMatmulArgs(a), subgroups: a.subgroups });
}

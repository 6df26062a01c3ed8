// Packing whole sequences into one batch of rows without padding between them (LAYOUTS.md): row r
// holds one token, its position within its sequence, the key range it attends ([first row of its
// sequence, r + 1)) and its target (the next token of its sequence, or 0 on a sequence's last row).
// Rows past the sequences are padding that attends only to itself.
import type { GpuContext } from '../gpu/device';
import { writeBuffer } from '../gpu/buffers';
import type { ActivationPlan } from '../model/activations';

export interface PackedBatch {
  /** Rows the kernels run over (>= the tokens; the rest is padding). */
  rows: number;
  /** Real token rows. */
  tokens: number;
  ids: Uint32Array;
  pos: Uint32Array;
  ranges: Uint32Array;
  targets: Uint32Array;
  /** First row of each sequence. */
  starts: number[];
  lengths: number[];
}

export function packSequences(seqs: number[][], rows: number): PackedBatch {
  const tokens = seqs.reduce((a, s) => a + s.length, 0);
  if (tokens > rows) throw new Error(`packSequences: ${tokens} tokens do not fit in ${rows} rows`);
  const ids = new Uint32Array(rows);
  const pos = new Uint32Array(rows);
  const ranges = new Uint32Array(rows * 2);
  const targets = new Uint32Array(rows);
  const starts: number[] = [];
  let r = 0;
  for (const s of seqs) {
    starts.push(r);
    const start = r;
    s.forEach((id, t) => {
      ids[r] = id;
      pos[r] = t;
      ranges[2 * r] = start;
      ranges[2 * r + 1] = r + 1;
      targets[r] = t + 1 < s.length ? s[t + 1] : 0;
      r++;
    });
  }
  for (; r < rows; r++) {
    ranges[2 * r] = r;
    ranges[2 * r + 1] = r + 1;
  }
  return { rows, tokens, ids, pos, ranges, targets, starts, lengths: seqs.map((s) => s.length) };
}

export function writeBatch(ctx: GpuContext, plan: ActivationPlan, b: PackedBatch): void {
  if (b.rows > plan.rows) throw new Error(`batch of ${b.rows} rows does not fit a plan of ${plan.rows}`);
  writeBuffer(ctx, plan.ids, b.ids);
  writeBuffer(ctx, plan.pos, b.pos);
  writeBuffer(ctx, plan.ranges, b.ranges);
  writeBuffer(ctx, plan.targets, b.targets);
}

/** Per-sequence next-token logprobs (length len-1) from the per-row values of a packed batch. */
export function unpackLogprobs(b: PackedBatch, perRow: ArrayLike<number>): number[][] {
  return b.starts.map((start, i) => Array.from({ length: Math.max(0, b.lengths[i] - 1) }, (_, t) => perRow[start + t]));
}

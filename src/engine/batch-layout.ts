// Where generateBatch puts each sequence in the KV cache. Every sequence owns a region for its prompt and
// the tokens it may generate. On the fused 4-bit decode, whose attention can read each row's keys as two
// ranges (attention.decode.wgsl.ts: a shared prefix, then the row's own), the prompt prefix all the
// sequences share (a Flow-GRPO group's rollouts share at least the system prompt, tool cards and query)
// is stored once, so a group fits the cache with far fewer rows:
//
//   [0, prompt_0 + maxNew_0)                  sequence 0, whole (its first `shared` rows are the prefix)
//   [base_b, base_b + rows_b - shared)         sequence b >= 1 from position `shared` on
//   [staging, staging + max prompt_b)          where b >= 1 are prefilled: behind a copy of the prefix, so
//                                              the prefill attends one contiguous range; then moved
//
// Sequence 0 stays where a lone generate() would leave it (the next turn can reuse it).

/** What the layout needs of a checked request. */
export interface LayoutRequest {
  prompt: number[];
  /** prompt + maxNew: the rows it may fill. */
  rows: number;
  /** false: the request wants nothing reused; it shares nothing either. */
  reusePrefix?: boolean;
}

export interface BatchLayout {
  /** Prompt tokens the sequences share, stored once at rows [0, shared) (0: each region is whole). */
  shared: number;
  /** Sequence b's position p is at cache row bases[b] + p - offsets[b] (offsets: 0 or shared). */
  bases: number[];
  offsets: number[];
  /** First row of the staging area (-1 when nothing is shared). */
  staging: number;
  /** Rows the batch uses. */
  rows: number;
}

/** Shorter shared prefixes are not worth a staged prefill and the two copies per sequence. */
export const MIN_SHARED_PREFIX = 16;

/** Tokens every prompt starts with, short of each one's last token (which runs for its logits). */
export function commonPrefix(prompts: number[][]): number {
  let n = Math.min(...prompts.map((p) => p.length - 1));
  for (let i = 1; i < prompts.length; i++) {
    let k = 0;
    while (k < n && prompts[i][k] === prompts[0][k]) k++;
    n = k;
  }
  return Math.max(0, n);
}

/** Each request its own whole region, one after the other. */
function plainLayout(reqs: LayoutRequest[]): BatchLayout {
  const bases: number[] = [];
  let rows = 0;
  for (const r of reqs) {
    bases.push(rows);
    rows += r.rows;
  }
  return { shared: 0, bases, offsets: reqs.map(() => 0), staging: -1, rows };
}

/**
 * The layout of a batch: with `canShare` (the decode reads two key ranges) and a common prefix of at least
 * MIN_SHARED_PREFIX tokens that saves rows, the prefix is stored once; otherwise every region is whole.
 */
export function batchLayout(reqs: LayoutRequest[], canShare: boolean): BatchLayout {
  const plain = plainLayout(reqs);
  if (!canShare || reqs.length < 2 || reqs.some((r) => r.reusePrefix === false)) return plain;
  const shared = commonPrefix(reqs.map((r) => r.prompt));
  if (shared < MIN_SHARED_PREFIX) return plain;
  const bases = [0];
  let rows = reqs[0].rows;
  for (const r of reqs.slice(1)) {
    bases.push(rows);
    rows += r.rows - shared;
  }
  const staging = rows;
  rows += Math.max(...reqs.slice(1).map((r) => r.prompt.length));
  if (rows >= plain.rows) return plain;
  return { shared, bases, offsets: reqs.map((_, b) => (b === 0 ? 0 : shared)), staging, rows };
}

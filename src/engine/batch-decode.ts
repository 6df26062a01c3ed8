// The decode loops of generateBatch, over rows that are sequences decoded in lockstep (one forward of all
// the rows still going per step; the runtime's BatchHost.step runs it). Two ways to take each row's token,
// as generate() has for one sequence:
// - in step: the CPU draws every row's token from its GPU candidates, one round trip per step for all rows;
// - ahead: every row's token is drawn on the GPU (gpu-draw.wgsl.ts) by one set of sampler dispatches over
//   all the step's logits rows (one per distinct sampling options), written straight into the next step's
//   ids, so steps are submitted up to DECODE_AHEAD ahead of the tokens read back. A draw the GPU leaves
//   undecided is redone on the CPU from the same uniform after recomputing that step for the rows concerned.
// Each row draws its uniforms from its own Rng in token order on both paths, and rows never see each
// other's values, so every row gets the tokens generate() gives its sequence alone.
import type { GpuContext } from '../gpu/device';
import { readBuffer } from '../gpu/buffers';
import { DRAW_LOG_WORDS, parseDrawLog, type GpuSampler } from '../kernels/sampling/sampling';
import { acceptToken, DECODE_AHEAD, REDRAW_WINDOW, type DecodeLoop } from './decode-loop';

/** A row's own buffers for draws on the CPU, kept by the runtime across batches. */
export interface BatchSlot {
  /** f32 [V]: the logits its sampler reads (a sampler reads the first row of its buffer). */
  logits: GPUBuffer;
  sampler: GpuSampler;
}

export interface BatchRow {
  /** The request's index in the batch: its entry in each step of the draw log. */
  b: number;
  l: DecodeLoop;
  slot: BatchSlot;
  /**
   * Where its positions are in the KV cache (batch-layout.ts): positions below `offset` are the prompt head
   * it shares, at rows [0, offset); position p >= offset is at row base + p - offset.
   */
  base: number;
  offset: number;
  /** us[i]: the uniform of token i, drawn from l.rng in token order when first needed. */
  us: number[];
  done: boolean;
}

export interface BatchHost {
  ctx: GpuContext;
  vocab: number;
  /** Draw log, DRAW_LOG_WORDS u32 per entry; row b's draw of token i is entry i * maxRows + b. */
  drawLog: GPUBuffer;
  maxRows: number;
  /**
   * One submission: the logits of token i of every row (its token i - 1 run at its position; the ids from
   * the rows' l.tokens, or from the previous step's GPU draws). With `us`, row j's token i is then drawn
   * on the GPU with uniform us[j] (log entry i * maxRows + b); without, the logits go to the rows' slots
   * for the CPU.
   */
  step(rows: BatchRow[], i: number, ids: 'cpu' | 'gpu', us?: number[]): Promise<void>;
  unlessLost<T>(p: Promise<T>, doing: string): Promise<T>;
}

const uniform = (r: BatchRow, i: number) => (r.us[i] ??= (r.l.o.temperature ?? 0) === 0 ? 0 : r.l.rng.next());

/** Decodes the rows (their first logits already in their slots) until each one stops. */
export async function decodeRows(h: BatchHost, rows: BatchRow[], ahead: boolean): Promise<void> {
  // The first token of each comes from its prefill's logits, drawn on the CPU.
  await drawInStep(h, rows);
  let live = rows.filter((r) => !r.done);
  if (ahead && live.length) live = await decodeAhead(h, live);
  while (live.length) {
    await h.step(live, live[0].l.tokens.length, 'cpu');
    await drawInStep(h, live);
    live = live.filter((r) => !r.done);
  }
}

/** Every row's token from the logits in its slot, drawn on the CPU (their read-backs overlap). */
async function drawInStep(h: BatchHost, rows: BatchRow[]): Promise<void> {
  const drawn = await Promise.all(
    rows.map(async (r) => {
      if (r.l.o.onLogits) r.l.o.onLogits(new Float32Array(await h.unlessLost(readBuffer(h.ctx, r.slot.logits, h.vocab * 4), 'reading logits')));
      return h.unlessLost(r.slot.sampler.sampleWithU(r.l.o, uniform(r, r.l.tokens.length)), 'sampling');
    }),
  );
  rows.forEach((r, j) => {
    if (!acceptToken(r.l, drawn[j].token, drawn[j].logprob)) r.done = true;
  });
}

/**
 * The GPU-draw loop from token 1 on (every row has taken token 0, all rows in lockstep). Returns the rows
 * still going if too many draws needed the CPU (flat rows: in step is then cheaper), else none.
 */
async function decodeAhead(h: BatchHost, rows: BatchRow[]): Promise<BatchRow[]> {
  const stepBytes = h.maxRows * DRAW_LOG_WORDS * 4;
  const limit = Math.max(...rows.map((r) => r.l.maxNew));
  const reads: Array<Promise<ArrayBuffer>> = [];
  const ran: BatchRow[][] = [];
  const redrawnAt: number[] = [];
  // Token 0 was drawn on the CPU, so the first step takes its ids from there.
  let ids: 'cpu' | 'gpu' = 'cpu';
  // Step i: the forward of token i - 1 of every row that may still need token i, then their draws.
  const submit = async (i: number) => {
    const rs = rows.filter((r) => !r.done && i < r.l.maxNew);
    ran[i] = rs;
    await h.step(rs, i, ids, rs.map((r) => uniform(r, i)));
    ids = 'gpu';
    const read = readBuffer(h.ctx, h.drawLog, stepBytes, i * stepBytes);
    // A read abandoned after the rows stopped must not surface as an unhandled rejection.
    read.catch(() => undefined);
    reads[i] = read;
  };
  let next = 1;
  for (let i = 1; i < limit; i++) {
    if (rows.every((r) => r.done)) break;
    while (next < limit && next <= i + DECODE_AHEAD && rows.some((r) => !r.done && next < r.l.maxNew)) await submit(next++);
    const rs = (ran[i] ?? []).filter((r) => !r.done);
    if (!rs.length) continue;
    const words = await h.unlessLost(reads[i], 'decoding a batch');
    const undecided: BatchRow[] = [];
    for (const r of rs) {
      const e = parseDrawLog(words, r.b);
      if (e.undecided) undecided.push(r);
      else if (!acceptToken(r.l, e.token, e.logit - e.lse1)) r.done = true;
    }
    if (!undecided.length) continue;
    // Steps after i ran on provisional tokens for these rows: let them finish, recompute step i for these
    // rows (the cache rows it reads are unchanged; its own K/V row is rewritten with the same values),
    // draw on the CPU with the same uniforms, and submit again from step i + 1 with ids from the CPU. The
    // other rows' later steps are redone with the same uniforms and inputs, so they give the same tokens.
    await Promise.allSettled(reads.slice(i + 1, next));
    await h.step(undecided, i, 'cpu');
    const drawn = await Promise.all(undecided.map((r) => h.unlessLost(r.slot.sampler.sampleWithU(r.l.o, r.us[i]), 'sampling')));
    undecided.forEach((r, j) => {
      r.l.redrawn++;
      if (!acceptToken(r.l, drawn[j].token, drawn[j].logprob)) r.done = true;
    });
    next = i + 1;
    ids = 'cpu';
    redrawnAt.push(i);
    if (redrawnAt.filter((j) => j > i - REDRAW_WINDOW).length >= REDRAW_WINDOW / 2) return rows.filter((r) => !r.done);
  }
  return rows.filter((r) => !r.done);
}

// The one decode loop, for generate() (a batch of one) and generateBatch (rows that are sequences decoded
// in lockstep: one forward of all the rows still going per step; the runtime's BatchHost.step runs it).
// Two ways to take each row's token:
// - in step: the CPU draws every row's token from its GPU candidates, one round trip per step for all rows;
// - ahead: every row's token is drawn on the GPU (gpu-draw.wgsl.ts) by one set of sampler dispatches over
//   all the step's logits rows (one per distinct sampling options), written straight into the next step's
//   ids, so steps are submitted up to DECODE_AHEAD ahead of the tokens read back. A draw the GPU leaves
//   undecided is redone on the CPU from the same uniform after recomputing that step for the rows
//   concerned; once half the latest REDRAW_WINDOW steps needed that, decoding goes on in step.
// Each row draws its uniforms from its own Rng in token order on both paths, and rows never see each
// other's values, so every row gets the tokens generate() gives its sequence alone.
import type { GpuContext } from '../gpu/device';
import { readBuffer } from '../gpu/buffers';
import { DRAW_LOG_WORDS, parseDrawLog, type GpuSampler } from '../kernels/sampling/sampling';
import { acceptToken, DECODE_AHEAD, REDRAW_WINDOW, type DecodeLoop } from './decode-loop';
import { unlessStalled } from './decode-stall';
import { logSumExp } from '../kernels/sampling/draw';
import { drawMasked } from './grammar/masked-draw';

/** Logits for a draw on the CPU: a sampler reads the first row of its buffer. */
export interface BatchSlot {
  /** f32 [>= V]: the logits its sampler reads. */
  logits: GPUBuffer;
  sampler: GpuSampler;
}

export interface BatchRow {
  /** The request's index in the batch: its entry in each step of the draw log. */
  b: number;
  l: DecodeLoop;
  /** Its own logits buffer for draws on the CPU (a batch's rows; a batch of one needs none). */
  slot?: BatchSlot;
  /**
   * Where its next token's logits are for a draw on the CPU: first the prefill's (a batch of one) or its
   * own slot they were copied to; after a step on the CPU, row 0 of the decode plan for the step's first
   * row, else its own slot (BatchHost.step).
   */
  at: BatchSlot;
  /**
   * Where its positions are in the KV cache (batch-layout.ts): positions below `offset` are the prompt head
   * it shares, at rows [0, offset); position p >= offset is at row base + p - offset.
   */
  base: number;
  offset: number;
  /** us[i]: the uniform of token i, drawn from l.rng in token order when first needed. */
  us: number[];
  done: boolean;
  /**
   * Its next token's logits are already at `at` (forced tokens were appended, their forward gave them):
   * the next in-step round draws without a step for it.
   */
  ready?: boolean;
}

export interface BatchHost {
  ctx: GpuContext;
  vocab: number;
  /** Draw log, DRAW_LOG_WORDS u32 per entry; row b's draw of token i is entry i * stride + b. */
  drawLog: GPUBuffer;
  /** Draw-log entries per step: the batch's rows. */
  stride: number;
  /** What a lost device interrupted, for its error ('decoding', 'decoding a batch'). */
  doing: string;
  /**
   * Whether token 0 is drawn on the GPU where the prefill left its logits (a batch of one: a batch's
   * earlier prefills are overwritten by the later ones, so their logits wait in the rows' slots).
   */
  firstOnGpu: boolean;
  /**
   * One submission: the logits of token i of every row (its token i - 1 run at its position; the ids from
   * the rows' l.tokens, or from the previous step's GPU draws). With `us`, row j's token i is then drawn
   * on the GPU with uniform us[j] (log entry i * stride + b); without, each row's `at` is set to where its
   * logits are for the CPU. Step 0 (firstOnGpu only) runs no forward: it draws from the prefill's logits.
   */
  step(rows: BatchRow[], i: number, ids: 'cpu' | 'gpu', us?: number[]): Promise<void>;
  unlessLost<T>(p: Promise<T>, doing: string): Promise<T>;
  /** How long one wait for a GPU read may last before the decode fails (decode-stall.ts). */
  stallMs: number;
  /**
   * Runs `run` (tokens of row r at positions start..) into its region of the cache in one forward, sets
   * r.at to the last one's logits, and returns log p(run[j + 1]) for j < run.length - 1.
   */
  append(r: BatchRow, run: number[], start: number): Promise<Float32Array>;
  /** Most tokens one append takes (its logprob rows). */
  maxAppend: number;
}

/** `p` (a GPU read), failing if the device is lost or the read is still pending after h.stallMs. */
function settled<T>(h: BatchHost, p: Promise<T>, doing: string, waitedFor: () => string): Promise<T> {
  return unlessStalled(h.unlessLost(p, doing), h.stallMs, waitedFor, h.doing);
}

const rowList = (rows: BatchRow[]) => `row${rows.length > 1 ? 's' : ''} ${rows.map((r) => r.b).join(', ')}`;

const uniform = (r: BatchRow, i: number) => (r.us[i] ??= (r.l.o.temperature ?? 0) === 0 ? 0 : r.l.rng.next());

/** Decodes the rows (their first logits where their `at` says) until each one stops. */
export async function decodeRows(h: BatchHost, rows: BatchRow[], ahead: boolean): Promise<void> {
  let live = rows;
  const firstOnGpu = ahead && h.firstOnGpu;
  // Otherwise the first token of each comes from its prefill's logits, drawn on the CPU.
  if (!firstOnGpu) {
    await drawInStep(h, live);
    live = live.filter((r) => !r.done);
  }
  if (ahead && live.length) live = await decodeAhead(h, live, firstOnGpu ? 0 : 1);
  while (live.length) {
    // Rows whose forced tokens were just appended have their logits already.
    const stepping = live.filter((r) => !r.ready);
    if (stepping.length) await h.step(stepping, stepping[0].l.tokens.length, 'cpu');
    await drawInStep(h, live);
    live = live.filter((r) => !r.done);
  }
}

/** Every row's token from the logits its `at` holds, drawn on the CPU (their read-backs overlap). */
async function drawInStep(h: BatchHost, rows: BatchRow[]): Promise<void> {
  const free = rows.filter((r) => !r.l.o.constraint);
  await Promise.all([drawFree(h, free), ...rows.filter((r) => r.l.o.constraint).map((r) => drawConstrained(h, r))]);
}

async function drawFree(h: BatchHost, rows: BatchRow[]): Promise<void> {
  const drawn = await Promise.all(
    rows.map(async (r) => {
      const i = r.l.tokens.length;
      if (r.l.o.onLogits) r.l.o.onLogits(new Float32Array(await settled(h, readBuffer(h.ctx, r.at.logits, h.vocab * 4), 'reading logits', () => `the logits of token ${i} (row ${r.b})`)));
      return settled(h, r.at.sampler.sampleWithU(r.l.o, uniform(r, i)), 'sampling', () => `the candidates of token ${i} (row ${r.b})`);
    }),
  );
  rows.forEach((r, j) => {
    if (!acceptToken(r.l, drawn[j].token, drawn[j].logprob)) r.done = true;
  });
}

/**
 * A constrained row's turn: its logits read back whole, then either the tokens its grammar forces now (a
 * reply's opening keys) or a draw among the tokens it allows, followed by any it forces after that draw.
 * Forced tokens are appended in one forward with the drawn token (host.append), whose logits serve the
 * next round; their logprobs are the model's own from that forward (the first's from these logits).
 */
async function drawConstrained(h: BatchHost, r: BatchRow): Promise<void> {
  const c = r.l.o.constraint!;
  const l = r.l;
  const i = l.tokens.length;
  const logits = new Float32Array(await settled(h, readBuffer(h.ctx, r.at.logits, h.vocab * 4), 'reading logits', () => `the logits of token ${i} (row ${r.b})`));
  l.o.onLogits?.(logits);
  r.ready = false;
  // The cache holds the row's tokens before i; these logits are token i's.
  const forcedNow = c.forced(Math.min(l.maxNew - i, h.maxAppend));
  if (forcedNow.length) {
    const lps = forcedNow.length > 1 ? await h.append(r, forcedNow, l.prompt.length + i) : null;
    const lse = logSumExp(logits);
    takeForced(r, forcedNow, [logits[forcedNow[0]] - lse, ...(lps ?? [])]);
    // A single forced token was not run: the next step runs it, as a drawn one.
    if (forcedNow.length > 1 && !r.done) r.ready = true;
    return;
  }
  const mask = await c.allowedMask();
  const d = drawMasked(logits, mask, l.o, uniform(r, i));
  if (!c.accept(d.token)) throw new Error(`constrained decode: the grammar rejected token ${d.token}, which its own mask allowed (row ${r.b})`);
  if (!acceptToken(l, d.token, d.logprob)) {
    r.done = true;
    return;
  }
  const after = c.forced(Math.min(l.maxNew - l.tokens.length, h.maxAppend));
  if (!after.length) return;
  const lps = await h.append(r, [d.token, ...after], l.prompt.length + i);
  takeForced(r, after, Array.from(lps));
  if (!r.done) r.ready = true;
}

function takeForced(r: BatchRow, ids: number[], logprobs: number[]): void {
  for (const [j, id] of ids.entries()) {
    if (!acceptToken(r.l, id, logprobs[j], true)) {
      r.done = true;
      return;
    }
  }
}

/**
 * The GPU-draw loop from token `start` on (every row has taken the tokens before it, all rows in
 * lockstep). Returns the rows still going if too many draws needed the CPU (flat rows: in step is then
 * cheaper), else none.
 */
async function decodeAhead(h: BatchHost, rows: BatchRow[], start: 0 | 1): Promise<BatchRow[]> {
  const stepBytes = h.stride * DRAW_LOG_WORDS * 4;
  const limit = Math.max(...rows.map((r) => r.l.maxNew));
  const reads: Array<Promise<ArrayBuffer>> = [];
  const ran: BatchRow[][] = [];
  const redrawnAt: number[] = [];
  // Token 0 drawn on the CPU: the first step takes its ids from there. Step 0 draws from the prefill's
  // logits and runs no forward, so it reads no ids.
  let ids: 'cpu' | 'gpu' = 'cpu';
  // Step i: the forward of token i - 1 of every row that may still need token i (none for i = 0), then
  // their draws.
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
  let next = start;
  for (let i = start; i < limit; i++) {
    if (rows.every((r) => r.done)) break;
    while (next < limit && next <= i + DECODE_AHEAD && rows.some((r) => !r.done && next < r.l.maxNew)) await submit(next++);
    const rs = (ran[i] ?? []).filter((r) => !r.done);
    if (!rs.length) continue;
    const words = await settled(h, reads[i], h.doing, () => `the draw log of step ${i} (${rowList(rs)})`);
    const undecided: BatchRow[] = [];
    for (const r of rs) {
      const e = parseDrawLog(words, r.b);
      if (e.undecided) undecided.push(r);
      else if (!acceptToken(r.l, e.token, e.logit - e.lse1)) r.done = true;
    }
    if (!undecided.length) continue;
    // Steps after i ran on provisional tokens for these rows: let them finish, recompute step i for these
    // rows (the cache rows it reads are unchanged; its own K/V row is rewritten with the same values;
    // token 0's logits are still the prefill's), draw on the CPU with the same uniforms, and submit again
    // from step i + 1 with ids from the CPU. The other rows' later steps are redone with the same uniforms
    // and inputs, so they give the same tokens.
    await settled(h, Promise.allSettled(reads.slice(i + 1, next)), h.doing, () => `the draw logs of steps ${i + 1} to ${next - 1} (in flight before a redraw)`);
    if (i > 0) await h.step(undecided, i, 'cpu');
    const drawn = await Promise.all(undecided.map((r) => settled(h, r.at.sampler.sampleWithU(r.l.o, r.us[i]), 'sampling', () => `the candidates of token ${i} (row ${r.b}, redrawn)`)));
    undecided.forEach((r, j) => {
      r.l.redrawn++;
      if (!acceptToken(r.l, drawn[j].token, drawn[j].logprob)) r.done = true;
    });
    next = i + 1;
    ids = 'cpu';
    // A top-p nucleus wider than the GPU's candidates (flat rows: random weights, a high temperature) makes
    // every draw undecided, and each costs a drained pipeline plus a recomputed step on top of the whole-row
    // draw the in-step path pays too: when half the recent steps needed one, go on one token per round trip
    // instead. (Pure temperature past the candidates is drawn on the GPU: only near-boundary draws come here.)
    redrawnAt.push(i);
    if (redrawnAt.filter((j) => j > i - REDRAW_WINDOW).length >= REDRAW_WINDOW / 2) return rows.filter((r) => !r.done);
  }
  return rows.filter((r) => !r.done);
}

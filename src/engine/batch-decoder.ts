// Decoding, in one loop: generate() is a batch of one, generateBatch decodes up to maxDecodeRows sequences
// in lockstep (one forward of all the rows still going per step). The decoder owns each request's region of
// the KV cache (batch-layout.ts) and its prefill there, the buffers a batch keeps across calls (per-sequence
// logits slots, cache rows, shared-prefix ranges), each step's submission and the rule every token passes.
// Two ways to take each row's token:
// - in step: the CPU draws every row's token from its GPU candidates, one round trip per step for all rows;
// - ahead: every row's token is drawn on the GPU (gpu-draw.wgsl.ts) by one set of sampler dispatches over
//   all the step's logits rows (one per distinct sampling options), written straight into the next step's
//   ids, so steps are submitted up to DECODE_AHEAD ahead of the tokens read back. A draw the GPU leaves
//   undecided is redone on the CPU from the same uniform after recomputing that step for the rows
//   concerned; once half the latest REDRAW_WINDOW steps needed that, decoding goes on in step.
// Each row draws its uniforms from its own Rng in token order on both paths, and rows never see each
// other's values, so every row gets the tokens generate() gives its sequence alone. A batch of one runs the
// one-row decode at its positions (its region is the cache from row 0) and draws its first token from the
// prefill's logits, so it needs none of a batch's buffers.
import { createStorage, readBuffer, writeBuffer } from '../gpu/buffers';
import { assertDeviceAlive } from '../gpu/device';
import type { Dispatch } from '../gpu/pipelines';
import { ATTN_DECODE_SINGLE_MAX_KEYS } from '../kernels/attention/attention.decode';
import { logSumExp } from '../kernels/sampling/draw';
import { DRAW_LOG_WORDS, gpuDrawServes, parseDrawLog } from '../kernels/sampling/sampling';
import { GpuSampler } from './gpu-sampler';
import type { ActivationPlan } from '../model/activations';
import { recordDecodeForward } from '../model/decode-forward';
import { recordForward, recordLogits } from '../model/forward';
import { dispatchStep, encodeSteps, type Step } from '../model/graph';
import type { KvCache } from '../model/kv-cache';
import { Rng } from '../util/rng';
import { batchLayout, type BatchLayout } from './batch-layout';
import { unlessStalled } from './decode-stall';
import type { CheckedRequest, TokenGeneration } from './generation';
import { submitSteps, unlessLost } from './gpu-calls';
import { drawMasked } from './grammar/masked-draw';
import { NonFiniteLogprob } from './non-finite';
import { appendRun, prefill } from './prefill';
import { decodeRowBucket } from './runtime-options';
import type { RuntimeResources } from './runtime-resources';

/** Decode steps submitted ahead of the last token read back (GPU-drawn tokens only). */
export const DECODE_AHEAD = 3;
/** Decoding goes in-step once half of this many latest tokens had to be redrawn on the CPU. */
export const REDRAW_WINDOW = 8;

/** Logits for a draw on the CPU: a sampler reads the first row of its buffer. */
interface Slot {
  /** f32 [>= V]: the logits its sampler reads. */
  logits: GPUBuffer;
  sampler: GpuSampler;
}

/** One sequence while it decodes: its request, what it has taken so far, where its cache rows and next logits are. */
interface Row extends CheckedRequest {
  /** The request's index in the batch: its entry in each step of the draw log. */
  b: number;
  rng: Rng;
  tokens: number[];
  logprobs: number[];
  /** forced[t]: token t was appended by the constraint's jump-forward, not drawn. */
  forced: boolean[];
  t0: number;
  prefillMs: number;
  t1: number;
  finishReason: TokenGeneration['finishReason'];
  redrawn: number;
  /** Its own logits buffer for draws on the CPU (a batch's rows; a batch of one needs none). */
  slot?: Slot;
  /**
   * Where its next token's logits are for a draw on the CPU: first the prefill's (a batch of one) or its
   * own slot they were copied to; after a step on the CPU, row 0 of the decode plan for the step's first
   * row, else its own slot.
   */
  at: Slot;
  /**
   * Where its positions are in the KV cache (batch-layout.ts): positions below `offset` are the prompt head
   * it shares, at rows [0, offset); position p >= offset is at row base + p - offset.
   */
  base: number;
  offset: number;
  /** us[i]: the uniform of token i, drawn from rng in token order when first needed. */
  us: number[];
  done: boolean;
  /**
   * Its next token's logits are already at `at` (forced tokens were appended, their forward gave them):
   * the next in-step round draws without a step for it.
   */
  ready?: boolean;
}

/** What one batch keeps while it decodes: its plan, cache and step state. */
interface BatchRun {
  decode: ActivationPlan;
  kv: KvCache;
  /**
   * The cache row a batch's padding rows write their K/V to and attend over (the cache's last row, past every
   * region), or -1 when the regions fill the cache: steps then run exactly their sequences' rows.
   */
  padRow: number;
  /** The rows of the last step with GPU draws: their tokens are where the next step reads ids. */
  drawRows: Row[] | null;
  /** A batch of one: the one-row decode at cache row = position, labelled as generate()'s. */
  lone: boolean;
  /** What its submissions are labelled, and a lost device's error says was interrupted. */
  doing: string;
  /** Draw log, DRAW_LOG_WORDS u32 per entry; row b's draw of token i is entry i * stride + b. */
  drawLog: GPUBuffer;
  /** Draw-log entries per step: the batch's rows. */
  stride: number;
}

const now = () => (typeof performance !== 'undefined' ? performance.now() : Date.now());

/** The result of a request that generates nothing (aborted before it began, or maxNewTokens 0). */
export function emptyGeneration(finishReason: 'abort' | 'length'): TokenGeneration {
  return { tokens: [], logprobs: [], finishReason, prefillMs: 0, decodeMs: 0, reusedPrefixTokens: 0, redrawnTokens: 0 };
}

/**
 * Where a batch of these requests goes in the cache. A common prompt head is stored once only on the fused
 * decode and without a constraint (a constrained row appends forced tokens with a prefill, whose attention
 * reads one contiguous key range).
 */
export function layoutOf(reqs: CheckedRequest[], fusedDecode: boolean): BatchLayout {
  const canShare = fusedDecode && !reqs.some((r) => r.o.constraint);
  return batchLayout(
    reqs.map((r) => ({ prompt: r.prompt, rows: r.rows, reusePrefix: r.o.reusePrefix })),
    canShare,
  );
}

/**
 * The longest prompt prefix request b shares with an earlier request of the batch (both allowing prefix
 * reuse), short of b's last token (it runs, for its logits): `from` tokens, copied from request `src` (-1:
 * none).
 */
function sharedPrefix(reqs: CheckedRequest[], b: number): { from: number; src: number } {
  let best = { from: 0, src: -1 };
  if (reqs[b].o.reusePrefix === false) return best;
  const p = reqs[b].prompt;
  for (let a = 0; a < b; a++) {
    if (reqs[a].o.reusePrefix === false) continue;
    const q = reqs[a].prompt;
    const max = Math.min(q.length, p.length - 1);
    let n = 0;
    while (n < max && q[n] === p[n]) n++;
    if (n > best.from) best = { from: n, src: a };
  }
  return best;
}

/**
 * Takes token i, returns whether generation goes on: streams it, then applies EOS, the caller's stop and
 * the abort signal (the same checks, in the same order, on both ways of drawing).
 */
function acceptToken(r: Row, id: number, logprob: number, forced = false): boolean {
  // Finite logits always give a finite log-prob: this token was drawn from activations that overflowed f32.
  if (!Number.isFinite(logprob)) throw new NonFiniteLogprob(r.prompt.concat(r.tokens), r);
  if (r.tokens.length === 0) {
    r.prefillMs = now() - r.t0;
    r.t1 = now();
  }
  r.tokens.push(id);
  r.logprobs.push(logprob);
  r.forced.push(forced);
  const userStop = r.o.onToken?.(id, logprob) === true;
  // A grammar that terminated allows nothing more (it ends on one of the stop ids, so this is a safeguard).
  if (r.stop.has(id) || userStop || r.o.constraint?.terminated) {
    r.finishReason = 'stop';
    return false;
  }
  if (r.o.signal?.aborted) {
    r.finishReason = 'abort';
    return false;
  }
  return r.tokens.length < r.maxNew;
}

/** Takes forced tokens (jump-forward) until one ends the row. */
function takeForced(r: Row, ids: number[], logprobs: number[]): void {
  for (const [j, id] of ids.entries()) {
    if (!acceptToken(r, id, logprobs[j], true)) {
      r.done = true;
      return;
    }
  }
}

/** A finished row's result; `reused` prompt tokens came from the KV cache. */
function generationOf(r: Row, reused: number): TokenGeneration {
  const { tokens, logprobs, prefillMs, t1, finishReason, redrawn } = r;
  const g: TokenGeneration = { tokens, logprobs, finishReason, prefillMs, decodeMs: tokens.length > 1 ? now() - t1 : 0, reusedPrefixTokens: reused, redrawnTokens: redrawn };
  if (r.o.constraint) g.forced = r.forced;
  return g;
}

const rowList = (rows: Row[]) => `row${rows.length > 1 ? 's' : ''} ${rows.map((r) => r.b).join(', ')}`;

const uniform = (r: Row, i: number) => (r.us[i] ??= (r.o.temperature ?? 0) === 0 ? 0 : r.rng.next());

export class BatchDecoder {
  /**
   * Per-sequence logits rows for draws on the CPU: such a step copies row j of the decode plan's logits to
   * its sequence's slot, whose own sampler draws from it (a sampler reads its row 0).
   */
  private slots: Slot[] = [];
  /** Each decode row's cache row, for the fused KV write (the general forward's copies take it at encode time). */
  private rowsBuffer: GPUBuffer | null = null;
  /** Fused decode: each decode row's shared-prefix key range, u32 [maxDecodeRows, 2] (batch-layout.ts). */
  private prefixes: GPUBuffer | null = null;
  /** Where a shared prompt prefix's K/V rows are copied through (made on the first share). */
  private scratch: GPUBuffer | null = null;
  /** Appends queue here: see append. */
  private appending: Promise<unknown> = Promise.resolve();

  constructor(private readonly res: RuntimeResources) {}

  /** Bytes of the buffers kept across batches (part of the runtime's activations). */
  get bytes(): number {
    return this.slots.reduce((a, s) => a + s.logits.size, 0) + (this.rowsBuffer?.size ?? 0) + (this.prefixes?.size ?? 0) + (this.scratch?.size ?? 0);
  }

  /** Most tokens one append takes: an append's logprobs take the prefill plan's logits rows, and its rows one chunk. */
  private get maxAppend(): number {
    return Math.max(1, Math.min(this.res.limits.logitsRows, this.res.limits.maxBatchRows - 1));
  }

  /**
   * 1..maxDecodeRows checked requests, each with a token to generate, decoded in lockstep; leaves in
   * res.kvHolds what the cache's first rows then hold. Sequence b owns a region of the cache (its prompt +
   * maxNew rows, or only those past a shared prompt head: batch-layout.ts), and each step runs the last
   * token of every unfinished sequence as one row of the decode plan, its K/V written to its own region,
   * its keys read from the shared head and then its region. A finished sequence leaves the batch, so later
   * steps run fewer rows. Each step is one submission (forward, logits of all rows, their GPU
   * draws) with a read-back of all the rows' tokens, up to DECODE_AHEAD steps behind.
   */
  async decode(reqs: CheckedRequest[]): Promise<TokenGeneration[]> {
    const res = this.res;
    const { ctx } = res;
    const V = res.config.vocabSize;
    const { bases, offsets, shared, staging, rows: cacheRows } = layoutOf(reqs, res.fusedDecode);
    // Grown once to batchContext, not per batch size (growing drops what the cache held).
    const kv = await res.kvCache(cacheRows > res.limits.maxContext ? res.limits.batchContext : res.limits.maxContext);
    const padRow = cacheRows < kv.maxCtx ? kv.maxCtx - 1 : -1;
    const adapter = res.adapters.active;
    const version = adapter?.version ?? 0;
    // The first sequence's region starts at row 0, where the cache may hold a previous generate's prefix.
    const held = reqs[0].o.reusePrefix === false ? 0 : res.reusablePrefix(reqs[0].prompt);
    // Until the batch ends well, the rows are a mix of old and new: claim nothing.
    res.kvHolds = null;
    const lone = reqs.length === 1;
    const decode = await res.plan('decode', lone ? 1 : res.maxDecodeRows);
    const slots = lone ? [] : await this.batchSlots(reqs.length);
    const rowAt: Slot[] = [];
    // prefillMs counts from here.
    const t0 = now();
    const reused: number[] = [];
    for (const [b, r] of reqs.entries()) {
      let plan: ActivationPlan;
      if (shared > 0 && b > 0) {
        // Its tail is prefilled in the staging rows behind a copy of the shared prefix (one contiguous key
        // range, as the prefill attends), then moved to its region. Staged prefills write from
        // staging + shared on, so the copy made for the first one serves them all.
        if (b === 1) this.copyCacheRows(kv, 0, staging, shared);
        plan = await prefill(res, r.prompt, true, shared, staging);
        this.copyCacheRows(kv, staging + shared, bases[b], r.prompt.length - shared);
        reused.push(shared);
      } else {
        // A prompt prefix an earlier sequence of the batch has (the G rollouts of a group share their whole
        // first prompt) is copied from that sequence's region, not prefilled again. Regions are prefilled
        // in order and a chunk's padding rows only spill forward, so an earlier region's prompt rows are
        // intact.
        const { from, src } = b === 0 ? { from: held, src: -1 } : sharedPrefix(reqs, b);
        if (src >= 0) this.copyCacheRows(kv, bases[src], bases[b], from);
        plan = await prefill(res, r.prompt, true, from, bases[b]);
        reused.push(from);
      }
      if (lone) {
        // Its logits stay where the prefill left them until its first token is drawn.
        rowAt.push({ logits: plan.logits, sampler: await res.sampler(plan) });
        continue;
      }
      const logitsEnc = ctx.device.createCommandEncoder({ label: 'batch prefill logits' });
      logitsEnc.copyBufferToBuffer(plan.logits, 0, slots[b].logits, 0, V * 4);
      ctx.device.queue.submit([logitsEnc.finish()]);
      rowAt.push(slots[b]);
    }
    const rows: Row[] = reqs.map((r, b) => ({
      ...r,
      b,
      rng: new Rng(r.o.seed ?? 0),
      tokens: [],
      logprobs: [],
      forced: [],
      t0,
      prefillMs: 0,
      t1: 0,
      finishReason: 'length',
      redrawn: 0,
      slot: slots[b],
      at: rowAt[b],
      base: bases[b],
      offset: offsets[b],
      us: [],
      done: false,
    }));
    const run: BatchRun = { decode, kv, padRow, drawRows: null, lone, doing: lone ? 'decoding' : 'decoding a batch', drawLog: res.drawLogBuffer(reqs.length), stride: reqs.length };
    // The logits callback needs every row read back, top-k above the GPU's candidates needs the CPU, and a
    // constrained row's draw needs its grammar's mask (so a batch with one decodes in step).
    const ahead = reqs.every((r) => !r.o.onLogits && !r.o.constraint && gpuDrawServes(r.o, V));
    try {
      let live = rows;
      // A batch of one draws token 0 on the GPU where the prefill left its logits; a batch's earlier
      // prefills are overwritten by the later ones, so their first tokens are drawn on the CPU from the slots.
      const firstOnGpu = ahead && lone;
      if (!firstOnGpu) {
        await this.drawInStep(run, live);
        live = live.filter((r) => !r.done);
      }
      if (ahead && live.length) live = await this.decodeAhead(run, live, firstOnGpu ? 0 : 1);
      while (live.length) {
        // Rows whose forced tokens were just appended have their logits already.
        const stepping = live.filter((r) => !r.ready);
        if (stepping.length) await this.step(run, stepping, stepping[0].tokens.length, 'cpu');
        await this.drawInStep(run, live);
        live = live.filter((r) => !r.done);
      }
    } catch (e) {
      if (e instanceof NonFiniteLogprob) e.request = rows.indexOf(e.loop as Row);
      throw e;
    }
    // The first sequence's region is rows 0.. and holds its tokens as a lone generate would leave them.
    res.kvHolds = { tokens: reqs[0].prompt.concat(rows[0].tokens.slice(0, -1)), adapter, version };
    return rows.map((r, b) => generationOf(r, reused[b]));
  }

  destroy(): void {
    for (const s of this.slots) {
      s.sampler.destroy();
      s.logits.destroy();
    }
    this.slots = [];
    for (const b of [this.rowsBuffer, this.prefixes, this.scratch]) b?.destroy();
    this.rowsBuffer = this.prefixes = this.scratch = null;
  }

  /** `p` (a GPU read), failing if the device is lost or the read is still pending after the stall bound (decode-stall.ts). */
  private settled<T>(run: BatchRun, p: Promise<T>, doing: string, waitedFor: () => string): Promise<T> {
    return unlessStalled(unlessLost(this.res.ctx, p, doing), this.res.limits.stallMs, waitedFor, run.doing);
  }

  /** Every row's token from the logits its `at` holds, drawn on the CPU (their read-backs overlap). */
  private async drawInStep(run: BatchRun, rows: Row[]): Promise<void> {
    const free = rows.filter((r) => !r.o.constraint);
    await Promise.all([this.drawFree(run, free), ...rows.filter((r) => r.o.constraint).map((r) => this.drawConstrained(run, r))]);
  }

  private async drawFree(run: BatchRun, rows: Row[]): Promise<void> {
    const { ctx, config } = this.res;
    const drawn = await Promise.all(
      rows.map(async (r) => {
        const i = r.tokens.length;
        if (r.o.onLogits) r.o.onLogits(new Float32Array(await this.settled(run, readBuffer(ctx, r.at.logits, config.vocabSize * 4), 'reading logits', () => `the logits of token ${i} (row ${r.b})`)));
        return this.settled(run, r.at.sampler.sampleWithU(r.o, uniform(r, i)), 'sampling', () => `the candidates of token ${i} (row ${r.b})`);
      }),
    );
    rows.forEach((r, j) => {
      if (!acceptToken(r, drawn[j].token, drawn[j].logprob)) r.done = true;
    });
  }

  /**
   * A constrained row's turn: its logits read back whole, then either the tokens its grammar forces now (a
   * reply's opening keys) or a draw among the tokens it allows, followed by any it forces after that draw.
   * Forced tokens are appended in one forward with the drawn token (append), whose logits serve the next
   * round; their logprobs are the model's own from that forward (the first's from these logits).
   */
  private async drawConstrained(run: BatchRun, r: Row): Promise<void> {
    const c = r.o.constraint!;
    const i = r.tokens.length;
    const logits = new Float32Array(await this.settled(run, readBuffer(this.res.ctx, r.at.logits, this.res.config.vocabSize * 4), 'reading logits', () => `the logits of token ${i} (row ${r.b})`));
    r.o.onLogits?.(logits);
    r.ready = false;
    // The cache holds the row's tokens before i; these logits are token i's.
    const forcedNow = c.forced(Math.min(r.maxNew - i, this.maxAppend));
    if (forcedNow.length) {
      const lps = forcedNow.length > 1 ? await this.append(run, r, forcedNow, r.prompt.length + i) : null;
      const lse = logSumExp(logits);
      takeForced(r, forcedNow, [logits[forcedNow[0]] - lse, ...(lps ?? [])]);
      // A single forced token was not run: the next step runs it, as a drawn one.
      if (forcedNow.length > 1 && !r.done) r.ready = true;
      return;
    }
    const mask = await c.allowedMask();
    const d = drawMasked(logits, mask, r.o, uniform(r, i));
    if (!c.accept(d.token)) throw new Error(`constrained decode: the grammar rejected token ${d.token}, which its own mask allowed (row ${r.b})`);
    if (!acceptToken(r, d.token, d.logprob)) {
      r.done = true;
      return;
    }
    const after = c.forced(Math.min(r.maxNew - r.tokens.length, this.maxAppend));
    if (!after.length) return;
    const lps = await this.append(run, r, [d.token, ...after], r.prompt.length + i);
    takeForced(r, after, Array.from(lps));
    if (!r.done) r.ready = true;
  }

  /**
   * The GPU-draw loop from token `start` on (every row has taken the tokens before it, all rows in
   * lockstep). Returns the rows still going if too many draws needed the CPU (flat rows: in step is then
   * cheaper), else none.
   */
  private async decodeAhead(run: BatchRun, rows: Row[], start: 0 | 1): Promise<Row[]> {
    const { ctx } = this.res;
    const stepBytes = run.stride * DRAW_LOG_WORDS * 4;
    const limit = Math.max(...rows.map((r) => r.maxNew));
    const reads: Array<Promise<ArrayBuffer>> = [];
    const ran: Row[][] = [];
    const redrawnAt: number[] = [];
    // Token 0 drawn on the CPU: the first step takes its ids from there. Step 0 draws from the prefill's
    // logits and runs no forward, so it reads no ids.
    let ids: 'cpu' | 'gpu' = 'cpu';
    // Step i: the forward of token i - 1 of every row that may still need token i (none for i = 0), then
    // their draws.
    const submit = async (i: number) => {
      const rs = rows.filter((r) => !r.done && i < r.maxNew);
      ran[i] = rs;
      const us = rs.map((r) => uniform(r, i));
      await (i === 0 ? this.firstDraw(run, rs, us) : this.step(run, rs, i, ids, us));
      ids = 'gpu';
      const read = readBuffer(ctx, run.drawLog, stepBytes, i * stepBytes);
      // A read abandoned after the rows stopped must not surface as an unhandled rejection.
      read.catch(() => undefined);
      reads[i] = read;
    };
    let next = start;
    for (let i = start; i < limit; i++) {
      if (rows.every((r) => r.done)) break;
      while (next < limit && next <= i + DECODE_AHEAD && rows.some((r) => !r.done && next < r.maxNew)) await submit(next++);
      const rs = (ran[i] ?? []).filter((r) => !r.done);
      if (!rs.length) continue;
      const words = await this.settled(run, reads[i], run.doing, () => `the draw log of step ${i} (${rowList(rs)})`);
      const undecided: Row[] = [];
      for (const r of rs) {
        const e = parseDrawLog(words, r.b);
        if (e.undecided) undecided.push(r);
        else if (!acceptToken(r, e.token, e.logit - e.lse1)) r.done = true;
      }
      if (!undecided.length) continue;
      // Steps after i ran on provisional tokens for these rows: let them finish, recompute step i for these
      // rows (the cache rows it reads are unchanged; its own K/V row is rewritten with the same values;
      // token 0's logits are still the prefill's), draw on the CPU with the same uniforms, and submit again
      // from step i + 1 with ids from the CPU. The other rows' later steps are redone with the same uniforms
      // and inputs, so they give the same tokens.
      await this.settled(run, Promise.allSettled(reads.slice(i + 1, next)), run.doing, () => `the draw logs of steps ${i + 1} to ${next - 1} (in flight before a redraw)`);
      if (i > 0) await this.step(run, undecided, i, 'cpu');
      const drawn = await Promise.all(undecided.map((r) => this.settled(run, r.at.sampler.sampleWithU(r.o, r.us[i]), 'sampling', () => `the candidates of token ${i} (row ${r.b}, redrawn)`)));
      undecided.forEach((r, j) => {
        r.redrawn++;
        if (!acceptToken(r, drawn[j].token, drawn[j].logprob)) r.done = true;
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

  /**
   * Step 0 of a batch of one (ahead): its first token drawn on the GPU from the prefill's logits, into the
   * decode plan's ids for step 1. One submission, no forward.
   */
  private async firstDraw(run: BatchRun, rows: Row[], us: number[]): Promise<void> {
    if (!run.lone) throw new Error('BatchDecoder: a first token is drawn on the GPU only for a batch of one');
    const draws = await this.draws(run, rows[0].at.sampler, rows, 0, us);
    submitSteps(this.res.ctx, [draws], 'sampling');
    run.drawRows = rows;
  }

  /**
   * One decode step, the logits of token i of every row: rows[j] runs its token i - 1 at position
   * prompt + i - 1 (ids from the rows' tokens on the CPU, or from the previous step's GPU draws), with its
   * K/V written to its region and its keys read from there; then either every row's GPU draw with uniform
   * us[j] (one set of sampler dispatches over the step's logits rows per distinct sampling options, each
   * row's token written to ids[j] for the next step and to log entry i * stride + b) or, for the CPU, row
   * 0's logits left in the decode plan and row j's copied to its slot (each row's `at`). One submission.
   */
  private async step(run: BatchRun, rows: Row[], i: number, ids: 'cpu' | 'gpu', us?: number[]): Promise<void> {
    const res = this.res;
    const { ctx, maxDecodeRows } = res;
    const { decode, kv, padRow: pad, lone } = run;
    const V = res.config.vocabSize;
    const n = rows.length;
    // Padding rows up to the step's row count (decodeRowBucket): position 0, K/V written to and read from
    // the pad row only, the token id its ids entry still holds (always a valid id); logits not used.
    const m = pad >= 0 ? decodeRowBucket(n, maxDecodeRows) : n;
    const padded = <T>(xs: T[], fill: T) => xs.concat(Array<T>(m - n).fill(fill));
    // In step each row runs its own last token (rows that took forced tokens are ahead of the others).
    const at = (r: Row) => (ids === 'cpu' ? r.tokens.length : i);
    const pos = rows.map((r) => r.prompt.length + at(r) - 1);
    const cacheRows = padded(rows.map((r, j) => r.base + pos[j] - r.offset), pad);
    writeBuffer(ctx, decode.pos, Uint32Array.from(padded(pos, 0)));
    writeBuffer(ctx, decode.ranges, Uint32Array.from(padded(rows.map((r, j): [number, number] => [r.base, cacheRows[j] + 1]), [pad, pad + 1]).flat()));
    if (!lone) writeBuffer(ctx, this.rowsBuffer!, Uint32Array.from(cacheRows));
    // The fused decode reads each row's shared prefix first (the general decode has whole regions).
    if (!lone && this.prefixes) writeBuffer(ctx, this.prefixes, Uint32Array.from(padded(rows.map((r): [number, number] => [0, r.offset]), [0, 0]).flat()));
    if (ids === 'cpu') writeBuffer(ctx, decode.ids, Uint32Array.from(rows.map((r) => r.tokens[at(r) - 1])));
    // A batch of one is at cache row = position from row 0: the one-row decode, its K/V row an encode input.
    const forward = lone ? await this.decodeForward(decode, kv, pos[0]) : await this.decodeForward(decode, kv, Math.max(...pos), m);
    const logitSteps = await res.records.get(`decodeLogits:${m}`, () => recordLogits(ctx, decode, res.weights, 0, m));
    const sampler = await res.sampler(decode);
    const draws = us ? await this.draws(run, sampler, rows, i, us) : [];
    assertDeviceAlive(ctx, run.doing);
    const enc = ctx.device.createCommandEncoder({ label: run.doing });
    // The previous step's draws wrote row j's token to ids[j]; rows that left since shift the others up,
    // whose tokens are then taken from the draw log.
    const prev = run.drawRows;
    if (ids === 'gpu' && !(prev && prev.length >= n && rows.every((r, j) => prev[j] === r))) {
      rows.forEach((r, j) => enc.copyBufferToBuffer(run.drawLog, ((i - 1) * run.stride + r.b) * DRAW_LOG_WORDS * 4, decode.ids, j * 4, 4));
    }
    encodeSteps(ctx, enc, forward, lone ? { cacheRow: cacheRows[0] } : { cacheRows });
    encodeSteps(ctx, enc, logitSteps);
    if (us) encodeSteps(ctx, enc, draws);
    else {
      // Row 0's logits are read where they are (a sampler reads the first row of its buffer).
      rows.forEach((r, j) => {
        if (j === 0) r.at = { logits: decode.logits, sampler };
        else {
          if (!r.slot) throw new Error(`BatchDecoder: row ${r.b} has no logits slot`);
          enc.copyBufferToBuffer(decode.logits, j * V * 4, r.slot.logits, 0, V * 4);
          r.at = r.slot;
        }
      });
    }
    ctx.device.queue.submit([enc.finish()]);
    run.drawRows = us ? rows : null;
    res.countDecode(n, m - n);
  }

  /**
   * The decode forward over the KV cache, recorded once per adapter and shape: one row (a batch of one: its
   * K/V go to the encode input cacheRow) or `n` rows of a batch (each row's cache row in rowsBuffer). On
   * 4-bit weights with fused q/k/v and gate/up (a web-llm build) the fused decode kernels (about 40% fewer
   * dispatches, no residual copies), else the general forward.
   */
  private decodeForward(plan: ActivationPlan, kv: KvCache, position: number, n?: number): Promise<Step[]> {
    const res = this.res;
    const { ctx, weights } = res;
    const rows = n === undefined ? undefined : { buffer: this.rowsBuffer! };
    const prefixes = n === undefined ? undefined : (this.prefixes ?? undefined);
    const tag = n === undefined ? 'decode' : `decodeBatch:${n}`;
    if (!res.fusedDecode) {
      return res.records.get(tag, (adapter) => recordForward(ctx, { plan, weights, adapter, n: n ?? 1, cache: { kv, rows } }));
    }
    // Two recordings: attention in one workgroup per KV head while the context is short, split over key
    // slices once it may be long (the ranges themselves are only on the GPU). No sequence is longer than
    // maxContext, whatever rows a batch grew the cache to.
    const short = position + 1 <= ATTN_DECODE_SINGLE_MAX_KEYS;
    const maxKeys = short ? ATTN_DECODE_SINGLE_MAX_KEYS : Math.min(kv.maxCtx, res.limits.maxContext);
    return res.records.get(short ? tag : `${tag}:long`, (adapter) => recordDecodeForward(ctx, { plan, weights, adapter, n: n ?? 1, cache: { kv, maxKeys, rows, prefixes } }));
  }

  /**
   * The GPU draws of a step's rows by `sampler` (rows 0..n-1 of its logits): one plan per distinct
   * sampling options (usually one: a group's rollouts share them), each drawing only its rows, each row's
   * token to the decode plan's ids and log entry i * stride + b.
   */
  private async draws(run: BatchRun, sampler: GpuSampler, rows: Row[], i: number, us: number[]): Promise<Step[]> {
    const target = { ids: run.decode.ids, log: run.drawLog };
    // The sampler keeps a plan per set of options (cached): rows whose options give the same plan share it.
    const plans = new Map<number, Dispatch[]>();
    const entries = [];
    for (const [j, r] of rows.entries()) {
      const { plan, dispatches } = await sampler.drawPlan(r.o, target, rows.length);
      plans.set(plan, dispatches);
      entries.push({ u: us[j], index: i * run.stride + r.b, plan });
    }
    sampler.setDraws(entries);
    return [...plans.values()].flatMap((ds) => ds.map(dispatchStep));
  }

  /**
   * `tokens` of row r run at positions start.. into its region (one forward), the last one's logits left
   * where the row's next draw reads them (a batch's row: its slot); returns log p(tokens[j + 1]) for
   * j < tokens.length - 1.
   */
  private append(run: BatchRun, r: Row, tokens: number[], start: number): Promise<Float32Array> {
    // Rows draw concurrently, but appends share the prefill plan (its inputs, logits and logprobs): one at a
    // time, each until its logits are in its row's slot.
    const done = this.appending.then(() => this.appendNow(run, r, tokens, start));
    this.appending = done.catch(() => undefined);
    return done;
  }

  private async appendNow(run: BatchRun, r: Row, tokens: number[], start: number): Promise<Float32Array> {
    if (r.offset !== 0) throw new Error(`BatchDecoder: row ${r.b} shares a prompt head; forced tokens need its whole region`);
    const res = this.res;
    const { plan, logprobs } = await appendRun(res, tokens, start, r.base);
    if (run.lone) {
      r.at = { logits: plan.logits, sampler: await res.sampler(plan) };
    } else {
      if (!r.slot) throw new Error(`BatchDecoder: row ${r.b} has no logits slot`);
      const enc = res.ctx.device.createCommandEncoder({ label: 'forced tokens logits' });
      enc.copyBufferToBuffer(plan.logits, 0, r.slot.logits, 0, res.config.vocabSize * 4);
      res.ctx.device.queue.submit([enc.finish()]);
      r.at = r.slot;
    }
    return logprobs;
  }

  /** A buffer of at least `bytes` for copying prompt rows between regions of the cache (kept for later batches). */
  private prefixScratch(bytes: number, kv: KvCache): GPUBuffer {
    if (!this.scratch || this.scratch.size < bytes) {
      this.scratch?.destroy();
      // Sized for the longest prompt at once, so it is made once per cache layout.
      this.scratch = createStorage(this.res.ctx, 'runtime.batchPrefixRows', Math.max(bytes, this.res.limits.maxContext * kv.rowBytes));
    }
    return this.scratch;
  }

  /** Copies `count` KV-cache rows from row `from` to row `to`, every layer (one submission). */
  private copyCacheRows(kv: KvCache, from: number, to: number, count: number): void {
    if (count <= 0) return;
    const { ctx } = this.res;
    const bytes = count * kv.rowBytes;
    const scratch = this.prefixScratch(bytes, kv);
    const enc = ctx.device.createCommandEncoder({ label: 'batch prefill' });
    // WebGPU copies only between different buffers: through a scratch buffer, layer by layer.
    for (const buf of [...kv.k, ...kv.v]) {
      enc.copyBufferToBuffer(buf, from * kv.rowBytes, scratch, 0, bytes);
      enc.copyBufferToBuffer(scratch, 0, buf, to * kv.rowBytes, bytes);
    }
    ctx.device.queue.submit([enc.finish()]);
  }

  /** The slots of the batch's first `count` sequences (made once, kept for later batches), and the step buffers. */
  private async batchSlots(count: number): Promise<Slot[]> {
    const { ctx, config, maxDecodeRows } = this.res;
    const V = config.vocabSize;
    while (this.slots.length < count) {
      const k = this.slots.length;
      const logits = createStorage(ctx, `runtime.batchLogits${k}`, V * 4);
      this.slots.push({ logits, sampler: await GpuSampler.create(ctx, { logits, vocab: V }) });
    }
    this.rowsBuffer ??= createStorage(ctx, 'runtime.batchCacheRows', maxDecodeRows * 4);
    if (this.res.fusedDecode) this.prefixes ??= createStorage(ctx, 'runtime.batchPrefixes', maxDecodeRows * 8);
    return this.slots.slice(0, count);
  }
}

// The runtime side of decoding (batch-decode.ts runs the loop) for generate(), a batch of one, and
// generateBatch's lockstep decode: each request's region of the KV cache (batch-layout.ts) and its prefill
// there, the buffers a batch keeps across calls (per-sequence logits slots, cache rows, shared-prefix
// ranges), and one decode step of the rows still going as one submission (BatchHost.step). A batch of one
// runs the one-row decode at its positions (its region is the cache from row 0) and draws its first token
// from the prefill's logits, so it needs none of a batch's buffers.
import { createStorage, writeBuffer } from '../gpu/buffers';
import { assertDeviceAlive } from '../gpu/device';
import type { Dispatch } from '../gpu/pipelines';
import { DRAW_LOG_WORDS, GpuSampler, gpuDrawServes } from '../kernels/sampling/sampling';
import type { ActivationPlan } from '../model/activations';
import { decodeRows, type BatchHost, type BatchRow, type BatchSlot } from './batch-decode';
import { batchLayout } from './batch-layout';
import { generationOf, type DecodeLoop } from './decode-loop';
import { recordedDecode } from './decode-record';
import { recordLogits } from '../model/forward';
import { canShareHead, layoutRequest, loopFor, type CheckedRequest } from './generate-request';
import type { TokenGeneration } from './generation';
import { dispatchStep, encodeSteps, type Step } from '../model/graph';
import { submitSteps, unlessLost } from './gpu-calls';
import type { KvCache } from '../model/kv-cache';
import { NonFiniteLogprob } from './non-finite';
import { appendRun, prefill } from './prefill';
import { decodeRowBucket } from './runtime-options';
import type { RuntimeResources } from './runtime-resources';

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
  drawRows: BatchRow[] | null;
  /** A batch of one: the one-row decode at cache row = position, labelled as generate()'s. */
  lone: boolean;
  /** What its submissions are labelled, and a lost device's error says was interrupted. */
  doing: string;
  /** GPU draw log and its entries per step (BatchHost.stride). */
  drawLog: GPUBuffer;
  stride: number;
}

export class BatchDecoder {
  /**
   * Per-sequence logits rows for draws on the CPU: such a step copies row j of the decode plan's logits to
   * its sequence's slot, whose own sampler draws from it (a sampler reads its row 0).
   */
  private slots: BatchSlot[] = [];
  /** Each decode row's cache row, for the fused KV write (the general forward's copies take it at encode time). */
  private rowsBuffer: GPUBuffer | null = null;
  /** Fused decode: each decode row's shared-prefix key range, u32 [maxDecodeRows, 2] (batch-layout.ts). */
  private prefixes: GPUBuffer | null = null;
  /** Where a shared prompt prefix's K/V rows are copied through (made on the first share). */
  private scratch: GPUBuffer | null = null;

  constructor(private readonly res: RuntimeResources) {}

  /** Bytes of the buffers kept across batches (part of the runtime's activations). */
  get bytes(): number {
    return this.slots.reduce((a, s) => a + s.logits.size, 0) + (this.rowsBuffer?.size ?? 0) + (this.prefixes?.size ?? 0) + (this.scratch?.size ?? 0);
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
    const layout = batchLayout(reqs.map(layoutRequest), canShareHead(reqs, res.fusedDecode));
    const { bases, offsets, shared, staging, rows } = layout;
    // Grown once to batchContext, not per batch size (growing drops what the cache held).
    const kv = await res.kvCache(rows > res.limits.maxContext ? res.limits.batchContext : res.limits.maxContext);
    const padRow = rows < kv.maxCtx ? kv.maxCtx - 1 : -1;
    const adapter = res.adapters.active;
    const version = adapter?.version ?? 0;
    // The first sequence's region starts at row 0, where the cache may hold a previous generate's prefix.
    const held = reqs[0].o.reusePrefix === false ? 0 : res.reusablePrefix(reqs[0].prompt);
    // Until the batch ends well, the rows are a mix of old and new: claim nothing.
    res.kvHolds = null;
    const lone = reqs.length === 1;
    const decode = await res.plan('decode', lone ? 1 : res.maxDecodeRows);
    const slots = lone ? [] : await this.batchSlots(reqs.length);
    const rowAt: BatchSlot[] = [];
    const loops = reqs.map(loopFor);
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
    const batch: BatchRow[] = reqs.map((_, b) => ({ b, l: loops[b], slot: slots[b], at: rowAt[b], base: bases[b], offset: offsets[b], us: [], done: false }));
    const run: BatchRun = { decode, kv, padRow, drawRows: null, lone, doing: lone ? 'decoding' : 'decoding a batch', drawLog: res.drawLogBuffer(reqs.length), stride: reqs.length };
    const host: BatchHost = {
      ctx,
      vocab: V,
      drawLog: run.drawLog,
      stride: run.stride,
      doing: run.doing,
      firstOnGpu: lone,
      step: (rows, i, ids, us) => (i === 0 ? this.firstDraw(run, rows, us!) : this.step(run, rows, i, ids, us)),
      unlessLost: (p, doing) => unlessLost(ctx, p, doing),
      stallMs: res.limits.stallMs,
      append: (r, tokens, start) => this.append(run, r, tokens, start),
      // An append's logprobs take the prefill plan's logits rows, and its rows one chunk.
      maxAppend: Math.max(1, Math.min(res.limits.logitsRows, res.limits.maxBatchRows - 1)),
    };
    // The logits callback needs every row read back, top-k above the GPU's candidates needs the CPU, and a
    // constrained row's draw needs its grammar's mask (so a batch with one decodes in step).
    try {
      await decodeRows(host, batch, reqs.every((r) => !r.o.onLogits && !r.o.constraint && gpuDrawServes(r.o, V)));
    } catch (e) {
      if (e instanceof NonFiniteLogprob) e.request = loops.indexOf(e.loop as DecodeLoop);
      throw e;
    }
    // The first sequence's region is rows 0.. and holds its tokens as a lone generate would leave them.
    res.kvHolds = { tokens: reqs[0].prompt.concat(loops[0].tokens.slice(0, -1)), adapter, version };
    return loops.map((l, b) => generationOf(l, reused[b]));
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

  /**
   * BatchHost.append: `tokens` of row r run at positions start.. into its region (one forward), the last
   * one's logits left where the row's next draw reads them (a batch's row: its slot).
   */
  private append(run: BatchRun, r: BatchRow, tokens: number[], start: number): Promise<Float32Array> {
    // Rows draw concurrently, but appends share the prefill plan (its inputs, logits and logprobs): one at a
    // time, each until its logits are in its row's slot.
    const done = this.appending.then(() => this.appendNow(run, r, tokens, start));
    this.appending = done.catch(() => undefined);
    return done;
  }

  private appending: Promise<unknown> = Promise.resolve();

  private async appendNow(run: BatchRun, r: BatchRow, tokens: number[], start: number): Promise<Float32Array> {
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
  private async batchSlots(count: number): Promise<BatchSlot[]> {
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

  /**
   * Step 0 of a batch of one (BatchHost.step, firstOnGpu): its first token drawn on the GPU from the
   * prefill's logits, into the decode plan's ids for step 1. One submission, no forward.
   */
  private async firstDraw(run: BatchRun, rows: BatchRow[], us: number[]): Promise<void> {
    if (!run.lone) throw new Error('BatchDecoder: a first token is drawn on the GPU only for a batch of one');
    const draws = await this.draws(run, rows[0].at.sampler, rows, 0, us);
    submitSteps(this.res.ctx, [draws], 'sampling');
    run.drawRows = rows;
  }

  /**
   * One decode step (BatchHost.step): rows[j] runs its token i - 1 at position prompt + i - 1, with its
   * K/V written to its region and its keys read from there; then either every row's GPU draw (one set of
   * sampler dispatches over the step's logits rows per distinct sampling options, each row's token
   * written to ids[j] for the next step) or, for the CPU, row 0's logits left in the decode plan and row
   * j's copied to its slot. One submission.
   */
  private async step(run: BatchRun, rows: BatchRow[], i: number, ids: 'cpu' | 'gpu', us?: number[]): Promise<void> {
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
    const at = (r: BatchRow) => (ids === 'cpu' ? r.l.tokens.length : i);
    const pos = rows.map((r) => r.l.prompt.length + at(r) - 1);
    const cacheRows = padded(rows.map((r, j) => r.base + pos[j] - r.offset), pad);
    writeBuffer(ctx, decode.pos, Uint32Array.from(padded(pos, 0)));
    writeBuffer(ctx, decode.ranges, Uint32Array.from(padded(rows.map((r, j): [number, number] => [r.base, cacheRows[j] + 1]), [pad, pad + 1]).flat()));
    if (!lone) writeBuffer(ctx, this.rowsBuffer!, Uint32Array.from(cacheRows));
    // The fused decode reads each row's shared prefix first (the general decode has whole regions).
    if (!lone && this.prefixes) writeBuffer(ctx, this.prefixes, Uint32Array.from(padded(rows.map((r): [number, number] => [0, r.offset]), [0, 0]).flat()));
    if (ids === 'cpu') writeBuffer(ctx, decode.ids, Uint32Array.from(rows.map((r) => r.l.tokens[at(r) - 1])));
    // A batch of one is at cache row = position from row 0: the one-row decode, its K/V row an encode input.
    const forward = lone ? await recordedDecode(res, decode, kv, pos[0]) : await recordedDecode(res, decode, kv, Math.max(...pos), { n: m, rows: this.rowsBuffer!, prefixes: this.prefixes ?? undefined });
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
   * The GPU draws of a step's rows by `sampler` (rows 0..n-1 of its logits): one plan per distinct
   * sampling options (usually one: a group's rollouts share them), each drawing only its rows, each row's
   * token to the decode plan's ids and log entry i * stride + b.
   */
  private async draws(run: BatchRun, sampler: GpuSampler, rows: BatchRow[], i: number, us: number[]): Promise<Step[]> {
    const target = { ids: run.decode.ids, log: run.drawLog };
    // The sampler keeps a plan per set of options (cached): rows whose options give the same plan share it.
    const plans = new Map<number, Dispatch[]>();
    const entries = [];
    for (const [j, r] of rows.entries()) {
      const { plan, dispatches } = await sampler.drawPlan(r.l.o, target, rows.length);
      plans.set(plan, dispatches);
      entries.push({ u: us[j], index: i * run.stride + r.b, plan });
    }
    sampler.setDraws(entries);
    return [...plans.values()].flatMap((ds) => ds.map(dispatchStep));
  }
}

// The Qwen2 runtime: base weights + LoRA adapters on the GPU, and the three things the planner and the
// trainer ask of them: score given sequences (packed into batches), the logits after a prompt, and
// streaming generation (prefill into a KV cache, then one token per step). Calls are serialised: the
// activation buffers and the KV cache are shared.
import { assertDeviceAlive, GpuDeviceLostError, type GpuContext } from '../gpu/device';
import { createStorage, readBuffer, writeBuffer } from '../gpu/buffers';
import { validateTokenIds } from '../kernels/embedding/embedding';
import { Rng } from '../util/rng';
import { ActivationPlan } from './activations';
import { AdapterSet, type GpuAdapter } from './adapters';
import { recordForward, recordLogits, recordTargetLogprobs } from './forward';
import { canFuseDecode, decodeParamsBytes, prepareDecodeParams, recordDecodeForward, releaseDecodeParams } from './decode-forward';
import { ATTN_DECODE_SINGLE_MAX_KEYS } from '../kernels/attention/attention.decode';
import { Q4_SMALL_N } from '../kernels/q4/q4matmul.wgsl';
import { SMALL_N } from '../kernels/matmul/matmul.wgsl';
import { dispatchStep, encodeSteps, type Step } from './graph';
import type { Dispatch } from '../gpu/pipelines';
import { packSequences, unpackLogprobs, writeBatch, type PackedBatch } from './batch';
import type { Qwen2Config } from './io/config';
import type { LoraAdapter } from './io/peft';
import { KvCache } from './kv-cache';
import { DRAW_LOG_WORDS, GpuSampler, gpuDrawServes, parseDrawLog } from '../kernels/sampling/sampling';
import { checkSamplingOptions, type SamplingOptions } from '../kernels/sampling/draw';
import { decodeRows, type BatchHost, type BatchRow, type BatchSlot } from './batch-decode';
import { batchLayout } from './batch-layout';
import { acceptToken, DECODE_AHEAD, emptyGeneration, generationOf, now, REDRAW_WINDOW, type DecodeLoop } from './decode-loop';
import { Qwen2Weights, type Q4WeightSource, type UploadProgress, type WeightSource } from './weights';

export interface RuntimeOptions {
  /** Longest prompt + generation (KV cache rows). Default min(max_position_embeddings, 4096). */
  maxContext?: number;
  /** Rows in one packed scoring / prefill batch (longer single sequences get their own batch). Default 512. */
  maxBatchRows?: number;
  /** Rows of logits computed at once when scoring. Default 32. */
  logitsRows?: number;
  onProgress?: (p: UploadProgress) => void;
  /** Cap on one embedding / LM-head chunk (default: the device's binding limit). */
  maxChunkBytes?: number;
  /**
   * A 4-bit (MLC) source is kept 4-bit on the GPU unless this is set: then its dequantized f16 tensors are
   * uploaded instead (4x the memory; for comparisons).
   */
  dequantize?: boolean;
  /**
   * KV-cache rows generateBatch may use for the sequences it decodes together (each needs prompt +
   * maxNewTokens rows). Default maxContext: the cache generate() uses anyway, so batching costs no memory
   * but fits fewer long sequences at once. Raising it grows the cache when a batch needs it, at
   * 2 x layers x kvHeads x headDim x 4 bytes per row (24 KiB a row for Qwen2.5-0.5B).
   */
  batchContext?: number;
}

// The generation contract lives in generation.ts (decode-loop and batch-decode use it without importing
// the runtime); re-exported here for the runtime's callers.
export type { GenerateRequest, GenerateTokensOptions, TokenGeneration } from './generation';
import type { GenerateRequest, GenerateTokensOptions, TokenGeneration } from './generation';

export interface GpuMemoryReport {
  weights: number;
  adapters: number;
  activations: number;
  kvCache: number;
}

const BASE = { id: '(base)' };

/**
 * Sequences generateBatch decodes in one step on 4-bit web-llm weights: the fused decode kernels (4-bit rows
 * kernel, fused decode linears, decode attention) take up to this many rows, reading each weight once for
 * all of them, so a default Flow-GRPO group of 8 decodes together.
 */
export const MAX_DECODE_ROWS = Q4_SMALL_N;
/**
 * The same for any other weights (the general forward): the f16 matmul's rows kernel takes up to SMALL_N
 * rows; more would switch to the tiled kernel, whose f32 sums differ from a lone sequence's.
 */
export const GENERAL_DECODE_ROWS = SMALL_N;

/** The context (KV-cache rows) a runtime gets without RuntimeOptions.maxContext. */
export function defaultMaxContext(config: Qwen2Config): number {
  return Math.min(config.maxPositionEmbeddings, 4096);
}

// Batches are rounded up to a few row counts so step lists are recorded once per count, not per call: powers
// of two up to 64, then multiples of 64 (so a 300-row prefill computes 320 rows, not 512). Up to 4 rows stay
// exact: the matmul's row kernel handles them, and padding them to 8 would switch to the tiled kernel, which
// is far slower for a handful of rows. Every tile shape gives the same bits, so padding never changes a result.
function bucket(n: number, max: number): number {
  if (n <= 4) return n;
  let b = 8;
  while (b < n && b < BUCKET_STEP) b *= 2;
  if (b < n) b = Math.ceil(n / BUCKET_STEP) * BUCKET_STEP;
  return Math.min(Math.max(b, n), Math.max(max, n));
}

const BUCKET_STEP = 64;

/**
 * The rows a decode step of n sequences computes: 1, 2, 4 or 8 (at most `max`). The kernels are built per
 * row count and the step lists recorded per row count, so as a batch's sequences stop one by one it runs
 * a few shapes, not every count from 8 down; a padding row costs next to nothing in a step bound by reading
 * the weights, and rows never see each other's values.
 */
export function decodeRowBucket(n: number, max: number): number {
  let b = 1;
  while (b < n) b *= 2;
  return Math.max(n, Math.min(b, max));
}

/** A generate request after checkGenerate: its options, token budget, stop ids and cache rows needed. */
interface CheckedRequest {
  prompt: number[];
  o: GenerateTokensOptions;
  maxNew: number;
  /** prompt + maxNew: the cache rows it may fill. */
  rows: number;
  stop: Set<number>;
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

export class Qwen2Runtime {
  readonly adapters: AdapterSet;
  private batchPlan: ActivationPlan | null = null;
  private decodePlan: ActivationPlan | null = null;
  private kv: KvCache | null = null;
  /**
   * What the KV cache's first rows hold: K/V of `tokens` at positions 0.., computed with `adapter` at
   * `version` (null adapter: the base model). Null while a generate is writing the cache or after one failed.
   */
  private kvHolds: { tokens: number[]; adapter: GpuAdapter | null; version: number } | null = null;
  private samplers = new Map<ActivationPlan, GpuSampler>();
  /**
   * generateBatch's per-sequence logits rows for draws on the CPU: such a step copies row j of the decode
   * plan's logits to its sequence's slot, whose own sampler draws from it (a sampler reads its row 0).
   */
  private slots: BatchSlot[] = [];
  /** The rows of generateBatch's last step with GPU draws: their tokens are where the next step reads ids. */
  private batchDrawRows: BatchRow[] | null = null;
  /** generateBatch's cache row per decode row: on the GPU for the fused KV write, on the host for the copies. */
  private batchRowsBuffer: GPUBuffer | null = null;
  /** Fused decode: each decode row's shared-prefix key range, u32 [maxDecodeRows, 2] (batch-layout.ts). */
  private batchPrefixes: GPUBuffer | null = null;
  private batchCacheRows: number[] = [];
  /**
   * The cache row a batch's padding rows write their K/V to and attend over (the cache's last row, past every
   * region), or -1 when the regions fill the cache: steps then run exactly their sequences' rows.
   */
  private batchPadRow = -1;
  /** generateBatch's GPU draw log: entry i * maxDecodeRows + b is row b's draw of token i. */
  private batchDrawLog: GPUBuffer | null = null;
  /** Where generateBatch copies a shared prompt prefix's K/V rows through (made on the first share). */
  private batchScratch: GPUBuffer | null = null;
  /** Where GPU draws log each generated token (DRAW_LOG_WORDS u32 per token), one entry per possible position. */
  private drawLog: GPUBuffer | null = null;
  /** See fusedDecode. */
  private fusedDecodeMemo: boolean | null = null;
  // Recorded step lists, per adapter object (a replaced adapter gets new buffers, hence new records).
  private records = new WeakMap<object, Map<string, Step[]>>();
  private queue: Promise<unknown> = Promise.resolve();
  private cacheRow = 0;
  private logitsRow = 0;
  readonly maxContext: number;
  readonly maxBatchRows: number;
  readonly logitsRows: number;
  readonly batchContext: number;
  /**
   * Sequences generateBatch decodes in one step: MAX_DECODE_ROWS on weights the fused decode runs (4-bit
   * web-llm builds), else GENERAL_DECODE_ROWS. Either way each sequence's tokens are what it gets alone.
   */
  get maxDecodeRows(): number {
    return this.fusedDecode ? MAX_DECODE_ROWS : GENERAL_DECODE_ROWS;
  }
  /**
   * Decode forwards run since creation and the sequences' rows they computed (one per sequence in the step;
   * padding rows, see decodeRowBucket, are counted apart in padRows): rows / steps is how many sequences a
   * decode step served on average (benchmarks, tests).
   */
  readonly decodeCounters = { steps: 0, rows: 0, padRows: 0 };

  private constructor(readonly ctx: GpuContext, readonly config: Qwen2Config, readonly weights: Qwen2Weights, o: RuntimeOptions) {
    this.adapters = new AdapterSet(ctx, config);
    this.adapters.onRankGrow = () => this.dropPlans();
    this.maxContext = o.maxContext ?? defaultMaxContext(config);
    this.maxBatchRows = o.maxBatchRows ?? 512;
    this.logitsRows = o.logitsRows ?? 32;
    this.batchContext = o.batchContext ?? this.maxContext;
    if (!Number.isInteger(this.batchContext) || this.batchContext < this.maxContext) {
      throw new Error(`runtime: batchContext must be an integer >= maxContext (${this.maxContext}), got ${o.batchContext}`);
    }
  }

  static async create(ctx: GpuContext, config: Qwen2Config, tensors: WeightSource | Q4WeightSource, o: RuntimeOptions = {}): Promise<Qwen2Runtime> {
    const weights = await Qwen2Weights.upload(ctx, config, tensors, { onProgress: o.onProgress, maxChunkBytes: o.maxChunkBytes, dequantize: o.dequantize });
    return new Qwen2Runtime(ctx, config, weights, o);
  }

  /** Loads (or replaces) an adapter; does not change which one is active. */
  addAdapter(id: string, adapter: LoraAdapter): Promise<GpuAdapter> {
    return this.serial(() => this.adapters.add(id, adapter));
  }

  /** Switches the adapter every later call uses (null: base model). No weights move. */
  setActiveAdapter(id: string | null): void {
    this.adapters.activate(id);
  }

  get activeAdapterId(): string | null {
    return this.adapters.activeIdOrNull;
  }

  /** Rows of the current scoring / prefill activation plan (0 before the first call). */
  get batchRows(): number {
    return this.batchPlan?.rows ?? 0;
  }

  memory(): GpuMemoryReport {
    return {
      // With the fused decode's packed per-layer norm + bias copies (a few KiB a layer).
      weights: this.weights.bytes + decodeParamsBytes(this.weights),
      adapters: this.adapters.bytes(),
      activations:
        (this.batchPlan?.bytes ?? 0) + (this.decodePlan?.bytes ?? 0) + (this.drawLog?.size ?? 0) +
        this.slots.reduce((a, s) => a + s.logits.size, 0) +
        (this.batchRowsBuffer?.size ?? 0) + (this.batchPrefixes?.size ?? 0) + (this.batchScratch?.size ?? 0) + (this.batchDrawLog?.size ?? 0),
      kvCache: this.kv?.bytes ?? 0,
    };
  }

  /**
   * Allocates now everything generate() holds at its peak for a prompt of `promptTokens` tokens (default:
   * maxContext, the most any generate() can hold): the KV cache, the prefill plan (the largest prompt chunk,
   * at most maxBatchRows rows), the decode plan and the samplers over both. A later generate() within that
   * length allocates no further buffers, so memory() after reserve() is what a long generation really holds,
   * known without running one (a 512-row prefill of a 0.5B model takes minutes on a software adapter).
   * Call it after adding adapters: a larger LoRA rank drops the plans. score() and logitsLast() size their
   * own plans (a long single sequence gets a plan of its length) and are not covered.
   */
  reserve(o: { promptTokens?: number } = {}): Promise<GpuMemoryReport> {
    return this.serial(async () => {
      const P = o.promptTokens ?? this.maxContext;
      if (!Number.isInteger(P) || P < 1 || P > this.maxContext) {
        throw new Error(`reserve: promptTokens must be an integer from 1 to the context limit ${this.maxContext}, got ${o.promptTokens}`);
      }
      const kv = await this.kvCache();
      let rows = 0;
      for (let c0 = 0; c0 < P; c0 += this.maxBatchRows) rows = Math.max(rows, this.prefillRows(Math.min(this.maxBatchRows, P - c0), c0, kv));
      await this.sampler(await this.plan('batch', rows));
      await this.sampler(await this.plan('decode', 1));
      this.drawLogBuffer();
      if (canFuseDecode(this.weights)) await prepareDecodeParams(this.ctx, this.weights);
      return this.memory();
    });
  }

  /**
   * Entry t of row i is log p(seq[i][t+1] | seq[i][0..t]) under the active adapter (length len-1).
   * Sequences are packed into batches of whole sequences.
   */
  score(sequences: number[][]): Promise<number[][]> {
    return this.serial(async () => {
      sequences.forEach((s, i) => {
        if (!Array.isArray(s)) throw new Error(`score: sequence ${i} is not an array of token ids`);
        validateTokenIds(s, this.config.vocabSize, `score: sequence ${i}`);
        if (s.length > this.maxContext) throw new Error(`score: sequence ${i} has ${s.length} tokens, more than the context limit ${this.maxContext}`);
      });
      const out: number[][] = sequences.map(() => []);
      const order = sequences.map((_, i) => i).filter((i) => sequences[i].length >= 2);
      let b = 0;
      while (b < order.length) {
        const batch: number[] = [];
        let rows = 0;
        while (b < order.length && (batch.length === 0 || rows + sequences[order[b]].length <= this.maxBatchRows)) {
          rows += sequences[order[b]].length;
          batch.push(order[b++]);
        }
        await this.scoreBatch(batch.map((i) => sequences[i]), batch.map((i) => out[i]));
      }
      return out;
    });
  }

  /** Logits at the last position of `tokens` under the active adapter, length V. */
  logitsLast(tokens: number[]): Promise<Float32Array> {
    return this.serial(async () => {
      validateTokenIds(tokens, this.config.vocabSize, 'logitsLast: tokens');
      if (tokens.length === 0) throw new Error('logitsLast: tokens is empty');
      const plan = await this.prefill(tokens, false);
      return this.readF32(plan.logits, this.config.vocabSize, 0, 'reading logits');
    });
  }

  /** Samples up to maxNewTokens after `prompt`, streaming each token; EOS, abort or onToken stop it. */
  generate(prompt: number[], o: GenerateTokensOptions = {}): Promise<TokenGeneration> {
    return this.serial(() => this.generateLocked(prompt, o));
  }

  /**
   * Generates for several prompts at once: one TokenGeneration per request, in order. Up to maxDecodeRows
   * sequences are decoded in lockstep, each step one forward of their rows (the weights are read once for
   * all of them), each sequence in its own region of the KV cache; more requests, or more than
   * batchContext cache rows at once, run as several batches. With reusePrefix false, each request's
   * tokens and logprobs are generate()'s for the same prompt and options with reusePrefix false (the
   * kernels compute each row as they compute a lone one). With prefix reuse (the default) a prompt prefix
   * an earlier request of the batch has is copied from its region instead of prefilled again (a GRPO
   * group's identical first prompts cost one prefill), and the first request reuses what the cache held,
   * both with generate()'s caveat on the last bits. On the fused 4-bit decode, a prompt head of at least
   * MIN_SHARED_PREFIX tokens that every request has is stored once for all of them (batch-layout.ts), so
   * a group's later turns, which share the system prompt, tools and query, fit the cache as one batch.
   * Tokens are drawn on the GPU for all rows at once and steps encoded ahead of the read-back, as
   * generate() does (batch-decode.ts). A request that fails validation rejects the call, naming its index.
   */
  generateBatch(requests: GenerateRequest[]): Promise<TokenGeneration[]> {
    if (!Array.isArray(requests)) return Promise.reject(new Error('generateBatch: requests must be an array of { prompt, options }'));
    if (requests.length === 1) return this.generate(requests[0]?.prompt, requests[0]?.options).then((g) => [g]);
    return this.serial(async () => {
      const checked = requests.map((r, i) => {
        if (!r || !Array.isArray(r.prompt)) throw new Error(`generateBatch: request ${i} has no prompt array`);
        return this.checkGenerate(r.prompt, r.options ?? {}, `generateBatch: request ${i}`);
      });
      const out: TokenGeneration[] = [];
      const live: number[] = [];
      checked.forEach((c, i) => {
        if (c.o.signal?.aborted || c.maxNew === 0) out[i] = emptyGeneration(c.o.signal?.aborted ? 'abort' : 'length');
        else live.push(i);
      });
      // Requests in order, as many at a time as fit the decode rows and the cache (batch-layout.ts).
      const fits = (g: number[]) => batchLayout(g.map((i) => this.layoutRequest(checked[i])), this.fusedDecode).rows <= this.batchContext;
      for (let k = 0; k < live.length; ) {
        const group = [live[k++]];
        while (k < live.length && group.length < this.maxDecodeRows && fits([...group, live[k]])) group.push(live[k++]);
        const results = group.length === 1 ? [await this.generateChecked(checked[group[0]])] : await this.decodeBatch(group.map((i) => checked[i]));
        group.forEach((i, j) => (out[i] = results[j]));
      }
      return out;
    });
  }

  destroy(): void {
    this.dropPlans();
    for (const s of this.slots) {
      s.sampler.destroy();
      s.logits.destroy();
    }
    this.batchDrawLog?.destroy();
    this.batchDrawLog = null;
    this.slots = [];
    this.batchRowsBuffer?.destroy();
    this.batchRowsBuffer = null;
    this.batchPrefixes?.destroy();
    this.batchPrefixes = null;
    this.batchScratch?.destroy();
    this.batchScratch = null;
    this.drawLog?.destroy();
    this.drawLog = null;
    this.kv?.destroy();
    this.kv = null;
    this.kvHolds = null;
    this.adapters.destroy();
    // The fused decode's packed per-layer norms and biases go with the weights they were made from.
    releaseDecodeParams(this.weights);
    this.weights.destroy();
  }

  // ---- internals ----

  private serial<T>(f: () => Promise<T>): Promise<T> {
    const checked = () => {
      // A lost device fails every later call at once, with the same clear error.
      assertDeviceAlive(this.ctx, 'running the planner model');
      return f();
    };
    const run = this.queue.then(checked, checked);
    this.queue = run.catch(() => undefined);
    return run;
  }

  private dropPlans(): void {
    for (const s of this.samplers.values()) s.destroy();
    this.samplers.clear();
    this.batchPlan?.destroy();
    this.decodePlan?.destroy();
    this.batchPlan = this.decodePlan = null;
    this.records = new WeakMap();
  }

  private async plan(kind: 'batch' | 'decode', rows: number): Promise<ActivationPlan> {
    const cur = kind === 'batch' ? this.batchPlan : this.decodePlan;
    if (cur && cur.rows >= rows) return cur;
    if (cur) {
      this.samplers.get(cur)?.destroy();
      this.samplers.delete(cur);
      cur.destroy();
      this.records = new WeakMap();
    }
    // A decode plan computes the logits of every row it runs (one per sequence of a batch).
    const plan = await ActivationPlan.create(this.ctx, this.config, { rows, loraRank: this.adapters.maxRank(), logitsRows: kind === 'batch' ? this.logitsRows : rows });
    if (kind === 'batch') this.batchPlan = plan;
    else this.decodePlan = plan;
    return plan;
  }

  /**
   * Step lists are recorded once per (adapter, plan, key). A one-off plan (training) keeps its records
   * on itself so they go away with it.
   */
  private async recorded(key: string, make: (adapter: GpuAdapter | null) => Promise<Step[]>, oneOff?: ActivationPlan): Promise<Step[]> {
    const adapter = this.adapters.active;
    const owner = adapter ?? BASE;
    const store = oneOff?.keep ? this.oneOffRecords(oneOff) : this.records;
    let m = store.get(owner);
    if (!m) {
      m = new Map();
      store.set(owner, m);
    }
    let steps = m.get(key);
    if (!steps) {
      steps = await make(adapter);
      m.set(key, steps);
    }
    return steps;
  }

  private readonly planRecords = new WeakMap<ActivationPlan, WeakMap<object, Map<string, Step[]>>>();

  private oneOffRecords(plan: ActivationPlan): WeakMap<object, Map<string, Step[]>> {
    let r = this.planRecords.get(plan);
    if (!r) {
      r = new WeakMap();
      this.planRecords.set(plan, r);
    }
    return r;
  }

  private submit(steps: Step[][], doing: string): void {
    assertDeviceAlive(this.ctx, doing);
    const enc = this.ctx.device.createCommandEncoder({ label: doing });
    for (const s of steps) encodeSteps(this.ctx, enc, s);
    this.ctx.device.queue.submit([enc.finish()]);
  }

  /** Reads back f32s; a device lost while waiting becomes a GpuDeviceLostError instead of a hang. */
  private async readF32(buf: GPUBuffer, count: number, offsetElems: number, doing: string): Promise<Float32Array> {
    return new Float32Array(await this.unlessLost(readBuffer(this.ctx, buf, count * 4, offsetElems * 4), doing));
  }

  /**
   * `p`, or a GpuDeviceLostError if the device is lost first (a read-back would otherwise never settle). A
   * read-back the loss aborts already rejects with a GpuDeviceLostError (readBuffer).
   */
  private unlessLost<T>(p: Promise<T>, doing: string): Promise<T> {
    const lost = this.ctx.lost.then((info): T => {
      throw new GpuDeviceLostError(info.reason ?? 'unknown', `The GPU device was lost while ${doing} (${info.message || info.reason}). Reload the model to continue.`);
    });
    return Promise.race([p, lost]);
  }

  /**
   * The sampler over a plan's logits (made once per plan): the CPU rule reads the first row; on the decode
   * plan GPU draws take all its rows (generateBatch's sequences).
   */
  private async sampler(plan: ActivationPlan): Promise<GpuSampler> {
    let s = this.samplers.get(plan);
    if (!s) {
      const rows = plan === this.decodePlan ? plan.rows : 1;
      s = await GpuSampler.create(this.ctx, { logits: plan.logits, vocab: this.config.vocabSize, rows });
      this.samplers.set(plan, s);
    }
    return s;
  }

  private writeRows(plan: ActivationPlan, ids: number[], pos: number[], ranges: number[]): void {
    writeBuffer(this.ctx, plan.ids, Uint32Array.from(ids));
    writeBuffer(this.ctx, plan.pos, Uint32Array.from(pos));
    writeBuffer(this.ctx, plan.ranges, Uint32Array.from(ranges));
  }

  private async scoreBatch(seqs: number[][], outs: number[][]): Promise<void> {
    const total = seqs.reduce((a, s) => a + s.length, 0);
    const n = bucket(total, this.maxBatchRows);
    const plan = await this.plan('batch', n);
    const batch = packSequences(seqs, n);
    const lp = await this.runPacked(plan, batch, 'scoring');
    unpackLogprobs(batch, lp).forEach((row, i) => outs[i].push(...row));
  }

  /**
   * Forward over a packed batch plus log p(target) of every real row (written to plan.logprobs and the
   * final log-sum-exp to plan.lse), in one submission; returns the per-row logprobs.
   */
  private async runPacked(plan: ActivationPlan, batch: PackedBatch, doing: string): Promise<Float32Array> {
    const n = batch.rows;
    writeBatch(this.ctx, plan, batch);
    const kind = plan.keep ? 'keep' : 'score';
    const forward = await this.recorded(`${kind}:${plan.rows}:${n}`, (adapter) => recordForward(this.ctx, { plan, weights: this.weights, adapter, n }), plan);
    const C = plan.logitsRows;
    assertDeviceAlive(this.ctx, doing);
    const enc = this.ctx.device.createCommandEncoder({ label: doing });
    encodeSteps(this.ctx, enc, forward);
    for (let r0 = 0; r0 < batch.tokens; r0 += C) {
      const rows = Math.min(C, batch.tokens - r0);
      const chunk = await this.recorded(`${kind}Chunk:${plan.rows}:${rows}`, () => recordTargetLogprobs(this.ctx, plan, this.weights, () => this.logitsRow, rows), plan);
      // The chunk's copies read logitsRow while being encoded, so set it before each one.
      this.logitsRow = r0;
      encodeSteps(this.ctx, enc, chunk);
    }
    this.ctx.device.queue.submit([enc.finish()]);
    return this.readF32(plan.logprobs, batch.tokens, 0, doing);
  }

  /**
   * For the trainer: runs the forward of `sequences` (one packed batch, active adapter) into a new plan
   * that keeps every layer's activations, plus target logprobs and the final log-sum-exp per row. The
   * caller owns the returned plan (destroy it) and may record backward passes over its buffers.
   */
  forwardForBackward(sequences: number[][], o: { logitsRows?: number } = {}): Promise<{ plan: ActivationPlan; batch: PackedBatch; logprobs: number[][] }> {
    return this.serial(async () => {
      sequences.forEach((s, i) => validateTokenIds(s, this.config.vocabSize, `forwardForBackward: sequence ${i}`));
      const total = sequences.reduce((a, s) => a + s.length, 0);
      if (total === 0) throw new Error('forwardForBackward: no tokens');
      const plan = await ActivationPlan.create(this.ctx, this.config, { rows: total, keep: true, loraRank: this.adapters.maxRank(), logitsRows: o.logitsRows ?? this.logitsRows });
      try {
        const batch = packSequences(sequences, total);
        const lp = await this.runPacked(plan, batch, 'the training forward');
        return { plan, batch, logprobs: unpackLogprobs(batch, lp) };
      } catch (e) {
        plan.destroy();
        throw e;
      }
    });
  }

  /**
   * Runs the prompt through the model and leaves the last position's logits in row 0 of the returned
   * plan's logits. With `cache`, K/V go to the KV cache and a prompt longer than maxBatchRows is run in
   * chunks of at most maxBatchRows rows, each attending to the cache filled by the ones before.
   */
  private async prefill(tokens: number[], cache: boolean, from = 0, base = 0): Promise<ActivationPlan> {
    if (!cache) return this.prefillChunk(tokens, 0, null);
    const kv = await this.kvCache();
    if (base + tokens.length > kv.maxCtx) throw new Error(`prompt of ${tokens.length} tokens at cache row ${base} does not fit the cache's ${kv.maxCtx} rows`);
    if (!(from >= 0 && from < tokens.length)) throw new Error(`prefill: start ${from} outside the prompt of ${tokens.length} tokens`);
    const C = this.maxBatchRows;
    let plan: ActivationPlan | null = null;
    for (let c0 = from; c0 < tokens.length; c0 += C) plan = await this.prefillChunk(tokens.slice(c0, c0 + C), c0, kv, base);
    return plan!;
  }

  /** Prompt tokens at the front whose K/V the cache already holds for the active adapter's current weights. */
  private reusablePrefix(prompt: number[]): number {
    const held = this.kvHolds;
    const active = this.adapters.active;
    if (!held || held.adapter !== active || held.version !== (active?.version ?? 0)) return 0;
    let n = 0;
    const max = Math.min(held.tokens.length, prompt.length - 1); // the last prompt token runs, for its logits
    while (n < max && held.tokens[n] === prompt[n]) n++;
    return n;
  }

  /** Rows of the plan a prefill chunk of P tokens at position `start` runs in (P rounded up to a bucket). */
  private prefillRows(P: number, start: number, kv: KvCache | null): number {
    // Padding rows of a cached prefill write cache rows past the prompt (each decode step overwrites its
    // row before any query reads it), so the padded chunk must still fit the cache.
    return Math.max(P, Math.min(bucket(P, this.maxBatchRows), kv ? kv.maxCtx - start : Infinity));
  }

  /**
   * Prompt rows at positions start.. (in the cache when `kv` is given, from cache row base + start: a
   * sequence of generateBatch has its own region of the cache from row `base`), and logits of the last row.
   */
  private async prefillChunk(tokens: number[], start: number, kv: KvCache | null, base = 0): Promise<ActivationPlan> {
    const P = tokens.length;
    const n = this.prefillRows(P, base + start, kv);
    const plan = await this.plan('batch', n);
    const batch = packSequences([tokens], n);
    if (start > 0 || base > 0) {
      // Positions continue the prompt; every row sees its region of the cache up to itself.
      for (let r = 0; r < n; r++) {
        batch.pos[r] = start + r;
        batch.ranges[2 * r] = base;
        batch.ranges[2 * r + 1] = base + start + r + 1;
      }
    }
    writeBatch(this.ctx, plan, batch);
    let forward: Step[];
    if (kv) {
      this.cacheRow = base + start;
      forward = await this.recorded(`prefill:${plan.rows}:${n}`, (adapter) =>
        recordForward(this.ctx, { plan, weights: this.weights, adapter, n, cache: { kv, cacheRow: () => this.cacheRow } }),
      );
    } else {
      forward = await this.recorded(`score:${plan.rows}:${n}`, (adapter) => recordForward(this.ctx, { plan, weights: this.weights, adapter, n }));
    }
    this.logitsRow = P - 1;
    const logitSteps = await this.recorded(`lastLogits:${plan.rows}`, () => recordLogits(this.ctx, plan, this.weights, () => this.logitsRow, 1));
    this.submit([forward, logitSteps], 'prefill');
    return plan;
  }

  /** The KV cache, with at least `rows` rows (grown for a batch up to batchContext; its contents then go). */
  private async kvCache(rows = this.maxContext): Promise<KvCache> {
    if (this.kv && this.kv.maxCtx < rows) {
      this.kv.destroy();
      this.kv = null;
      this.kvHolds = null;
      // Recorded steps bind the old cache's buffers.
      this.records = new WeakMap();
    }
    this.kv ??= await KvCache.create(this.ctx, this.config, rows);
    return this.kv;
  }

  /**
   * The decode forward over the KV cache, one row (generate) or `batch.n` rows of generateBatch: on 4-bit
   * weights with fused q/k/v and gate/up (a web-llm build) the fused decode kernels of decode-forward.ts
   * (about 40% fewer dispatches, no residual copies), else the general forward.
   */
  private recordedDecode(plan: ActivationPlan, kv: KvCache, position: number, batch?: { n: number }): Promise<Step[]> {
    const n = batch?.n ?? 1;
    // A batch's rows are sequences in their own cache regions: K/V go to the rows generateBatch set.
    const rows = batch && { buffer: this.batchRowsBuffer!, at: (r: number) => this.batchCacheRows[r] };
    const prefixes = batch ? this.batchPrefixes! : undefined;
    const tag = batch ? `decodeBatch:${n}` : 'decode';
    if (!this.fusedDecode) {
      return this.recorded(tag, (adapter) => recordForward(this.ctx, { plan, weights: this.weights, adapter, n, cache: { kv, cacheRow: () => this.cacheRow, rows } }));
    }
    // Two recordings: attention in one workgroup per KV head while the context is short, split over key
    // slices once it may be long (the ranges themselves are only on the GPU). No sequence is longer than
    // maxContext, whatever rows a batch grew the cache to.
    const short = position + 1 <= ATTN_DECODE_SINGLE_MAX_KEYS;
    const maxKeys = short ? ATTN_DECODE_SINGLE_MAX_KEYS : Math.min(kv.maxCtx, this.maxContext);
    return this.recorded(short ? tag : `${tag}:long`, (adapter) =>
      recordDecodeForward(this.ctx, { plan, weights: this.weights, adapter, n, cache: { kv, cacheRow: () => this.cacheRow, maxKeys, rows, prefixes } }),
    );
  }

  private async decodeStep(token: number, position: number): Promise<ActivationPlan> {
    const plan = await this.plan('decode', 1);
    const kv = await this.kvCache();
    this.writeRows(plan, [token], [position], [0, position + 1]);
    this.cacheRow = position;
    const forward = await this.recordedDecode(plan, kv, position);
    const logitSteps = await this.recorded('decodeLogits', () => recordLogits(this.ctx, plan, this.weights, 0, 1));
    this.submit([forward, logitSteps], 'decoding');
    this.countDecode(1);
    return plan;
  }

  /**
   * One token per round trip: sample on the CPU from the GPU's candidates, then run the token. Continues
   * from the tokens already taken (`first` holds the logits of the next one); `pending` are uniforms the
   * Rng already gave for the next tokens (a switch from decodeAhead), used before it gives more.
   */
  private async decodeInStep(first: ActivationPlan, l: DecodeLoop, pending: number[] = []): Promise<void> {
    let plan = first;
    const greedy = (l.o.temperature ?? 0) === 0;
    for (;;) {
      const i = l.tokens.length;
      if (l.o.onLogits) l.o.onLogits(await this.readF32(plan.logits, this.config.vocabSize, 0, 'reading logits'));
      const sampler = await this.sampler(plan);
      const u = greedy ? 0 : (pending.shift() ?? l.rng.next());
      const { token: id, logprob } = await this.unlessLost(sampler.sampleWithU(l.o, u), 'sampling');
      if (!acceptToken(l, id, logprob)) break;
      plan = await this.decodeStep(id, l.prompt.length + i);
    }
  }

  /**
   * Decoding with the token drawn on the GPU: step i+1's forward reads the id step i's draw wrote, so steps
   * are encoded and submitted up to DECODE_AHEAD ahead of the tokens read back, and the CPU's encoding and
   * the read-back latency overlap the GPU's work instead of adding to it. Each step's uniform is drawn from
   * the Rng in order, as the in-step path draws it, and a draw the GPU leaves undecided (gpu-draw.wgsl.ts)
   * is redone on the CPU from the same uniform, so both paths give the same tokens. Steps in flight past
   * a stop are wasted work; their cache rows lie beyond what the cache is said to hold.
   */
  private async decodeAhead(first: ActivationPlan, l: DecodeLoop): Promise<void> {
    const decode = await this.plan('decode', 1);
    const kv = await this.kvCache();
    const target = { ids: decode.ids, log: this.drawLogBuffer() };
    const firstSampler = await this.sampler(first);
    const stepSampler = await this.sampler(decode);
    const firstDraw = (await firstSampler.drawDispatches(l.o, target)).map(dispatchStep);
    const stepDraw = (await stepSampler.drawDispatches(l.o, target)).map(dispatchStep);
    const logitSteps = await this.recorded('decodeLogits', () => recordLogits(this.ctx, decode, this.weights, 0, 1));
    const greedy = (l.o.temperature ?? 0) === 0;
    const us: number[] = [];
    const redrawnAt: number[] = [];
    const reads: Array<Promise<ArrayBuffer>> = [];
    const entryBytes = DRAW_LOG_WORDS * 4;
    // Step i: the forward of token i-1 (none for i = 0: the prefill's logits), then the draw of token i.
    const submitStep = async (i: number) => {
      us[i] ??= greedy ? 0 : l.rng.next();
      if (i === 0) {
        firstSampler.setDraw(us[i], i);
        this.submit([firstDraw], 'sampling');
      } else {
        const p = l.prompt.length + i - 1;
        // Recorded once per adapter and context length class, so after the first steps this awaits nothing.
        const forward = await this.recordedDecode(decode, kv, p);
        writeBuffer(this.ctx, decode.pos, Uint32Array.of(p));
        writeBuffer(this.ctx, decode.ranges, Uint32Array.of(0, p + 1));
        this.cacheRow = p;
        stepSampler.setDraw(us[i], i);
        this.submit([forward, logitSteps, stepDraw], 'decoding');
        this.countDecode(1);
      }
      const r = readBuffer(this.ctx, target.log, entryBytes, i * entryBytes);
      // A read abandoned after a stop must not surface as an unhandled rejection.
      r.catch(() => undefined);
      reads[i] = r;
    };
    let next = 0;
    for (let i = 0; i < l.maxNew; i++) {
      while (next < l.maxNew && next <= i + DECODE_AHEAD) await submitStep(next++);
      const e = parseDrawLog(await this.unlessLost(reads[i], 'decoding'));
      let id = e.token;
      let logprob = e.logit - e.lse1;
      if (e.undecided) {
        // Steps after i ran on a provisional token: let them finish, recompute step i's logits (the cache
        // rows it reads are unchanged) and draw on the CPU with the same uniform.
        await Promise.allSettled(reads.slice(i + 1, next));
        const plan = i === 0 ? first : await this.decodeStep(l.tokens[i - 1], l.prompt.length + i - 1);
        const r = await this.unlessLost((await this.sampler(plan)).sampleWithU(l.o, us[i]), 'sampling');
        id = r.token;
        logprob = r.logprob;
        writeBuffer(this.ctx, decode.ids, Uint32Array.of(id));
        next = i + 1;
        l.redrawn++;
        if (!acceptToken(l, id, logprob)) break;
        // Rows this flat (random weights, a very high temperature) make most draws undecided, and each costs
        // a drained pipeline plus a recomputed step on top of the whole-row draw the in-step path pays too:
        // when half the recent tokens needed one, go on one token per round trip instead.
        redrawnAt.push(i);
        if (redrawnAt.filter((j) => j > i - REDRAW_WINDOW).length >= REDRAW_WINDOW / 2) {
          const plan = await this.decodeStep(id, l.prompt.length + i);
          return this.decodeInStep(plan, l, us.slice(i + 1).filter((u) => u !== undefined));
        }
        continue;
      }
      if (!acceptToken(l, id, logprob)) break;
    }
  }

  /** Whether decode runs the fused 4-bit kernels (decided once: the weights never change). */
  private get fusedDecode(): boolean {
    return (this.fusedDecodeMemo ??= canFuseDecode(this.weights));
  }

  private countDecode(rows: number, padRows = 0): void {
    this.decodeCounters.steps++;
    this.decodeCounters.rows += rows;
    this.decodeCounters.padRows += padRows;
  }

  /** The draw log, sized for every position of the context (created once). */
  private drawLogBuffer(): GPUBuffer {
    this.drawLog ??= createStorage(this.ctx, 'runtime.drawLog', this.maxContext * DRAW_LOG_WORDS * 4);
    return this.drawLog;
  }

  /** A request's settings, checked (errors start with `what`), and the cache rows it needs at most. */
  private checkGenerate(prompt: number[], o: GenerateTokensOptions, what: string): CheckedRequest {
    validateTokenIds(prompt, this.config.vocabSize, `${what}: prompt`);
    if (prompt.length === 0) throw new Error(`${what}: the prompt is empty`);
    try {
      checkSamplingOptions(o);
    } catch (e) {
      throw what === 'generate' ? e : new Error(`${what}: ${e instanceof Error ? e.message : String(e)}`);
    }
    const maxNew = o.maxNewTokens ?? 256;
    if (!Number.isInteger(maxNew) || maxNew < 0) throw new Error(`${what}: maxNewTokens must be an integer >= 0, got ${o.maxNewTokens}`);
    if (prompt.length + maxNew > this.maxContext) {
      throw new Error(`${what}: prompt (${prompt.length}) + maxNewTokens (${maxNew}) exceeds the context limit ${this.maxContext}`);
    }
    return { prompt, o, maxNew, rows: prompt.length + maxNew, stop: new Set([...this.config.eosTokenIds, ...(o.stopIds ?? [])]) };
  }

  /** A new decode loop's state for a checked request (a fresh Rng from its seed). */
  private loopFor(c: CheckedRequest): DecodeLoop {
    return { prompt: c.prompt, o: c.o, maxNew: c.maxNew, stop: c.stop, rng: new Rng(c.o.seed ?? 0), tokens: [], logprobs: [], t0: now(), prefillMs: 0, t1: 0, finishReason: 'length', redrawn: 0 };
  }

  private generateLocked(prompt: number[], o: GenerateTokensOptions): Promise<TokenGeneration> {
    return this.generateChecked(this.checkGenerate(prompt, o, 'generate'));
  }

  private async generateChecked(c: CheckedRequest): Promise<TokenGeneration> {
    const { prompt, o } = c;
    if (o.signal?.aborted || c.maxNew === 0) return emptyGeneration(o.signal?.aborted ? 'abort' : 'length');
    const reused = o.reusePrefix === false ? 0 : this.reusablePrefix(prompt);
    const adapter = this.adapters.active;
    const version = adapter?.version ?? 0;
    // Until this generate ends well, the cache's rows are a mix of old and new: claim nothing.
    this.kvHolds = null;
    const loop = this.loopFor(c);
    const plan = await this.prefill(prompt, true, reused);
    // The logits callback needs every row read back, and top-k above the GPU's candidates needs the CPU.
    if (!o.onLogits && gpuDrawServes(o, this.config.vocabSize)) await this.decodeAhead(plan, loop);
    else await this.decodeInStep(plan, loop);
    // Every token but the last has had its K/V written by the step that ran it. Weights rewritten while this
    // call ran (the trainer's step does not wait for it) leave `version` behind the adapter's, so the next
    // call will not reuse these rows.
    this.kvHolds = { tokens: prompt.concat(loop.tokens.slice(0, -1)), adapter, version };
    return generationOf(loop, reused);
  }

  /** A buffer of at least `bytes` for copying prompt rows between regions of the cache (kept for later batches). */
  private prefixScratch(bytes: number): GPUBuffer {
    if (!this.batchScratch || this.batchScratch.size < bytes) {
      this.batchScratch?.destroy();
      // Sized for the longest prompt at once, so it is made once per cache layout.
      this.batchScratch = createStorage(this.ctx, 'runtime.batchPrefixRows', Math.max(bytes, this.maxContext * this.kv!.rowBytes));
    }
    return this.batchScratch;
  }

  /** What batchLayout needs of a request. */
  private layoutRequest(r: CheckedRequest) {
    return { prompt: r.prompt, rows: r.rows, reusePrefix: r.o.reusePrefix };
  }

  /** Copies `count` KV-cache rows from row `from` to row `to`, every layer (one submission). */
  private copyCacheRows(kv: KvCache, from: number, to: number, count: number): void {
    if (count <= 0) return;
    const bytes = count * kv.rowBytes;
    const scratch = this.prefixScratch(bytes);
    const enc = this.ctx.device.createCommandEncoder({ label: 'batch prefill' });
    // WebGPU copies only between different buffers: through a scratch buffer, layer by layer.
    for (const buf of [...kv.k, ...kv.v]) {
      enc.copyBufferToBuffer(buf, from * kv.rowBytes, scratch, 0, bytes);
      enc.copyBufferToBuffer(scratch, 0, buf, to * kv.rowBytes, bytes);
    }
    this.ctx.device.queue.submit([enc.finish()]);
  }

  /** The slots of generateBatch's first `count` sequences (made once, kept for later batches). */
  private async batchSlots(count: number): Promise<BatchSlot[]> {
    const V = this.config.vocabSize;
    while (this.slots.length < count) {
      const k = this.slots.length;
      const logits = createStorage(this.ctx, `runtime.batchLogits${k}`, V * 4);
      this.slots.push({ logits, sampler: await GpuSampler.create(this.ctx, { logits, vocab: V }) });
    }
    this.batchRowsBuffer ??= createStorage(this.ctx, 'runtime.batchCacheRows', this.maxDecodeRows * 4);
    if (this.fusedDecode) this.batchPrefixes ??= createStorage(this.ctx, 'runtime.batchPrefixes', this.maxDecodeRows * 8);
    this.batchDrawLog ??= createStorage(this.ctx, 'runtime.batchDrawLog', this.maxContext * this.maxDecodeRows * DRAW_LOG_WORDS * 4);
    return this.slots.slice(0, count);
  }

  /**
   * One decode step of a batch (BatchHost.step): rows[j] runs its token i - 1 at position prompt + i - 1,
   * with its K/V written to its region and its keys read from there; then either every row's GPU draw
   * (one set of sampler dispatches over the step's logits rows per distinct sampling options, each row's
   * token written to ids[j] for the next step) or row j's logits copied to its slot. One submission.
   */
  private async batchStep(decode: ActivationPlan, kv: KvCache, rows: BatchRow[], i: number, ids: 'cpu' | 'gpu', us?: number[]): Promise<void> {
    const V = this.config.vocabSize;
    const n = rows.length;
    // Padding rows up to the step's row count (decodeRowBucket): position 0, K/V written to and read from
    // the pad row only, the token id its ids entry still holds (always a valid id); logits not used.
    const pad = this.batchPadRow;
    const m = pad >= 0 ? decodeRowBucket(n, this.maxDecodeRows) : n;
    const padded = <T>(xs: T[], fill: T) => xs.concat(Array<T>(m - n).fill(fill));
    const pos = rows.map((r) => r.l.prompt.length + i - 1);
    this.batchCacheRows = padded(rows.map((r, j) => r.base + pos[j] - r.offset), pad);
    writeBuffer(this.ctx, decode.pos, Uint32Array.from(padded(pos, 0)));
    writeBuffer(this.ctx, decode.ranges, Uint32Array.from(padded(rows.map((r, j): [number, number] => [r.base, this.batchCacheRows[j] + 1]), [pad, pad + 1]).flat()));
    writeBuffer(this.ctx, this.batchRowsBuffer!, Uint32Array.from(this.batchCacheRows));
    // The fused decode reads each row's shared prefix first (the general decode has whole regions).
    if (this.batchPrefixes) writeBuffer(this.ctx, this.batchPrefixes, Uint32Array.from(padded(rows.map((r): [number, number] => [0, r.offset]), [0, 0]).flat()));
    if (ids === 'cpu') writeBuffer(this.ctx, decode.ids, Uint32Array.from(rows.map((r) => r.l.tokens[i - 1])));
    const forward = await this.recordedDecode(decode, kv, Math.max(...pos), { n: m });
    const logitSteps = await this.recorded(`decodeLogits:${m}`, () => recordLogits(this.ctx, decode, this.weights, 0, m));
    const draws = us ? await this.batchDraws(decode, rows, i, us) : [];
    assertDeviceAlive(this.ctx, 'decoding a batch');
    const enc = this.ctx.device.createCommandEncoder({ label: 'decoding a batch' });
    // The previous step's draws wrote row j's token to ids[j]; rows that left since shift the others up,
    // whose tokens are then taken from the draw log.
    const prev = this.batchDrawRows;
    if (ids === 'gpu' && !(prev && prev.length >= n && rows.every((r, j) => prev[j] === r))) {
      rows.forEach((r, j) => enc.copyBufferToBuffer(this.batchDrawLog!, ((i - 1) * this.maxDecodeRows + r.b) * DRAW_LOG_WORDS * 4, decode.ids, j * 4, 4));
    }
    encodeSteps(this.ctx, enc, forward);
    encodeSteps(this.ctx, enc, logitSteps);
    if (us) encodeSteps(this.ctx, enc, draws);
    else rows.forEach((r, j) => enc.copyBufferToBuffer(decode.logits, j * V * 4, r.slot.logits, 0, V * 4));
    this.ctx.device.queue.submit([enc.finish()]);
    this.batchDrawRows = us ? rows : null;
    this.countDecode(n, m - n);
  }

  /**
   * The GPU draws of a batch step's rows from the decode plan's logits rows 0..n-1: one plan per distinct
   * sampling options (usually one: a group's rollouts share them), each drawing only its rows.
   */
  private async batchDraws(decode: ActivationPlan, rows: BatchRow[], i: number, us: number[]): Promise<Step[]> {
    const sampler = await this.sampler(decode);
    const target = { ids: decode.ids, log: this.batchDrawLog! };
    // The sampler keeps a plan per set of options (cached): rows whose options give the same plan share it.
    const plans = new Map<number, Dispatch[]>();
    const entries = [];
    for (const [j, r] of rows.entries()) {
      const { plan, dispatches } = await sampler.drawPlan(r.l.o, target, rows.length);
      plans.set(plan, dispatches);
      entries.push({ u: us[j], index: i * this.maxDecodeRows + r.b, plan });
    }
    sampler.setDraws(entries);
    return [...plans.values()].flatMap((ds) => ds.map(dispatchStep));
  }

  /**
   * 2..maxDecodeRows checked requests decoded in lockstep. Sequence b owns a region of the cache (its
   * prompt + maxNew rows, or only those past a shared prompt head: batch-layout.ts), and each step runs
   * the last token of every unfinished sequence as one row of the decode plan, its K/V written to its own
   * region, its keys read from the shared head and then its region. A finished sequence leaves the batch,
   * so later steps run fewer rows. Each step is one submission (forward, logits of all rows, their GPU
   * draws) with a read-back of all the rows' tokens, up to DECODE_AHEAD steps behind.
   */
  private async decodeBatch(reqs: CheckedRequest[]): Promise<TokenGeneration[]> {
    const V = this.config.vocabSize;
    const layout = batchLayout(reqs.map((r) => this.layoutRequest(r)), this.fusedDecode);
    const { bases, offsets, shared, staging, rows } = layout;
    // Grown once to batchContext, not per batch size (growing drops what the cache held).
    const kv = await this.kvCache(rows > this.maxContext ? this.batchContext : this.maxContext);
    this.batchPadRow = rows < kv.maxCtx ? kv.maxCtx - 1 : -1;
    const adapter = this.adapters.active;
    const version = adapter?.version ?? 0;
    // The first sequence's region starts at row 0, where the cache may hold a previous generate's prefix.
    const held = reqs[0].o.reusePrefix === false ? 0 : this.reusablePrefix(reqs[0].prompt);
    // Until the batch ends well, the rows are a mix of old and new: claim nothing.
    this.kvHolds = null;
    const decode = await this.plan('decode', this.maxDecodeRows);
    const slots = await this.batchSlots(reqs.length);
    const loops = reqs.map((r) => this.loopFor(r));
    const reused: number[] = [];
    for (const [b, r] of reqs.entries()) {
      let plan: ActivationPlan;
      if (shared > 0 && b > 0) {
        // Its tail is prefilled in the staging rows behind a copy of the shared prefix (one contiguous key
        // range, as the prefill attends), then moved to its region. Staged prefills write from
        // staging + shared on, so the copy made for the first one serves them all.
        if (b === 1) this.copyCacheRows(kv, 0, staging, shared);
        plan = await this.prefill(r.prompt, true, shared, staging);
        this.copyCacheRows(kv, staging + shared, bases[b], r.prompt.length - shared);
        reused.push(shared);
      } else {
        // A prompt prefix an earlier sequence of the batch has (the G rollouts of a group share their whole
        // first prompt) is copied from that sequence's region, not prefilled again. Regions are prefilled
        // in order and a chunk's padding rows only spill forward, so an earlier region's prompt rows are
        // intact.
        const { from, src } = b === 0 ? { from: held, src: -1 } : sharedPrefix(reqs, b);
        if (src >= 0) this.copyCacheRows(kv, bases[src], bases[b], from);
        plan = await this.prefill(r.prompt, true, from, bases[b]);
        reused.push(from);
      }
      const logitsEnc = this.ctx.device.createCommandEncoder({ label: 'batch prefill logits' });
      logitsEnc.copyBufferToBuffer(plan.logits, 0, slots[b].logits, 0, V * 4);
      this.ctx.device.queue.submit([logitsEnc.finish()]);
    }
    const batch: BatchRow[] = reqs.map((_, b) => ({ b, l: loops[b], slot: slots[b], base: bases[b], offset: offsets[b], us: [], done: false }));
    const host: BatchHost = {
      ctx: this.ctx,
      vocab: V,
      drawLog: this.batchDrawLog!,
      maxRows: this.maxDecodeRows,
      step: (rows, i, ids, us) => this.batchStep(decode, kv, rows, i, ids, us),
      unlessLost: (p, doing) => this.unlessLost(p, doing),
    };
    // The logits callback needs every row read back, and top-k above the GPU's candidates needs the CPU.
    try {
      await decodeRows(host, batch, reqs.every((r) => !r.o.onLogits && gpuDrawServes(r.o, V)));
    } finally {
      this.batchDrawRows = null;
    }
    // The first sequence's region is rows 0.. and holds its tokens as a lone generate would leave them.
    this.kvHolds = { tokens: reqs[0].prompt.concat(loops[0].tokens.slice(0, -1)), adapter, version };
    return loops.map((l, b) => generationOf(l, reused[b]));
  }
}

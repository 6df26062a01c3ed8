// The Qwen2 runtime: base weights + LoRA adapters on the GPU, and the three things the planner and the
// trainer ask of them: score given sequences (packed into batches), the logits after a prompt, and
// streaming generation (prefill into a KV cache, then one token per step). Calls are serialised: the
// activation buffers and the KV cache are shared. The work is done by:
//   runtime-resources.ts  plans, samplers, KV cache and what it holds, recorded step lists (step-records.ts)
//   prefill.ts            prompts into the cache          scoring.ts       score() and the training forward
//   batch-decoder.ts      decoding: generate() is a batch of one, generateBatch decodes in lockstep
import { assertDeviceAlive, type GpuContext } from '../gpu/device';
import { validateTokenIds } from '../kernels/embedding/embedding';
import { AdapterSet, type GpuAdapter } from '../model/adapters';
import { BatchDecoder, emptyGeneration, layoutOf } from './batch-decoder';
import { decodeParamsBytes, prepareDecodeParams, releaseDecodeParams } from '../model/decode-forward';
import { checkGenerate, type CheckedRequest, type GenerateRequest, type GenerateTokensOptions, type TokenGeneration } from './generation';
import { readF32 } from './gpu-calls';
import type { Qwen2Config } from '../io/qwen2-config';
import type { LoraAdapter } from '../io/peft';
import { prefill, prefillRows } from './prefill';
import { runtimeLimits, type GpuMemoryReport, type RuntimeOptions } from './runtime-options';
import { RuntimeResources } from './runtime-resources';
import { firstNonFinite, nonFiniteError, NonFiniteLogprob } from './non-finite';
import { scoreSequences } from './scoring';
import { Qwen2Weights, type Q4WeightSource, type WeightSource } from '../model/weights';

// The generation contract lives in generation.ts (the decoder uses it without importing the runtime);
// re-exported here for the runtime's callers, as are its options and row limits.
export type { GenerateRequest, GenerateTokensOptions, TokenGeneration } from './generation';
export { decodeRowBucket, defaultLogitsRows, defaultMaxContext, GENERAL_DECODE_ROWS, MAX_DECODE_ROWS, type GpuMemoryReport, type RuntimeOptions } from './runtime-options';

/** The result of a request that asks for no tokens (aborted already, or maxNewTokens 0), else null. */
function nothingToGenerate(c: CheckedRequest): TokenGeneration | null {
  return c.o.signal?.aborted || c.maxNew === 0 ? emptyGeneration(c.o.signal?.aborted ? 'abort' : 'length') : null;
}

export class Qwen2Runtime {
  readonly adapters: AdapterSet;
  private readonly res: RuntimeResources;
  private readonly decoder: BatchDecoder;
  private queue: Promise<unknown> = Promise.resolve();
  readonly maxContext: number;
  readonly maxBatchRows: number;
  readonly logitsRows: number;
  readonly batchContext: number;

  private constructor(readonly ctx: GpuContext, readonly config: Qwen2Config, readonly weights: Qwen2Weights, o: RuntimeOptions) {
    const limits = runtimeLimits(config, o, ctx.caps);
    ({ maxContext: this.maxContext, maxBatchRows: this.maxBatchRows, logitsRows: this.logitsRows, batchContext: this.batchContext } = limits);
    this.adapters = new AdapterSet(ctx, config);
    this.res = new RuntimeResources(ctx, config, weights, this.adapters, limits);
    this.adapters.onRankGrow = () => this.res.dropPlans();
    this.decoder = new BatchDecoder(this.res);
  }

  static async create(ctx: GpuContext, config: Qwen2Config, tensors: WeightSource | Q4WeightSource, o: RuntimeOptions = {}): Promise<Qwen2Runtime> {
    const weights = await Qwen2Weights.upload(ctx, config, tensors, { onProgress: o.onProgress, maxChunkBytes: o.maxChunkBytes, dequantize: o.dequantize });
    return new Qwen2Runtime(ctx, config, weights, o);
  }

  /**
   * Sequences generateBatch decodes in one step: MAX_DECODE_ROWS on weights the fused decode runs (4-bit
   * web-llm builds), else GENERAL_DECODE_ROWS. Either way each sequence's tokens are what it gets alone.
   */
  get maxDecodeRows(): number {
    return this.res.maxDecodeRows;
  }

  /**
   * Decode forwards run since creation and the sequences' rows they computed (one per sequence in the step;
   * padding rows, see decodeRowBucket, are counted apart in padRows): rows / steps is how many sequences a
   * decode step served on average (benchmarks, tests).
   */
  get decodeCounters(): { steps: number; rows: number; padRows: number } {
    return this.res.decodeCounters;
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
    return this.res.batchRows;
  }

  memory(): GpuMemoryReport {
    return {
      // With the fused decode's packed per-layer norm + bias copies (a few KiB a layer).
      weights: this.weights.bytes + decodeParamsBytes(this.weights),
      adapters: this.adapters.bytes(),
      activations: this.res.activationBytes + this.decoder.bytes,
      kvCache: this.res.kvBytes,
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
      const kv = await this.res.kvCache();
      let rows = 0;
      for (let c0 = 0; c0 < P; c0 += this.maxBatchRows) rows = Math.max(rows, prefillRows(this.res, Math.min(this.maxBatchRows, P - c0), c0, kv));
      await this.res.sampler(await this.res.plan('batch', rows));
      await this.res.sampler(await this.res.plan('decode', 1));
      this.res.drawLogBuffer(1);
      if (this.res.fusedDecode) await prepareDecodeParams(this.ctx, this.weights);
      return this.memory();
    });
  }

  /**
   * Entry t of row i is log p(seq[i][t+1] | seq[i][0..t]) under the active adapter (length len-1).
   * Sequences are packed into batches of whole sequences. `o.from[i]`: compute only entries t >= from[i]
   * (the earlier ones are NaN), e.g. a turn's response tokens.
   */
  score(sequences: number[][], o: { from?: readonly number[] } = {}): Promise<number[][]> {
    return this.serial(() => scoreSequences(this.res, sequences, o.from));
  }

  /** Logits at the last position of `tokens` under the active adapter, length V. */
  logitsLast(tokens: number[]): Promise<Float32Array> {
    return this.serial(async () => {
      validateTokenIds(tokens, this.config.vocabSize, 'logitsLast: tokens');
      if (tokens.length === 0) throw new Error('logitsLast: tokens is empty');
      const plan = await prefill(this.res, tokens, false);
      const logits = await readF32(this.ctx, plan.logits, this.config.vocabSize, 0, 'reading logits');
      if (firstNonFinite(logits) >= 0) throw await nonFiniteError(this.res, 'logitsLast', tokens);
      return logits;
    });
  }

  /** Samples up to maxNewTokens after `prompt`, streaming each token; EOS, abort or onToken stop it. */
  generate(prompt: number[], o: GenerateTokensOptions = {}): Promise<TokenGeneration> {
    return this.serial(async () => {
      const c = checkGenerate(this.config, this.maxContext, prompt, o, 'generate');
      return nothingToGenerate(c) ?? (await this.decodeLocated([c], 'generate'))[0];
    });
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
   * generate() does (batch-decoder.ts). A request that fails validation rejects the call, naming its index.
   */
  generateBatch(requests: GenerateRequest[]): Promise<TokenGeneration[]> {
    if (!Array.isArray(requests)) return Promise.reject(new Error('generateBatch: requests must be an array of { prompt, options }'));
    if (requests.length === 1) return this.generate(requests[0]?.prompt, requests[0]?.options).then((g) => [g]);
    return this.serial(async () => {
      const checked = requests.map((r, i) => {
        if (!r || !Array.isArray(r.prompt)) throw new Error(`generateBatch: request ${i} has no prompt array`);
        return checkGenerate(this.config, this.maxContext, r.prompt, r.options ?? {}, `generateBatch: request ${i}`);
      });
      const out: TokenGeneration[] = [];
      const live: number[] = [];
      checked.forEach((c, i) => {
        const empty = nothingToGenerate(c);
        if (empty) out[i] = empty;
        else live.push(i);
      });
      // Requests in order, as many at a time as fit the decode rows and the cache (batch-layout.ts).
      const fits = (g: number[]) => layoutOf(g.map((i) => checked[i]), this.res.fusedDecode).rows <= this.batchContext;
      for (let k = 0; k < live.length; ) {
        const group = [live[k++]];
        while (k < live.length && group.length < this.maxDecodeRows && fits([...group, live[k]])) group.push(live[k++]);
        const results = await this.decodeLocated(group.map((i) => checked[i]), 'generateBatch', group);
        group.forEach((i, j) => (out[i] = results[j]));
      }
      return out;
    });
  }

  destroy(): void {
    this.decoder.destroy();
    this.res.destroy();
    this.adapters.destroy();
    // The fused decode's packed per-layer norms and biases go with the weights they were made from.
    releaseDecodeParams(this.weights);
    this.weights.destroy();
  }

  /**
   * The decoder's decode of `reqs`; a token drawn from non-finite logits fails it with a
   * NonFiniteActivationError naming the request (its index in `ids`, when given), position and layer.
   */
  private async decodeLocated(reqs: CheckedRequest[], what: string, ids?: number[]): Promise<TokenGeneration[]> {
    try {
      return await this.decoder.decode(reqs);
    } catch (e) {
      if (!(e instanceof NonFiniteLogprob)) throw e;
      throw await nonFiniteError(this.res, what, e.tokens, ids?.[e.request]);
    }
  }

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
}

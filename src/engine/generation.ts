// What a generate call takes and gives back: the contract between the runtime's decoder, the batcher, the
// planner worker and its clients; and the check a request passes before anything runs (bad settings fail
// naming the request).
import { validateTokenIds } from '../kernels/embedding/embedding';
import { checkSamplingOptions, type SamplingOptions } from '../kernels/sampling/draw';
import type { Qwen2Config } from '../io/qwen2-config';

export interface GenerateTokensOptions extends SamplingOptions {
  maxNewTokens?: number;
  seed?: number;
  signal?: AbortSignal;
  /** Extra ids that end generation (the config's eos ids always do). */
  stopIds?: number[];
  /** Called after each sampled token; return true to stop after it (e.g. a stop string was seen). */
  onToken?: (id: number, logprob: number) => boolean | void;
  /**
   * Reuse the KV cache for the prompt's longest common prefix with the previous generate's tokens (same
   * adapter, same weights). Default true. The reused rows were computed in other batches, so logits may
   * differ from a full prefill in the last bits of f32 (different kernels' summation order), no more.
   */
  reusePrefix?: boolean;
  /** Sees the logits each token is sampled from (tests, diagnostics); do not keep the array. */
  onLogits?: (logits: Float32Array) => void;
  /**
   * A grammar every token must follow (grammar/json-schema-constraint.ts's SchemaMatcher for a JSON
   * Schema): draws are masked to the tokens it allows, tokens it forces are appended without a draw, and the
   * sequence stops once it terminates. Its rows decode in step (their draws need the mask on the CPU).
   */
  constraint?: TokenConstraint;
}

/** One sequence's grammar state, as the decode loop uses it (json-schema-constraint.ts implements it). */
export interface TokenConstraint {
  /** Bitmask of the tokens allowed next: bit (id & 31) of word (id >> 5) set means allowed. */
  allowedMask(): Promise<Int32Array>;
  /** Takes a drawn token; false when the grammar does not allow it. */
  accept(id: number): boolean;
  /** Up to `limit` tokens the grammar forces next, already accepted (jump-forward); empty on a choice. */
  forced(limit: number): number[];
  /** True once a stop token ended a complete value. */
  readonly terminated: boolean;
  /** Back to the grammar's start (a call run again alone after its batch failed). */
  reset(): void;
}

export interface TokenGeneration {
  tokens: number[];
  /**
   * log p(token) under the model itself (full softmax at temperature 1), whatever temperature / top-k /
   * top-p chose it: the number the trainer gets back when it scores the same sequence.
   */
  logprobs: number[];
  finishReason: 'stop' | 'length' | 'abort';
  prefillMs: number;
  decodeMs: number;
  /** Prompt tokens whose K/V came from the previous generate (not prefilled again). */
  reusedPrefixTokens: number;
  /**
   * Tokens drawn on the GPU that had to be drawn again on the CPU (the candidates could not decide, or u
   * lay within rounding of a boundary): each costs a round trip. 0 when the CPU drew every token.
   */
  redrawnTokens: number;
  /**
   * Under a constraint: forced[t] is true where token t was appended by jump-forward (the grammar allowed
   * nothing else; no draw). Its logprob is still the model's own, from the forward that appended it.
   */
  forced?: boolean[];
}

/** One sequence of a generateBatch call. */
export interface GenerateRequest {
  prompt: number[];
  options?: GenerateTokensOptions;
}

/** A generate request after checkGenerate: its options, token budget, stop ids and cache rows needed. */
export interface CheckedRequest {
  prompt: number[];
  o: GenerateTokensOptions;
  maxNew: number;
  /** prompt + maxNew: the cache rows it may fill. */
  rows: number;
  stop: Set<number>;
}

/** A request's settings, checked (errors start with `what`), and the cache rows it needs at most. */
export function checkGenerate(config: Qwen2Config, maxContext: number, prompt: number[], o: GenerateTokensOptions, what: string): CheckedRequest {
  validateTokenIds(prompt, config.vocabSize, `${what}: prompt`);
  if (prompt.length === 0) throw new Error(`${what}: the prompt is empty`);
  try {
    checkSamplingOptions(o);
  } catch (e) {
    throw what === 'generate' ? e : new Error(`${what}: ${e instanceof Error ? e.message : String(e)}`);
  }
  const maxNew = o.maxNewTokens ?? 256;
  if (!Number.isInteger(maxNew) || maxNew < 0) throw new Error(`${what}: maxNewTokens must be an integer >= 0, got ${o.maxNewTokens}`);
  if (prompt.length + maxNew > maxContext) {
    throw new Error(`${what}: prompt (${prompt.length}) + maxNewTokens (${maxNew}) exceeds the context limit ${maxContext}`);
  }
  return { prompt, o, maxNew, rows: prompt.length + maxNew, stop: new Set([...config.eosTokenIds, ...(o.stopIds ?? [])]) };
}

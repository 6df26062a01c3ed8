// A generate request checked before anything runs (bad settings fail naming the request), and the decode
// loop state it starts.
import { validateTokenIds } from '../kernels/embedding/embedding';
import { checkSamplingOptions } from '../kernels/sampling/draw';
import { Rng } from '../util/rng';
import { now, type DecodeLoop } from './decode-loop';
import type { GenerateTokensOptions } from './generation';
import type { Qwen2Config } from '../io/qwen2-config';

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

/** A new decode loop's state for a checked request (a fresh Rng from its seed). */
export function loopFor(c: CheckedRequest): DecodeLoop {
  return { prompt: c.prompt, o: c.o, maxNew: c.maxNew, stop: c.stop, rng: new Rng(c.o.seed ?? 0), tokens: [], logprobs: [], t0: now(), prefillMs: 0, t1: 0, finishReason: 'length', redrawn: 0, forced: [] };
}

/** Whether a batch of these requests may store a common prompt head once (fused decode, no constraint: a
 * constrained row appends forced tokens with a prefill, whose attention reads one contiguous key range). */
export function canShareHead(reqs: CheckedRequest[], fusedDecode: boolean): boolean {
  return fusedDecode && !reqs.some((r) => r.o.constraint);
}

/** What batchLayout needs of a request. */
export function layoutRequest(r: CheckedRequest) {
  return { prompt: r.prompt, rows: r.rows, reusePrefix: r.o.reusePrefix };
}

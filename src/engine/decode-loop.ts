// What a decode loop keeps per sequence (generate(), and each row of generateBatch), and the rules both
// apply to each token: how it is taken and when the sequence ends.
import type { Rng } from '../util/rng';
import type { GenerateTokensOptions, TokenGeneration } from './generation';
import { NonFiniteLogprob } from './non-finite';

/** Decode steps submitted ahead of the last token read back (GPU-drawn tokens only). */
export const DECODE_AHEAD = 3;
/** Decoding goes in-step once half of this many latest tokens had to be redrawn on the CPU. */
export const REDRAW_WINDOW = 8;

/** The state of one sequence's decode loop, shared between the runtime's helpers. */
export interface DecodeLoop {
  prompt: number[];
  o: GenerateTokensOptions;
  maxNew: number;
  stop: Set<number>;
  rng: Rng;
  tokens: number[];
  logprobs: number[];
  t0: number;
  prefillMs: number;
  t1: number;
  finishReason: TokenGeneration['finishReason'];
  redrawn: number;
  /** forced[t]: token t was appended by the constraint's jump-forward, not drawn. */
  forced: boolean[];
}

export const now = () => (typeof performance !== 'undefined' ? performance.now() : Date.now());

/**
 * Takes token i, returns whether generation goes on: streams it, then applies EOS, the caller's stop and
 * the abort signal (the same checks, in the same order, on both decode paths).
 */
export function acceptToken(l: DecodeLoop, id: number, logprob: number, forced = false): boolean {
  // Finite logits always give a finite log-prob: this token was drawn from activations that overflowed f32.
  if (!Number.isFinite(logprob)) throw new NonFiniteLogprob(l.prompt.concat(l.tokens), l);
  if (l.tokens.length === 0) {
    l.prefillMs = now() - l.t0;
    l.t1 = now();
  }
  l.tokens.push(id);
  l.logprobs.push(logprob);
  l.forced.push(forced);
  const userStop = l.o.onToken?.(id, logprob) === true;
  // A grammar that terminated allows nothing more (it ends on one of the stop ids, so this is a safeguard).
  if (l.stop.has(id) || userStop || l.o.constraint?.terminated) {
    l.finishReason = 'stop';
    return false;
  }
  if (l.o.signal?.aborted) {
    l.finishReason = 'abort';
    return false;
  }
  return l.tokens.length < l.maxNew;
}

/** The result of a request that generates nothing (aborted before it began, or maxNewTokens 0). */
export function emptyGeneration(finishReason: 'abort' | 'length'): TokenGeneration {
  return { tokens: [], logprobs: [], finishReason, prefillMs: 0, decodeMs: 0, reusedPrefixTokens: 0, redrawnTokens: 0 };
}

/** A finished loop's result; `reused` prompt tokens came from the KV cache. */
export function generationOf(l: DecodeLoop, reused: number): TokenGeneration {
  const { tokens, logprobs, prefillMs, t1, finishReason, redrawn } = l;
  const g: TokenGeneration = { tokens, logprobs, finishReason, prefillMs, decodeMs: tokens.length > 1 ? now() - t1 : 0, reusedPrefixTokens: reused, redrawnTokens: redrawn };
  if (l.o.constraint) g.forced = l.forced;
  return g;
}

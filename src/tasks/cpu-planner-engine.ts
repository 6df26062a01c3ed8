// A ChatEngine over a tiny Qwen2 in float64 on the CPU (src/trainer/cpu-decode.ts): the planner of the
// tool-choice task, trained by the float64 CPU backend, in any browser or in Node with no GPU. Prompts go through
// the model's real tokenizer and chat template; a reply under `jsonSchema` is drawn from the tokens the schema's
// grammar allows (the constraint comes from the caller: src/engine/grammar's matcher), tokens the grammar forces
// are appended without a draw, and every token's logprob is the model's own (full softmax at temperature 1, no
// mask), the number the trainer computes when it scores the sequence.
import type { ChatEngine, ChatMessage, GenerateOptions, GenerationResult } from '../engine/chat-engine';
import { chatStream, type ChatStream } from '../engine/chat-stream';
import { isAllowed } from '../engine/grammar/json-schema-constraint';
import type { Qwen2Config } from '../io/qwen2-config';
import type { LoraAdapter } from '../io/peft';
import type { Tokenizer } from '../engine/tokenizer/tokenizer';
import { logSumExp } from '../kernels/sampling/draw';
import { CpuDecoder } from '../trainer/cpu-decode';
import type { HostQwen2Weights } from '../trainer/cpu-model';
import { adapterTensors } from '../trainer/lora-init';
import { Rng } from '../util/rng';

/** One reply's grammar state, as src/engine/grammar/json-schema-constraint.ts's SchemaMatcher has it. */
export interface ReplyConstraint {
  /** Bit (id & 31) of word (id >> 5) set: id may come next. */
  allowedMask(): Promise<Int32Array>;
  accept(id: number): boolean;
  /** A stop token was accepted after a complete value. */
  readonly terminated: boolean;
  /** Tokens the grammar leaves no choice on from here, already accepted. */
  forced(limit?: number): number[];
  /** The text the grammar forces right after `id`, state unchanged (SchemaMatcher.continuation); absent: every id its own outcome. */
  continuation?(id: number): string | null;
  dispose(): void;
}

export interface CpuPlannerOptions {
  id: string;
  config: Qwen2Config;
  weights: HostQwen2Weights;
  tokenizer: Tokenizer;
  /** The adapter to sample with for a call's `adapter` option (undefined: the active one), and its id. */
  adapter: (requested: string | null | undefined) => { adapter: LoraAdapter | null; id: string | null };
  /** A fresh grammar state for a reply that must follow `schema` (absent: schemas are refused). */
  constraint?: (schema: string) => Promise<ReplyConstraint>;
  /** The most tokens a prompt and its reply may take together. */
  contextTokens?: number;
}

/** Prompts whose keys and values are kept: a group's turns share their prompt, every prompt the system message. */
const PREFIX_CACHE = 8;

interface CachedPrompt {
  adapter: LoraAdapter | null;
  /** The adapter's weights when cached: training updates them in place, which makes the entry stale. */
  snapshot: Float32Array | null;
  tokens: number[];
  decoder: CpuDecoder;
}

function snapshotOf(adapter: LoraAdapter | null): Float32Array | null {
  if (!adapter) return null;
  const parts = adapterTensors(adapter).map((t) => t.data);
  const out = new Float32Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

function sameWeights(a: Float32Array | null, b: Float32Array | null): boolean {
  if (a === null || b === null) return a === b;
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

/**
 * The most ids a draw's allowed set may hold to be recorded as a choice (GenerationResult.choices): a tool enum's
 * first tokens are a handful; free text (a sub-goal) allows hundreds and is no choice the bonus should spread.
 */
export const CHOICE_SET_MAX = 64;

/**
 * The ids `mask` allows, grouped by the reply they lead to up to the next choice (a token's text and what the
 * grammar forces after it), when there are 2..CHOICE_SET_MAX ids in at least two groups; else null.
 */
function choiceGroups(mask: Int32Array, vocabSize: number, constraint: ReplyConstraint, tok: Tokenizer): number[][] | null {
  const ids: number[] = [];
  for (let id = 0; id < vocabSize; id++) {
    if (isAllowed(mask, id) && ids.push(id) > CHOICE_SET_MAX) return null;
  }
  const groups = new Map<string, number[]>();
  for (const id of ids) {
    const after = constraint.continuation?.(id);
    const key = after === undefined || after === null ? `#${id}` : tok.decode([id]) + after;
    (groups.get(key) ?? groups.set(key, []).get(key)!).push(id);
  }
  return groups.size >= 2 ? [...groups.values()] : null;
}

export class CpuPlannerEngine implements ChatEngine {
  readonly id: string;
  readonly contextTokens: number | undefined;
  /** Calls made and tokens the grammar forced, for reports. */
  readonly counters = { calls: 0, tokens: 0, forcedTokens: 0, promptTokens: 0, cachedPromptTokens: 0 };
  private cache: CachedPrompt[] = [];

  constructor(private readonly o: CpuPlannerOptions) {
    this.id = o.id;
    this.contextTokens = o.contextTokens;
  }

  get tokenizer(): Tokenizer {
    return this.o.tokenizer;
  }

  async countPromptTokens(messages: ChatMessage[]): Promise<number> {
    return this.o.tokenizer.encodeChat(messages, { addGenerationPrompt: true }).length;
  }

  stream(messages: ChatMessage[], options: GenerateOptions = {}): ChatStream {
    return chatStream((emit) => this.generate(messages, options, emit));
  }

  private async generate(messages: ChatMessage[], options: GenerateOptions, emit: (piece: string) => void): Promise<GenerationResult> {
    options.signal?.throwIfAborted();
    const tok = this.o.tokenizer;
    const promptTokens = tok.encodeChat(messages, { addGenerationPrompt: true });
    const maxNew = options.maxNewTokens ?? 256;
    if (this.contextTokens !== undefined && promptTokens.length + maxNew > this.contextTokens) {
      throw new Error(`${this.id}: the prompt (${promptTokens.length} tokens) and its reply (${maxNew}) exceed the model's ${this.contextTokens}-token context`);
    }
    const { adapter, id: adapterId } = this.o.adapter(options.adapter);
    const stops = new Set(tok.stopTokenIds);
    const temperature = options.temperature ?? 0;
    const rng = new Rng(options.seed ?? 0);
    let constraint: ReplyConstraint | null = null;
    if (options.jsonSchema !== undefined) {
      if (!this.o.constraint) throw new Error(`${this.id}: this engine was made without a grammar, so it cannot follow a jsonSchema`);
      constraint = await this.o.constraint(options.jsonSchema);
    }
    const t0 = performance.now();
    const { decoder: dec, cached } = this.prefilled(adapter, promptTokens);
    let logits = dec.feed(promptTokens.slice(cached));
    this.remember(adapter, promptTokens, dec);
    const t1 = performance.now();
    const tokens: number[] = [];
    const logprobs: number[] = [];
    const forced: boolean[] = [];
    const choices: Array<number[][] | null> = [];
    let finishReason: GenerationResult['finishReason'] = 'length';
    const take = (t: number, wasForced: boolean, choice: number[][] | null = null) => {
      logprobs.push(logits[t] - logSumExp(logits));
      tokens.push(t);
      forced.push(wasForced);
      choices.push(choice);
      if (!stops.has(t)) logits = dec.step(t);
    };
    try {
      while (tokens.length < maxNew) {
        options.signal?.throwIfAborted();
        if (constraint) {
          for (const f of constraint.forced(maxNew - tokens.length)) take(f, true);
          if (constraint.terminated) {
            finishReason = 'stop';
            break;
          }
          if (tokens.length >= maxNew) break;
        }
        const mask = constraint ? await constraint.allowedMask() : null;
        // Before the draw's token is accepted: the groups are of this state's continuations.
        const groups = mask && constraint ? choiceGroups(mask, logits.length, constraint, tok) : null;
        const t = draw(logits, mask, temperature, rng);
        if (constraint && !constraint.accept(t)) throw new Error(`${this.id}: the grammar refused token ${t}, which its own mask allowed`);
        take(t, false, groups);
        if (stops.has(t) || constraint?.terminated) {
          finishReason = 'stop';
          break;
        }
        // Let a page's other work (and Stop) run between tokens.
        if (tokens.length % 16 === 0) await new Promise((r) => setTimeout(r, 0));
      }
    } finally {
      constraint?.dispose();
    }
    const forcedTokens = forced.filter(Boolean).length;
    const body = tokens.filter((t) => !stops.has(t));
    const text = tok.decode(body, { skipSpecialTokens: true });
    emit(text);
    this.counters.calls++;
    this.counters.tokens += tokens.length;
    this.counters.forcedTokens += forcedTokens;
    return {
      text,
      promptTokens,
      tokens,
      logprobs,
      adapterId,
      finishReason,
      ...(constraint ? { forcedTokens, forced, choices } : {}),
      timings: { prefillMs: t1 - t0, decodeMs: performance.now() - t1, cachedPromptTokens: cached },
    };
  }

  /** A decoder holding the longest prefix of `prompt` a kept prompt shares (never all of it: its last token gives the logits). */
  private prefilled(adapter: LoraAdapter | null, prompt: number[]): { decoder: CpuDecoder; cached: number } {
    const snapshot = snapshotOf(adapter);
    this.cache = this.cache.filter((c) => c.adapter === adapter && sameWeights(c.snapshot, snapshot));
    let best: CachedPrompt | null = null;
    let bestLen = 0;
    for (const c of this.cache) {
      let n = 0;
      const max = Math.min(c.tokens.length, prompt.length - 1);
      while (n < max && c.tokens[n] === prompt[n]) n++;
      if (n > bestLen) [best, bestLen] = [c, n];
    }
    this.counters.promptTokens += prompt.length;
    this.counters.cachedPromptTokens += bestLen;
    return best ? { decoder: best.decoder.fork(bestLen), cached: bestLen } : { decoder: new CpuDecoder(this.o.config, this.o.weights, adapter), cached: 0 };
  }

  private remember(adapter: LoraAdapter | null, prompt: number[], decoder: CpuDecoder): void {
    this.cache.push({ adapter, snapshot: snapshotOf(adapter), tokens: prompt, decoder: decoder.fork() });
    if (this.cache.length > PREFIX_CACHE) this.cache.shift();
  }
}

/** Greedy (temperature 0) or a draw from softmax(logits / T), over the allowed tokens only. */
function draw(logits: Float64Array, mask: Int32Array | null, temperature: number, rng: Rng): number {
  const allowed: number[] = [];
  for (let i = 0; i < logits.length; i++) if (!mask || isAllowed(mask, i)) allowed.push(i);
  if (!allowed.length) throw new Error('the grammar allows no token of the vocabulary here');
  if (temperature === 0) {
    let best = allowed[0];
    for (const i of allowed) if (logits[i] > logits[best]) best = i;
    return best;
  }
  let m = -Infinity;
  for (const i of allowed) if (logits[i] > m) m = logits[i];
  const p = allowed.map((i) => Math.exp((logits[i] - m) / temperature));
  let u = rng.next() * p.reduce((a, b) => a + b, 0);
  for (let k = 0; k < allowed.length; k++) {
    u -= p[k];
    if (u < 0) return allowed[k];
  }
  return allowed[allowed.length - 1];
}

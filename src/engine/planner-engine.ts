// The planner's ChatEngine: our Qwen2 runtime plus the checkpoint's tokenizer and chat template. Unlike
// web-llm it reports the exact prompt ids, the sampled ids and their logprobs, and which LoRA adapter
// produced them: everything Flow-GRPO needs to score the same tokens again.
import type { GpuContext } from '../gpu/device';
import { GenerateBatcher } from './generate-batcher';
import { loadAdapter, loadCheckpoint, type ChatTemplateSource, type Checkpoint } from './load-checkpoint';
import type { LoraAdapter } from '../io/peft';
import type { FileSource, ProgressCallback } from '../io/sources';
import { defaultMaxContext, Qwen2Runtime, type GenerateTokensOptions, type RuntimeOptions } from './runtime';
import { convTemplateProblem, MLC_CHAT_CONFIG } from './tokenizer/conv-template';
import { StreamingDecoder, Tokenizer } from './tokenizer/tokenizer';
import type { ChatEngine, ChatMessage, GenerateOptions, GenerationResult } from './chat-engine';
import { chatStream, type ChatStream } from './chat-stream';
import { SchemaGrammar, type GrammarTokenizer, type SchemaMatcher } from './grammar/json-schema-constraint';

/** What the engine needs of a tokenizer (tokenizer/tokenizer.ts's Tokenizer); a jsonSchema needs vocabulary and encode too. */
export type ChatTokenizer = Pick<Tokenizer, 'encodeChat' | 'decode' | 'tokenId'> & Partial<Pick<Tokenizer, 'vocabulary' | 'encode'>>;

export interface PlannerLoadOptions extends Omit<RuntimeOptions, 'onProgress'> {
  /** Shown in `id` ('planner:<name>'); default: the source's label. */
  name?: string;
  onProgress?: ProgressCallback;
  /**
   * Called once the checkpoint is read, before the runtime takes its GPU memory: a caller replacing a model
   * frees the old one here, so the two never sit on the GPU together and a checkpoint that fails to read
   * leaves the old one loaded.
   */
  beforeRuntime?: () => void;
}

/** A loaded planner model: its runtime, and its chat engine unless the checkpoint cannot chat. */
export interface LoadedPlanner {
  runtime: Qwen2Runtime;
  /** The model's name (PlannerLoadOptions.name, else the source's folder). */
  name: string;
  /** Null without a tokenizer or chat template (`noChat` says why): the runtime still scores and generates ids. */
  engine: PlannerEngine | null;
  noChat: string | null;
  /** What loaded but deserves a word to the user (loadCheckpoint's onNote: shards without md5sum). */
  notes: string[];
}

// Qwen chat models end a turn with <|im_end|>; base models with <|endoftext|>. Either stops generation.
const END_TOKENS = ['<|im_end|>', '<|endoftext|>'];

export interface PlannerTokenizer {
  tokenizer: Tokenizer;
  /** generation_config.json's eos ids: they end a generation too. */
  extraEos: number[];
  chatTemplateSource: ChatTemplateSource;
}

/**
 * The planner's tokenizer and chat template from a loaded checkpoint (its tokenizer files, the chat template
 * tokenizer_config.json, chat_template.jinja or, in an MLC folder, mlc-chat-config.json's conv_template
 * gives); throws, naming every place it looked, when there is no tokenizer.json or no chat template.
 */
export function plannerTokenizer(ckpt: Pick<Checkpoint, 'tokenizer' | 'tensors'>, label: string): PlannerTokenizer {
  const files = ckpt.tokenizer;
  if (!files.tokenizerJson) throw new Error(`${label} has no tokenizer.json; the planner needs the model's tokenizer`);
  const tokenizer = new Tokenizer({ tokenizerJson: files.tokenizerJson, tokenizerConfig: files.tokenizerConfig, chatTemplate: files.chatTemplate });
  if (!tokenizer.chatTemplate || !files.chatTemplateSource) throw new Error(`${label} has no chat template: ${whereTemplatesWereSought(ckpt)}; pick an -Instruct checkpoint`);
  const eos = (files.generationConfig as { eos_token_id?: unknown } | null)?.eos_token_id;
  const extraEos = (Array.isArray(eos) ? eos : [eos]).filter((x): x is number => Number.isInteger(x));
  return { tokenizer, extraEos, chatTemplateSource: files.chatTemplateSource };
}

function whereTemplatesWereSought(ckpt: Pick<Checkpoint, 'tensors'>): string {
  const hf = 'tokenizer_config.json has no chat_template (or is not there) and there is no chat_template.jinja';
  const chat = ckpt.tensors.q4?.chat.raw;
  const why = chat ? convTemplateProblem(chat) : null;
  return why ? `${hf}, and ${MLC_CHAT_CONFIG}'s conv_template cannot stand in (${why})` : hf;
}

export class PlannerEngine implements ChatEngine {
  readonly id: string;
  /** Ids that end a generation: the config's and generation_config's eos ids and the chat end tokens. */
  readonly stopIds: number[];

  /**
   * @param batcher Where generations go: overlapping calls are decoded together. Pass the one other callers
   *   of the same runtime use (PlannerHost's generateIds), so their calls merge with these.
   * @param chatTemplateSource Which file the tokenizer's chat template came from (see plannerTokenizer), for
   *   the UI; null when the caller did not say.
   */
  constructor(
    readonly runtime: Qwen2Runtime,
    readonly tokenizer: ChatTokenizer,
    name: string,
    extraEos: number[] = [],
    readonly batcher: GenerateBatcher = new GenerateBatcher(runtime),
    readonly chatTemplateSource: ChatTemplateSource | null = null,
  ) {
    if (batcher.runtime !== runtime) throw new Error('PlannerEngine: the batcher given runs another runtime than the engine');
    this.id = `planner:${name}`;
    const ids = new Set([...runtime.config.eosTokenIds, ...extraEos]);
    for (const t of END_TOKENS) {
      const id = tokenizer.tokenId(t);
      if (id !== undefined && id < runtime.config.vocabSize) ids.add(id);
    }
    this.stopIds = [...ids];
  }

  /**
   * Loads config, weights and tokenizer from a Hugging Face folder or a web-llm (MLC q4f16_1 / q4f32_1)
   * folder (directory, picked files or URL; io/webllm-cache's sharedUrlSource shares web-llm's download).
   * An MLC build stays 4-bit on the GPU. Throws, before the runtime is built, when the checkpoint cannot chat.
   */
  static async load(ctx: GpuContext, source: FileSource, o: PlannerLoadOptions = {}): Promise<PlannerEngine> {
    return (await PlannerEngine.loadModel(ctx, source, o, { requireChat: true })).engine!;
  }

  /**
   * As load(), but a checkpoint without a tokenizer or chat template still loads (LoadedPlanner.engine is
   * null then). `ctx` may be a getter, asked once the checkpoint is read.
   */
  static async loadModel(ctx: GpuContext | (() => Promise<GpuContext>), source: FileSource, o: PlannerLoadOptions = {}, { requireChat = false } = {}): Promise<LoadedPlanner> {
    const notes: string[] = [];
    const ckpt = await loadCheckpoint(source, { onProgress: o.onProgress, onNote: (n) => notes.push(n) });
    let chat: PlannerTokenizer | null = null;
    let noChat: string | null = null;
    try {
      chat = plannerTokenizer(ckpt, source.label);
    } catch (e) {
      if (requireChat) throw e;
      noChat = e instanceof Error ? e.message : String(e);
    }
    const gpu = typeof ctx === 'function' ? await ctx() : ctx;
    o.beforeRuntime?.();
    // A batch of a group's long turns may grow the KV cache to twice the context.
    const maxContext = o.maxContext ?? defaultMaxContext(ckpt.config);
    const runtime = await Qwen2Runtime.create(gpu, ckpt.config, ckpt.tensors, { maxContext, maxBatchRows: o.maxBatchRows, logitsRows: o.logitsRows, dequantize: o.dequantize, batchContext: o.batchContext ?? 2 * maxContext });
    ckpt.release();
    const name = o.name ?? source.label.replace(/\/+$/, '').split('/').pop() ?? 'qwen2';
    const engine = chat ? new PlannerEngine(runtime, chat.tokenizer, name, chat.extraEos, undefined, chat.chatTemplateSource) : null;
    return { runtime, name, engine, noChat, notes };
  }

  async loadAdapter(id: string, source: FileSource, onProgress?: ProgressCallback): Promise<void> {
    await this.runtime.addAdapter(id, await loadAdapter(source, this.runtime.config, { onProgress }));
  }

  addAdapter(id: string, adapter: LoraAdapter): Promise<unknown> {
    return this.runtime.addAdapter(id, adapter);
  }

  setActiveAdapter(id: string | null): void {
    this.runtime.setActiveAdapter(id);
  }

  /** The adapter chosen for calls that name none (not the one a base-model call running now switched to). */
  get activeAdapterId(): string | null {
    return this.batcher.activeAdapterId;
  }

  /** The exact prompt ids `stream` feeds the model for these messages. */
  promptIds(messages: ChatMessage[]): number[] {
    return this.tokenizer.encodeChat(messages, { addGenerationPrompt: true });
  }

  expectConcurrentCalls(n: number): void {
    this.batcher.expect(n);
  }

  score(sequences: number[][]): Promise<number[][]> {
    return this.runtime.score(sequences);
  }

  stream(messages: ChatMessage[], options: GenerateOptions = {}): ChatStream {
    return chatStream((emit) => this.generate(this.promptIds(messages), options, emit));
  }

  /**
   * Generation from prompt ids, with stop strings and the ChatEngine result shape; `onPiece` takes each
   * piece of text as it is decoded (stream() reads them; the worker's host posts them to the page as they
   * come, with no queue of its own in between). Calls that overlap in time are decoded as one batch; each
   * samples from the adapter active when it was made.
   */
  async generate(promptTokens: number[], options: GenerateOptions = {}, onPiece?: (piece: string) => void): Promise<GenerationResult> {
    // The batcher runs this call under the adapter asked for, else the one active now (it switches back if
    // another was activated while the call waited), so this is the adapter the tokens come from.
    const adapterId = options.adapter === undefined ? this.batcher.activeAdapterId : options.adapter;
    const decoder = new StreamingDecoder(this.tokenizer, { skipSpecialTokens: true });
    const stops = (options.stop ?? []).filter((s) => s.length > 0);
    let stoppedBy: string | null = null;
    // Text is held back while it could still be the start of a stop string, so a stop string never
    // reaches onPiece.
    let shown = 0;
    const hold = Math.max(0, ...stops.map((s) => s.length - 1));
    const stopSet = new Set(this.stopIds);
    const g: GenerateTokensOptions = {
      maxNewTokens: options.maxNewTokens ?? 512,
      temperature: options.temperature ?? 0,
      topK: options.topK,
      topP: options.topP,
      seed: options.seed,
      signal: options.signal,
      stopIds: this.stopIds,
      onToken: (id) => {
        if (stopSet.has(id)) return false;
        decoder.push(id);
        const text = decoder.text;
        for (const s of stops) {
          const at = text.indexOf(s, Math.max(0, shown - s.length));
          if (at >= 0) {
            stoppedBy = s;
            if (at > shown) onPiece?.(text.slice(shown, at));
            shown = at;
            return true;
          }
        }
        let safe = text.length - hold;
        // The hold counts UTF-16 units: cutting between a surrogate pair's halves would show each half as
        // U+FFFD (an emoji as '��'), so the high half waits with the rest.
        if (safe > 0 && isHighSurrogate(text.charCodeAt(safe - 1))) safe--;
        if (safe > shown) {
          onPiece?.(text.slice(shown, safe));
          shown = safe;
        }
        return false;
      },
    };
    const matcher = options.jsonSchema !== undefined ? await this.schemaMatcher(options.jsonSchema) : null;
    if (matcher) g.constraint = matcher;
    let out: Awaited<ReturnType<GenerateBatcher['submit']>>;
    try {
      out = await this.batcher.submit(promptTokens, g, adapterId);
    } finally {
      if (matcher) {
        this.grammarMs += matcher.grammarMs;
        matcher.dispose();
      }
    }
    let text: string;
    if (stoppedBy !== null) {
      text = decoder.text.slice(0, shown);
    } else {
      decoder.flush();
      text = decoder.text;
      if (text.length > shown) onPiece?.(text.slice(shown));
    }
    const result: GenerationResult = {
      text,
      promptTokens: [...promptTokens],
      tokens: out.tokens,
      logprobs: out.logprobs,
      adapterId,
      finishReason: out.finishReason,
      timings: { prefillMs: out.prefillMs, decodeMs: out.decodeMs, cachedPromptTokens: out.reusedPrefixTokens },
    };
    if (matcher) {
      result.forced = out.forced ?? out.tokens.map(() => false);
      result.forcedTokens = result.forced.filter(Boolean).length;
    }
    return result;
  }

  /** Milliseconds spent in the grammar library (masks, accepts, jump-forward) over this engine's life. */
  grammarMs = 0;

  /** A fresh matcher for `schema` over this engine's tokenizer (the compiled grammar is cached). */
  private async schemaMatcher(schema: string): Promise<SchemaMatcher> {
    const t = this.tokenizer;
    if (typeof schema !== 'string' || schema.trim() === '') throw new Error('jsonSchema must be JSON Schema text');
    if (!t.vocabulary || !t.encode) throw new Error(`${this.id}: its tokenizer gives no vocabulary, so a jsonSchema cannot be compiled`);
    const grammar = await SchemaGrammar.for(t as GrammarTokenizer, { vocabSize: this.runtime.config.vocabSize, stopIds: this.stopIds });
    return grammar.matcher(schema);
  }

  destroy(): void {
    this.runtime.destroy();
  }
}

const isHighSurrogate = (c: number) => c >= 0xd800 && c <= 0xdbff;

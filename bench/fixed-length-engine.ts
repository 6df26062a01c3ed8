// The end-to-end benchmark's ChatEngine: every agent module's call runs on the real planner runtime, through
// the planner's GenerateBatcher (so a group's concurrent calls decode together, as in a training run), and
// generates exactly the number of new tokens set for its module, end-of-sequence ids ignored. The text it
// answers is scripted, one that the agent loop accepts, so a model with random weights plays whole
// trajectories (planner turns, tool calls, verdicts, an answer) and the time measured is the engine's, not
// that of a random model's babble. The token ids and logprobs are the ones the runtime really sampled: the
// planner's turns train like any others.
//
// It stands where PlannerEngine stands in `cli train` (one engine for every module; the frozen modules reach
// it through baseModelView, so they sample the base weights): it builds the same GenerateBatcher over the
// runtime, with a LoggedRuntime in between to split the runtime's time and decode steps by module.
import { detectModule, type ModuleName } from '../src/agent/prompts';
import { GenerateBatcher } from '../src/engine/generate-batcher';
import type { Qwen2Runtime } from '../src/engine/runtime';
import type { ChatEngine, ChatMessage, GenerateOptions, GenerationResult } from '../src/engine/chat-engine';
import { chatStream, type ChatStream } from '../src/engine/chat-stream';
import { ChunkTokenizer } from './chunk-tokenizer';
import { LoggedRuntime } from './runtime-log';

/** New tokens each module's call generates. */
export type ModuleLengths = Record<ModuleName, number>;

/** One chat() call as the engine served it. */
export interface ModuleCall {
  module: ModuleName;
  /** The adapter the tokens came from (null: base weights). */
  adapter: string | null;
  promptTokens: number;
  /** Characters of the messages' contents (promptChars / promptTokens: the chunk tokenizer's ratio). */
  promptChars: number;
  newTokens: number;
  /** Prompt tokens whose KV came from an earlier call or a batch-mate (not prefilled again). */
  reusedPromptTokens: number;
  /** Tokens the GPU draw left to the CPU (random weights' flat rows make these far more common than a real model's). */
  redrawnTokens: number;
  /** performance.now() at the call and at its answer (waiting in the batcher included). */
  start: number;
  end: number;
}

export interface FixedLengthOptions {
  lengths: ModuleLengths;
  /** The text of the module's `index`-th call (0-based, counted per module over the engine's life). */
  reply: (module: ModuleName, index: number) => string;
  /** Shown in `id` ('e2e:<name>'). */
  name: string;
}

const now = () => performance.now();

export class FixedLengthEngine implements ChatEngine {
  readonly id: string;
  readonly log: LoggedRuntime;
  readonly batcher: GenerateBatcher;
  readonly tokenizer: ChunkTokenizer;
  private calls: ModuleCall[] = [];
  private readonly made = new Map<ModuleName, number>();

  constructor(
    readonly runtime: Qwen2Runtime,
    readonly o: FixedLengthOptions,
  ) {
    for (const [m, n] of Object.entries(o.lengths)) {
      if (!Number.isInteger(n) || n < 1) throw new Error(`fixed-length engine: the ${m} length must be a positive integer, got ${n}`);
    }
    if (runtime.config.eosTokenIds.length) {
      // The runtime always stops at its config's eos ids (GenerateTokensOptions.stopIds only adds to them).
      throw new Error(`fixed-length engine: the runtime's config has eos ids (${runtime.config.eosTokenIds.join(', ')}); create it from a config with eosTokenIds: [] so no call ends early`);
    }
    this.id = `e2e:${o.name}`;
    this.log = new LoggedRuntime(runtime);
    this.batcher = new GenerateBatcher(this.log);
    this.tokenizer = new ChunkTokenizer(runtime.config.vocabSize);
  }

  expectConcurrentCalls(n: number): void {
    this.batcher.expect(n);
  }

  /**
   * Serves one module's call: its length is the engine's, not options.maxNewTokens, and stop strings do not
   * apply (the text is scripted). Temperature, top-k / top-p, seed, signal and adapter are the caller's.
   */
  stream(messages: ChatMessage[], options: GenerateOptions = {}): ChatStream {
    return chatStream((emit) => this.serve(messages, options, emit));
  }

  private async serve(messages: ChatMessage[], options: GenerateOptions, emit: (piece: string) => void): Promise<GenerationResult> {
    const module = detectModule(messages);
    if (!module) throw new Error(`fixed-length engine: a prompt no agent module wrote (its system message starts with no module's role line): ${JSON.stringify(messages[0]?.content.slice(0, 80))}`);
    const n = this.o.lengths[module];
    const index = this.made.get(module) ?? 0;
    this.made.set(module, index + 1);
    const prompt = this.tokenizer.encodeChat(messages);
    this.log.tag(prompt, module);
    const adapter = options.adapter === undefined ? this.batcher.activeAdapterId : options.adapter;
    const start = now();
    const out = await this.batcher.submit(
      prompt,
      { maxNewTokens: n, temperature: options.temperature ?? 0, topK: options.topK, topP: options.topP, seed: options.seed, signal: options.signal, stopIds: [] },
      adapter,
    );
    if (out.finishReason !== 'abort' && out.tokens.length !== n) {
      throw new Error(`fixed-length engine: the ${module} call generated ${out.tokens.length} of ${n} tokens (finish: ${out.finishReason})`);
    }
    this.calls.push({ module, adapter, promptTokens: prompt.length, promptChars: messages.reduce((a, m) => a + m.content.length, 0), newTokens: out.tokens.length, reusedPromptTokens: out.reusedPrefixTokens, redrawnTokens: out.redrawnTokens, start, end: now() });
    const text = this.o.reply(module, index);
    emit(text);
    return {
      text,
      promptTokens: prompt,
      tokens: out.tokens,
      logprobs: out.logprobs,
      adapterId: adapter,
      finishReason: out.finishReason,
      timings: { prefillMs: out.prefillMs, decodeMs: out.decodeMs, cachedPromptTokens: out.reusedPrefixTokens },
    };
  }

  /** Takes the calls served so far (the list starts empty again). */
  takeCalls(): ModuleCall[] {
    return this.calls.splice(0);
  }
}

// A real ChatEngine that replays scripted replies, one list per agent module, for tests and the UI demo.
// It reports deterministic token ids and log-probabilities (one token per UTF-16 unit) so that rollout
// recording can be checked end to end without a model.
import type { ChatEngine, ChatMessage, GenerateOptions, GenerationResult } from '../engine/chat-engine';
import { chatStream, type ChatStream } from '../engine/chat-stream';
import { detectModule, type ModuleName } from './prompts';

export interface ScriptedReplyObject {
  text?: string;
  /** Wait this long before replying (aborts with the signal); lets tests interrupt or time out a call. */
  delayMs?: number;
  /** Throw an Error with this message instead of replying. */
  throws?: string;
}

export type ScriptedReply = string | ScriptedReplyObject | ((messages: ChatMessage[]) => string | ScriptedReplyObject);

export type Script = Partial<Record<ModuleName | 'other', ScriptedReply[]>>;

export interface ScriptedCall {
  module: ModuleName | 'other';
  messages: ChatMessage[];
  options: GenerateOptions;
}

/** The id of a character as the scripted "tokenizer" sees it. */
export function scriptedTokenIds(text: string): number[] {
  const ids: number[] = [];
  for (let i = 0; i < text.length; i++) ids.push(text.charCodeAt(i));
  return ids;
}

/** Deterministic log p for a scripted token: depends on the token and its position only. */
export function scriptedLogprob(id: number, position: number): number {
  return -(((id * 31 + position * 17) % 97) + 1) / 100;
}

export class ScriptedEngine implements ChatEngine {
  readonly scripted = true;
  readonly calls: ScriptedCall[] = [];
  private readonly next = new Map<string, number>();

  constructor(
    private readonly script: Script,
    readonly id = 'scripted',
    private readonly adapterId: string | null = null,
  ) {}

  /** The prompt as the scripted tokenizer sees it: role headers and contents. */
  static renderPrompt(messages: ChatMessage[]): string {
    return messages.map((m) => `<|${m.role}|>\n${m.content}\n`).join('') + '<|assistant|>\n';
  }

  stream(messages: ChatMessage[], options: GenerateOptions = {}): ChatStream {
    return chatStream((emit) => this.reply(messages, options, emit));
  }

  private async reply(messages: ChatMessage[], options: GenerateOptions, emit: (piece: string) => void): Promise<GenerationResult> {
    const module = detectModule(messages) ?? 'other';
    this.calls.push({ module, messages, options });
    const list = this.script[module];
    if (!list || list.length === 0) throw new Error(`ScriptedEngine '${this.id}': no reply scripted for module '${module}'`);
    const i = this.next.get(module) ?? 0;
    this.next.set(module, i + 1);
    // Past the end of a list the last reply repeats, so a script need not count turns exactly.
    let reply = list[Math.min(i, list.length - 1)];
    if (typeof reply === 'function') reply = reply(messages);
    const r: ScriptedReplyObject = typeof reply === 'string' ? { text: reply } : reply;
    options.signal?.throwIfAborted();
    if (r.delayMs) await sleep(r.delayMs, options.signal);
    if (r.throws !== undefined) throw new Error(r.throws);
    let text = r.text ?? '';
    let finishReason: GenerationResult['finishReason'] = 'stop';
    for (const s of options.stop ?? []) {
      const at = s ? text.indexOf(s) : -1;
      if (at >= 0) text = text.slice(0, at);
    }
    if (options.maxNewTokens !== undefined && text.length > options.maxNewTokens) {
      text = text.slice(0, options.maxNewTokens);
      finishReason = 'length';
    }
    for (let k = 0; k < text.length; k += 8) emit(text.slice(k, k + 8));
    return scriptedResult(messages, text, this.adapterId, finishReason);
  }

  /** How many calls each module has made. */
  count(module: ModuleName | 'other'): number {
    return this.calls.filter((c) => c.module === module).length;
  }
}

/** The result a scripted engine reports for `text`: the scripted prompt and token ids and logprobs. */
export function scriptedResult(messages: ChatMessage[], text: string, adapterId: string | null, finishReason: GenerationResult['finishReason'] = 'stop'): GenerationResult {
  const tokens = scriptedTokenIds(text);
  return {
    text,
    promptTokens: scriptedTokenIds(ScriptedEngine.renderPrompt(messages)),
    tokens,
    logprobs: tokens.map((t, p) => scriptedLogprob(t, p)),
    adapterId,
    finishReason,
    timings: { prefillMs: 0, decodeMs: 0 },
  };
}

/** Waits `ms`, or rejects with the signal's reason once it aborts. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    const t = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(t);
      reject(signal?.reason ?? new DOMException('Aborted', 'AbortError'));
    };
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

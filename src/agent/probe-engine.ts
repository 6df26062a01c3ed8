// A ChatEngine for tests of concurrent rollouts. Its reply is a function of the call alone (module, messages,
// options such as the planner's seed), never of call order, so interleaved conversations get the same
// replies as sequential ones (ScriptedEngine answers lists in call order, which interleaving reshuffles).
// It counts the calls in flight, so a test can prove that calls overlapped, and can hold calls back.
import type { ChatEngine, ChatMessage, GenerateOptions, GenerationResult } from '../engine/chat-engine';
import { chatStream, type ChatStream } from '../engine/chat-stream';
import { detectModule, type ModuleName } from './prompts';
import { untilAborted } from '../util/abort';
import { scriptedResult, sleep } from './scripted-engine';

export interface ProbeReply {
  text: string;
  /** Wait this long before replying (aborts with the signal): lets later calls finish first. */
  delayMs?: number;
}

export type ProbeReplyFn = (module: ModuleName | 'other', messages: ChatMessage[], options: GenerateOptions) => string | ProbeReply;

export interface ProbeOptions {
  /**
   * Hold each call until this many calls are in flight (then all held ones go on), or until `overlapWaitMs`
   * has passed, which keeps a run that never overlaps (one rollout at a time) from waiting forever.
   */
  overlapCalls?: number;
  overlapWaitMs?: number;
}

export class ProbeEngine implements ChatEngine {
  inFlight = 0;
  maxInFlight = 0;
  readonly calls: Array<{ module: ModuleName | 'other'; options: GenerateOptions }> = [];
  private gate: { promise: Promise<void>; open: () => void } | null = null;
  private overlapWaiters: Array<() => void> = [];

  constructor(
    private readonly reply: ProbeReplyFn,
    readonly id = 'probe',
    private readonly o: ProbeOptions = {},
  ) {}

  /** Calls arriving from now on wait (abortably) until release(). */
  hold(): void {
    if (this.gate) return;
    let open!: () => void;
    const promise = new Promise<void>((r) => (open = r));
    this.gate = { promise, open };
  }

  release(): void {
    this.gate?.open();
    this.gate = null;
  }

  stream(messages: ChatMessage[], options: GenerateOptions = {}): ChatStream {
    return chatStream(() => this.answer(messages, options));
  }

  /** The call's whole reply (a probe streams no pieces). */
  protected async answer(messages: ChatMessage[], options: GenerateOptions): Promise<GenerationResult> {
    const module = detectModule(messages) ?? 'other';
    this.calls.push({ module, options });
    this.inFlight++;
    this.maxInFlight = Math.max(this.maxInFlight, this.inFlight);
    try {
      if (this.gate) await untilAborted(this.gate.promise, options.signal);
      if (this.o.overlapCalls) await this.awaitOverlap(this.o.overlapCalls, this.o.overlapWaitMs ?? 100, options.signal);
      const r = this.reply(module, messages, options);
      const { text, delayMs } = typeof r === 'string' ? { text: r, delayMs: 0 } : r;
      if (delayMs) await sleep(delayMs, options.signal);
      options.signal?.throwIfAborted();
      return scriptedResult(messages, text, null);
    } finally {
      this.inFlight--;
    }
  }

  private awaitOverlap(calls: number, waitMs: number, signal?: AbortSignal): Promise<void> {
    if (this.inFlight >= calls) {
      for (const w of this.overlapWaiters.splice(0)) w();
      return Promise.resolve();
    }
    return untilAborted(
      new Promise<void>((res) => {
        const t = setTimeout(res, waitMs);
        this.overlapWaiters.push(() => {
          clearTimeout(t);
          res();
        });
      }),
      signal,
    );
  }
}

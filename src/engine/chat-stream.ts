// Pull streaming for ChatEngine.stream, after web-llm's chatCompletion stream: the caller reads the pieces
// when it is ready for them instead of handing a callback through every layer. Engines decode by pushing
// (a runtime's per-token callback, a worker's port), so this is the one place a push becomes a pull.
import type { ChatStream, GenerationResult } from './chat-engine';

export type { ChatStream } from './chat-engine';

const DONE: IteratorReturnResult<undefined> = { done: true, value: undefined };

/**
 * A ChatStream over a generation that pushes its pieces: `run` starts at once (so what an engine does on a
 * call, such as counting it, happens when the call is made), is handed `emit` for the pieces, and its
 * promise, or its synchronous throw, is the result. Until read, the pieces are kept: at most the
 * generation's own text.
 */
export function chatStream(run: (emit: (piece: string) => void) => Promise<GenerationResult>): ChatStream {
  return new PieceQueue(run);
}

class PieceQueue implements ChatStream {
  readonly result: Promise<GenerationResult>;
  private pieces: string[] = [];
  private ended = false;
  /** The reader stopped: pieces are no longer kept. */
  private closed = false;
  private read = false;
  private waiters: Array<() => void> = [];

  constructor(run: (emit: (piece: string) => void) => Promise<GenerationResult>) {
    // The engine is handed push itself: a piece crosses no wrapper on its way into the queue.
    this.result = new Promise<GenerationResult>((resolve) => resolve(run(this.push)));
    const end = () => {
      this.ended = true;
      this.wake();
    };
    this.result.then(end, end);
  }

  [Symbol.asyncIterator](): AsyncIterator<string> {
    if (this.read) throw new Error('a ChatStream has one reader: its pieces were already read');
    this.read = true;
    return {
      next: () => this.next(),
      return: async () => {
        this.closed = true;
        this.pieces = [];
        this.wake();
        return DONE;
      },
    };
  }

  private readonly push = (piece: string): void => {
    if (this.closed || this.ended) return;
    this.pieces.push(piece);
    this.wake();
  };

  private async next(): Promise<IteratorResult<string>> {
    for (;;) {
      if (this.closed) return DONE;
      if (this.pieces.length > 0) return { done: false, value: this.pieces.shift()! };
      if (this.ended) return DONE;
      await new Promise<void>((resolve) => this.waiters.push(resolve));
    }
  }

  private wake(): void {
    for (const w of this.waiters.splice(0)) w();
  }
}

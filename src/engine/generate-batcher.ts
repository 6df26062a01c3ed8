// Merges planner generations that overlap in time (the G rollouts of a Flow-GRPO group, chat() and
// generateIds() calls reaching the worker together) into lockstep runtime.generateBatch calls, so the
// weights are read once per step for several sequences instead of once per sequence.
//
// A call made while nothing runs starts in a microtask, right after the code that made it returns (so
// calls made in the same synchronous run, e.g. Promise.all over a group, start together), and calls that
// arrive while a run is on the GPU wait for it and then go together. A lone call goes to runtime.generate,
// which keeps the KV-cache prefix reuse of a conversation's next turn.
//
// Concurrent rollouts reach the planner staggered (each has run other modules first, and the shared
// web-llm engine serves them one at a time), so without help each call would run alone. expect(n) says
// n calls are coming (the live rollouts of a group): a run then waits until n calls are waiting, or
// maxWaitMs after it could have started, whichever comes first. With the default of 1 nothing waits.
import type { GenerateRequest, GenerateTokensOptions, TokenGeneration } from './runtime';

/** What the batcher needs of the runtime (Qwen2Runtime; a fake in the unit tests). */
export interface BatchingRuntime {
  /** Sequences one generateBatch step decodes together. */
  readonly maxDecodeRows: number;
  readonly activeAdapterId: string | null;
  setActiveAdapter(id: string | null): void;
  generate(prompt: number[], o?: GenerateTokensOptions): Promise<TokenGeneration>;
  generateBatch(requests: GenerateRequest[]): Promise<TokenGeneration[]>;
}

interface Waiting {
  prompt: number[];
  options: GenerateTokensOptions;
  /** The adapter active when the call was made: the one its tokens must come from. */
  adapter: string | null;
  resolve: (g: TokenGeneration) => void;
  reject: (e: unknown) => void;
}

/** What a request's onToken saw and answered during a merged run (replayed if the run has to be redone). */
interface Streamed {
  id: number;
  stop: boolean;
}

/** Calls f, turning a synchronous throw into a rejected promise. */
const call = <T>(f: () => Promise<T>): Promise<T> => new Promise<T>((resolve) => resolve(f()));

/** How long a run waits at most for the calls expect() announced (a stalled rollout must not hold the others). */
export const DEFAULT_BATCH_WAIT_MS = 10_000;

export class GenerateBatcher {
  private waiting: Waiting[] = [];
  private draining = false;
  private expected = 1;
  /** Ends the current wait for expected calls (null while not waiting). */
  private wake: (() => void) | null = null;
  /** While a run has switched the runtime to another adapter than the one chosen: both (see activeAdapterId). */
  private switched: { run: string | null; chosen: string | null } | null = null;

  constructor(readonly runtime: BatchingRuntime, readonly maxWaitMs = DEFAULT_BATCH_WAIT_MS) {}

  /**
   * `n` generations are expected to overlap (e.g. the rollouts of a group still running): a run waits for
   * up to min(n, maxDecodeRows) waiting calls, at most maxWaitMs. Call it again as the count changes, and
   * with 1 when they are over (no waiting).
   */
  expect(n: number): void {
    if (!Number.isInteger(n) || n < 1) throw new Error(`GenerateBatcher.expect: n must be a positive integer, got ${n}`);
    this.expected = n;
    this.checkWake();
  }

  /**
   * The adapter chosen for calls that name none: the runtime's active one, except while a run of this batcher
   * has switched the runtime to another adapter for its calls (a base-model call of one engine serving every
   * module, amid a rollout's planner calls under the trained adapter): then the one it switches back to.
   * Reading the runtime's instead would give a call made meanwhile the run's adapter.
   */
  get activeAdapterId(): string | null {
    const s = this.switched;
    return s && this.runtime.activeAdapterId === s.run ? s.chosen : this.runtime.activeAdapterId;
  }

  /**
   * generate(prompt, options) as runtime.generate gives it, run alone or merged with the calls it overlaps.
   * Tokens come from `adapter` (an id, or null for the base model), by default the adapter chosen now
   * (activeAdapterId), even if another is activated before the call runs.
   */
  submit(prompt: number[], options: GenerateTokensOptions = {}, adapter: string | null = this.activeAdapterId): Promise<TokenGeneration> {
    return new Promise<TokenGeneration>((resolve, reject) => {
      // An abort must not sit out the wait for other calls. The listener goes with the call, so a signal
      // that outlives many calls (a conversation's) does not collect one per call.
      const signal = options.signal;
      const onAbort = () => this.wake?.();
      const settled = () => signal?.removeEventListener('abort', onAbort);
      signal?.addEventListener('abort', onAbort, { once: true });
      this.waiting.push({
        prompt,
        options,
        adapter,
        resolve: (g) => (settled(), resolve(g)),
        reject: (e) => (settled(), reject(e)),
      });
      this.checkWake();
      if (!this.draining) {
        this.draining = true;
        queueMicrotask(() => void this.drain());
      }
    });
  }

  /** Calls submitted and not yet handed to the runtime. */
  get pending(): number {
    return this.waiting.length;
  }

  /** Live calls one runtime call takes at most (the runtime's decode rows, at least 1). */
  private get rowsPerRun(): number {
    return Math.max(1, Math.floor(this.runtime.maxDecodeRows) || 1);
  }

  private async drain(): Promise<void> {
    while (this.waiting.length > 0) {
      await this.gather();
      await this.run(this.take());
    }
    this.draining = false;
  }

  /** Whether a run may start now: enough calls wait for what expect() announced, or one was aborted. */
  private ready(): boolean {
    const want = Math.min(this.expected, this.rowsPerRun);
    return this.waiting.length >= want || this.waiting.some((w) => w.options.signal?.aborted);
  }

  private checkWake(): void {
    if (this.wake && this.ready()) this.wake();
  }

  /** Waits (at most maxWaitMs) until ready(). */
  private gather(): Promise<void> {
    if (this.ready()) return Promise.resolve();
    return new Promise<void>((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.wake = null;
        resolve();
      };
      const timer = setTimeout(done, this.maxWaitMs);
      this.wake = done;
    });
  }

  /**
   * The oldest waiting call and the next ones under the same adapter, up to maxDecodeRows live ones (one
   * runtime call each, so every caller gets its result when its own batch ends, and calls arriving in the
   * meantime can join the next). Calls under other adapters keep their place for a later run.
   */
  private take(): Waiting[] {
    const adapter = this.waiting[0].adapter;
    const rows = this.rowsPerRun;
    const taken: Waiting[] = [];
    let live = 0;
    this.waiting = this.waiting.filter((w) => {
      if (w.adapter !== adapter || live >= rows) return true;
      taken.push(w);
      if (!w.options.signal?.aborted) live++;
      return false;
    });
    return taken;
  }

  /** Runs one group (same adapter); settles every caller in it and never rejects. */
  private async run(group: Waiting[]): Promise<void> {
    // An already aborted call costs no GPU work: runtime.generate answers it at once (after validating it,
    // as it would alone), so it takes no row of the batch.
    const aborted = group.filter((w) => w.options.signal?.aborted);
    const live = group.filter((w) => !w.options.signal?.aborted);
    const settled = aborted.map((w) => this.alone(w, w.options));
    if (live.length > 0) settled.push(this.runLive(live));
    await Promise.all(settled);
  }

  private async runLive(live: Waiting[]): Promise<void> {
    try {
      const restore = this.useAdapter(live[0].adapter);
      try {
        await (live.length === 1 ? this.alone(live[0], live[0].options) : this.merged(live));
      } finally {
        restore();
      }
    } catch (e) {
      // Settling an already settled promise does nothing: this reaches only callers still waiting.
      for (const w of live) w.reject(e);
    }
  }

  private alone(w: Waiting, o: GenerateTokensOptions): Promise<void> {
    return call(() => this.runtime.generate(w.prompt, o)).then(w.resolve, w.reject);
  }

  /**
   * One generateBatch for the group. If it fails, each call runs again alone, so a bad request fails
   * only its own caller; what a call's onToken was already given is replayed to the runtime, not shown
   * to the caller a second time.
   */
  private async merged(group: Waiting[]): Promise<void> {
    const tapes = group.map((w) => new Tape(w.options));
    const requests = group.map((w, i) => ({ prompt: w.prompt, options: tapes[i].batchOptions }));
    let out: TokenGeneration[];
    try {
      out = await call(() => this.runtime.generateBatch(requests));
    } catch {
      await Promise.all(
        group.map((w, i) => {
          const { options, release } = tapes[i].rerun();
          return this.alone(w, options).finally(release);
        }),
      );
      return;
    }
    if (!Array.isArray(out) || out.length !== group.length) {
      throw new Error(`generateBatch returned ${Array.isArray(out) ? out.length : 'no'} results for ${group.length} requests`);
    }
    group.forEach((w, i) => w.resolve(out[i]));
  }

  /**
   * Makes `adapter` active for a run if another was activated after its calls were made; returns what
   * puts back the caller's choice afterwards (unless someone chose again meanwhile). Like the trainer's
   * reference pass, the switch is global: runtime work queued meanwhile by others would see it.
   */
  private useAdapter(adapter: string | null): () => void {
    const rt = this.runtime;
    const prev = rt.activeAdapterId;
    if (prev === adapter) return () => undefined;
    try {
      rt.setActiveAdapter(adapter);
    } catch (e) {
      throw new Error(`generation requested under adapter '${adapter}', which is no longer loaded: ${e instanceof Error ? e.message : String(e)}`);
    }
    this.switched = { run: adapter, chosen: prev };
    return () => {
      this.switched = null;
      if (rt.activeAdapterId !== adapter) return;
      try {
        rt.setActiveAdapter(prev);
      } catch {
        // The previous adapter was removed meanwhile; removing the active one leaves the base model.
        rt.setActiveAdapter(null);
      }
    };
  }
}

/**
 * A merged call's one wrapper around its caller's onToken: during the batch it passes each token on and
 * notes it with the caller's answer; if the batch fails and the call runs again alone, the same function
 * answers the noted tokens from its notes (the caller is not shown them twice) and passes the rest on.
 */
class Tape {
  private readonly log: Streamed[] = [];
  /** Tokens of the log answered again by the re-run; -1 while the batch runs. */
  private replayed = -1;
  /** The re-run's signal: the caller's abort, held back until the re-run has caught up with the log. */
  private readonly follow = new AbortController();

  constructor(private readonly o: GenerateTokensOptions) {}

  /** The call's options in the batch. */
  get batchOptions(): GenerateTokensOptions {
    return this.o.onToken ? { ...this.o, onToken: this.onToken } : this.o;
  }

  private readonly onToken = (id: number, logprob: number): boolean | void => {
    const user = this.o.onToken!;
    if (this.replayed < 0) {
      const r = user(id, logprob);
      this.log.push({ id, stop: r === true });
      return r;
    }
    if (this.replayed >= this.log.length) return user(id, logprob);
    const at = this.replayed++;
    const seen = this.log[at];
    if (seen.id !== id) {
      throw new Error(`re-running a generation alone after its batch failed gave token ${id} at position ${at}, where the batch had already streamed ${seen.id}`);
    }
    if (this.replayed === this.log.length && this.o.signal?.aborted) this.follow.abort();
    return seen.stop;
  };

  /**
   * Options to run the call again alone after its merged run failed. Without prefix reuse the tokens are
   * those the batch would have given (same kernels per row), so the first ones the log holds are the ones
   * the caller already saw. The caller's abort applies from where the log ends, as it did in the batch.
   */
  rerun(): { options: GenerateTokensOptions; release: () => void } {
    const o = this.o;
    // The failed batch moved the grammar on; the rerun starts from the reply's beginning.
    o.constraint?.reset();
    if (!o.onToken || this.log.length === 0) return { options: { ...o, reusePrefix: false }, release: () => undefined };
    this.replayed = 0;
    const follow = () => {
      if (this.replayed >= this.log.length) this.follow.abort();
    };
    o.signal?.addEventListener('abort', follow);
    return {
      options: { ...o, reusePrefix: false, signal: this.follow.signal, onToken: this.onToken },
      release: () => o.signal?.removeEventListener('abort', follow),
    };
  }
}

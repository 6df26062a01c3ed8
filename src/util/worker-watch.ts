// A worker that dies takes its pending replies with it: comlink (and web-llm's own messaging) wait forever
// for an answer that will not come. Every worker client watches its worker with this and races each call
// against `gone`, so a crash, an unreadable message or a terminate() rejects the pending calls at once, and
// every later call, with a WorkerGoneError that says which worker and why, until the client is restarted.
import { AgentFlowError, type ErrorCategory } from '../errors';

export class WorkerGoneError extends AgentFlowError {
  override readonly category: ErrorCategory = 'worker-gone';
  constructor(
    /** Which worker: 'planner', 'web-llm', 'python', ... */
    readonly worker: string,
    /** What happened, for people: "an error: ...", "terminated", ... */
    readonly reason: string,
  ) {
    super(`the ${worker} worker stopped (${reason}); reload the model to start it again`);
    this.name = 'WorkerGoneError';
  }
}

export interface WorkerWatch {
  /** Never resolves; rejects with a WorkerGoneError when the worker is gone. */
  readonly gone: Promise<never>;
  /** Why it is gone, or null while it runs. */
  readonly goneReason: WorkerGoneError | null;
  /** `p`, unless the worker goes first (then its WorkerGoneError). */
  race<T>(p: Promise<T>): Promise<T>;
  /** Ends the worker; pending and later calls reject naming `reason`. */
  terminate(reason?: string): void;
}

/**
 * Watches `worker`: an 'error' event (an uncaught exception or a script that failed to load; the worker is
 * then terminated, since its state is unknown), a 'messageerror', or terminate() make it gone.
 */
export function watchWorker(worker: Worker, name: string): WorkerWatch {
  return watchEnd(name, () => worker.terminate(), (end) => {
    worker.addEventListener('error', (e) => end(`an error: ${(e as ErrorEvent).message || 'its script could not be loaded'}`));
    worker.addEventListener('messageerror', () => end('it sent a message that could not be read'));
  });
}

/**
 * The watch for any kind of worker: `listen` hooks the worker's own ways of dying to `end`; `terminate`
 * stops it (called once, when it is gone for any reason).
 */
export function watchEnd(name: string, terminate: () => void, listen: (end: (why: string) => void) => void): WorkerWatch {
  let reason: WorkerGoneError | null = null;
  let fail!: (e: WorkerGoneError) => void;
  const gone = new Promise<never>((_, reject) => (fail = reject));
  // Nobody may be waiting when it goes: that is not an unhandled rejection.
  gone.catch(() => undefined);
  const end = (why: string) => {
    if (reason) return;
    reason = new WorkerGoneError(name, why);
    terminate();
    fail(reason);
  };
  listen(end);
  return {
    gone,
    get goneReason() {
      return reason;
    },
    race<T>(p: Promise<T>): Promise<T> {
      if (reason) {
        p.catch(() => undefined);
        return Promise.reject(reason);
      }
      return Promise.race([p, gone]);
    },
    terminate(why = 'terminated') {
      end(why);
    },
  };
}

/**
 * `api` (a comlink Remote of a flat API) whose every method call is raced against the worker's end, so no
 * caller waits forever on a dead worker. Symbol-keyed members (comlink's releaseProxy) pass through as they are.
 */
export function guardCalls<T extends object>(api: T, watch: WorkerWatch): T {
  return new Proxy(api, {
    get(target, prop, receiver) {
      const member = Reflect.get(target, prop, receiver) as unknown;
      if (typeof prop !== 'string' || typeof member !== 'function') return member;
      return (...args: unknown[]) => watch.race(Promise.resolve((member as (...a: unknown[]) => unknown)(...args)));
    },
  });
}

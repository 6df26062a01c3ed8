// A decode waits on GPU reads (the draw log, logits, a sampler's candidates). A read that never settles (a
// driver that drops a map callback, a hung queue) would hold the runtime's call queue, and every caller
// behind it, forever: each wait is bounded, and a read still pending after the bound fails the decode with
// a GpuStallError naming the read. The bound counts only the time the decode is blocked on that read, not
// kernel compiles before it, and each settled read restarts it, so a slow decode that keeps going never
// trips it.
import { AgentFlowError, type ErrorCategory } from '../errors';
import { timerCanHold } from '../util/timers';

/**
 * Default bound on one wait for a GPU read (RuntimeOptions.stallTimeoutMs). Generous: on lavapipe a read
 * also waits for the queue's first dispatch of each new kernel, which LLVM compiles there; with a cold Mesa
 * shader cache on a 2-core machine at load 11, the first 8-row fused 4-bit decode step took 203 s.
 */
export const DEFAULT_STALL_MS = 300_000;

export class GpuStallError extends AgentFlowError {
  override readonly category: ErrorCategory = 'gpu-stalled';
  constructor(
    /** The read the decode waited on, e.g. "the draw log of step 3 (rows 0, 2)". */
    public readonly waitedFor: string,
    public readonly ms: number,
    doing: string,
  ) {
    super(
      `The GPU did not return ${waitedFor} within ${ms / 1000} s while ${doing}: the device or its driver stopped answering ` +
        `(or is far slower than stallTimeoutMs allows). Reload the model to continue, or raise stallTimeoutMs on a very slow GPU.`,
    );
    this.name = 'GpuStallError';
  }
}

/** Checks a stallTimeoutMs option: a positive number of ms (Infinity: no bound). */
export function checkStallMs(ms: number | undefined): number {
  if (ms === undefined) return DEFAULT_STALL_MS;
  if (typeof ms !== 'number' || !(ms > 0)) throw new Error(`runtime: stallTimeoutMs must be a positive number of ms, got ${ms}`);
  return ms;
}

/**
 * `p`, or a GpuStallError if it has not settled `ms` after this call. The timer is cleared when `p`
 * settles, so a finished decode leaves nothing armed.
 */
export function unlessStalled<T>(p: Promise<T>, ms: number, waitedFor: () => string, doing: string): Promise<T> {
  if (!timerCanHold(ms)) return p;
  let timer: ReturnType<typeof setTimeout> | undefined;
  const stalled = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new GpuStallError(waitedFor(), ms, doing)), ms);
  });
  return Promise.race([p, stalled]).finally(() => clearTimeout(timer));
}

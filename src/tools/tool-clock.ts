// The time limit of one tool call, shared by the agent loop's runTool and the registry's run. It runs from
// the call, stops while the tool says the call is queued behind others, and restarts from zero when the
// tool says it has started on the call (ToolContext.queued / started): several rollouts share one Python
// worker, and a call must not time out for the time it spent waiting for its turn. The wait has a limit of
// its own, much longer, so a call whose turn never comes (a tool that reports queued() and never started(),
// a worker stuck on an earlier call) still ends.
import { timerCanHold } from '../util/timers';

/**
 * A queued call may wait this many times its time limit for its turn. In training up to 8 rollouts share a
 * tool (MAX_ROLLOUT_CONCURRENCY), each with one call at a time, so a call waits behind at most 7 others, and
 * each of those is stopped at its own limit (the same one: the rollouts share a config). 8 x the limit is
 * that wait with one limit to spare; a call still waiting then is behind something that does not end.
 */
export const QUEUE_LIMIT_PER_TIME_LIMIT = 8;

/** Which limit ran out: the call's own work ('run'), or its wait for its turn ('queue'). */
export type ToolTimeoutKind = 'run' | 'queue';

export interface ToolClock {
  /** The longest a queued call may wait for started(), in ms (Infinity: no limit). */
  readonly queueLimitMs: number;
  /** For ToolContext.queued: stops the clock until started(), and starts the queue limit (once). */
  queued(): void;
  /** For ToolContext.started: the full limit counts from now. Only the first call counts. */
  started(): void;
  /** The call is over: the clock never fires, and late queued()/started() calls are ignored. */
  stop(): void;
}

/**
 * Starts the clock now. A limit that is not a positive number a timer can hold means no limit; the queue limit
 * defaults to QUEUE_LIMIT_PER_TIME_LIMIT x timeoutMs (no limit when timeoutMs is none). onTimeout is told
 * which limit ran out and its length, for the caller's message.
 */
export function startToolClock(
  timeoutMs: number,
  onTimeout: (kind: ToolTimeoutKind, limitMs: number) => void,
  queueLimitMs = timeoutMs * QUEUE_LIMIT_PER_TIME_LIMIT,
): ToolClock {
  const queueLimit = timerCanHold(timeoutMs) && timerCanHold(queueLimitMs) ? queueLimitMs : Number.POSITIVE_INFINITY;
  let timer: ReturnType<typeof setTimeout> | undefined;
  let begun = false;
  let waiting = false;
  let over = false;
  const arm = (kind: ToolTimeoutKind, ms: number) => {
    disarm();
    if (timerCanHold(ms)) timer = setTimeout(() => {
      timer = undefined;
      if (!over) onTimeout(kind, ms);
    }, ms);
  };
  const disarm = () => {
    if (timer !== undefined) clearTimeout(timer);
    timer = undefined;
  };
  arm('run', timeoutMs);
  return {
    queueLimitMs: queueLimit,
    queued() {
      // A tool that reports queued after it started would otherwise get unlimited time; a second queued()
      // must not restart the wait's limit.
      if (over || begun || waiting) return;
      waiting = true;
      arm('queue', queueLimit);
    },
    started() {
      if (over || begun) return;
      begun = true;
      arm('run', timeoutMs);
    },
    stop() {
      over = true;
      disarm();
    },
  };
}

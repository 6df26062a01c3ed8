// The time limit of one tool call, shared by the agent loop's runTool and the registry's run. It runs from
// the call, stops while the tool says the call is queued behind others, and restarts from zero when the
// tool says it has started on the call (ToolContext.queued / started): several rollouts share one Python
// worker, and a call must not time out for the time it spent waiting for its turn.

export interface ToolClock {
  /** For ToolContext.queued: stops the clock until started(). */
  queued(): void;
  /** For ToolContext.started: the full limit counts from now. Only the first call counts. */
  started(): void;
  /** The call is over: the clock never fires, and late queued()/started() calls are ignored. */
  stop(): void;
}

/** Starts the clock now. A limit that is not a positive finite number means no limit. */
export function startToolClock(timeoutMs: number, onTimeout: () => void): ToolClock {
  const limited = Number.isFinite(timeoutMs) && timeoutMs > 0;
  let timer: ReturnType<typeof setTimeout> | undefined;
  let begun = false;
  let over = false;
  const arm = () => {
    disarm();
    if (limited) timer = setTimeout(() => {
      timer = undefined;
      if (!over) onTimeout();
    }, timeoutMs);
  };
  const disarm = () => {
    if (timer !== undefined) clearTimeout(timer);
    timer = undefined;
  };
  arm();
  return {
    queued() {
      // A tool that reports queued after it started would otherwise get unlimited time.
      if (!over && !begun) disarm();
    },
    started() {
      if (over || begun) return;
      begun = true;
      arm();
    },
    stop() {
      over = true;
      disarm();
    },
  };
}

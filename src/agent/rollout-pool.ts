// Runs the rollouts of a GRPO group a few at a time, so their planner calls reach the planner engine
// together (and can be decoded as one batch). Rollout i is always started before rollout i + 1, and every
// outcome is kept at its rollout's index, so callers see the same order whatever finished first.

export type RolloutOutcome<T> = { ok: true; value: T } | { ok: false; error: unknown };

/** Throws unless `value` is a positive integer; `setting` names the option at fault in the message. */
export function checkConcurrency(value: number, setting: string): number {
  if (!Number.isInteger(value) || value < 1) throw new Error(`${setting} must be a positive integer, got ${value}`);
  return value;
}

/**
 * Runs run(0) .. run(count - 1) with at most `concurrency` in flight. No rollout starts once the signal has
 * aborted or once a rollout has thrown (as a sequential loop that stops at the first error would); the ones
 * already running are awaited, so none is left half-written when this returns. The outcomes are those of
 * the rollouts that started, which are always rollouts 0 .. k - 1, in rollout order.
 */
export async function runRollouts<T>(
  count: number,
  concurrency: number,
  run: (rollout: number) => Promise<T>,
  signal?: AbortSignal,
  /** Told how many rollouts are running whenever that changes (1 again at the end). */
  onRunning?: (n: number) => void,
): Promise<RolloutOutcome<T>[]> {
  checkConcurrency(concurrency, 'rollout concurrency');
  const outcomes: RolloutOutcome<T>[] = [];
  let next = 0;
  let failed = false;
  let running = 0;
  const lanes = Math.min(concurrency, count);
  // Whether another rollout will start after this one: then the running count stays where it is.
  const more = () => next < count && !failed && !signal?.aborted;
  if (lanes > 0) onRunning?.(lanes);
  const lane = async () => {
    while (more()) {
      const i = next++;
      running++;
      try {
        outcomes[i] = { ok: true, value: await run(i) };
      } catch (error) {
        outcomes[i] = { ok: false, error };
        failed = true;
      }
      running--;
      if (!more() && running > 0) onRunning?.(running);
    }
  };
  try {
    await Promise.all(Array.from({ length: lanes }, lane));
  } finally {
    onRunning?.(1);
  }
  return outcomes;
}

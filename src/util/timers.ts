// setTimeout keeps its delay in a signed 32-bit integer: a longer one (over about 24.8 days, or Infinity)
// fires at once. A limit that long means no limit, so callers arm a timer only when it can hold the delay.

/** The longest delay setTimeout holds, in ms (2^31 - 1). */
export const MAX_TIMER_MS = 2 ** 31 - 1;

/** Whether `ms` is a positive delay a timer can hold (else: no limit). */
export function timerCanHold(ms: number): boolean {
  return ms > 0 && ms <= MAX_TIMER_MS;
}

// The Training tab's one-line status: where the run stands, as a sentence ("Paused at step 17 of 40,
// reward 0.76") rather than the driver's state name.
import type { TrainingState } from './training-driver';

/** `last` is the newest step's point (none before the first step); `total` the run's steps, when known. */
export function trainingStatusText(state: TrainingState, last: { step: number; reward: number } | undefined, total: number | null): string {
  if (state === 'idle') return 'Not started.';
  const at = `step ${last?.step ?? 0}${total ? ` of ${total}` : ''}${last ? `, reward ${last.reward.toFixed(2)}` : ''}`;
  return { running: `Running: ${at}`, paused: `Paused at ${at}`, done: `Done: ${at}`, error: `Failed at ${at}` }[state];
}

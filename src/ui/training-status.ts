// The Training tab's one-line status: where the run stands, as a sentence ("Paused at step 17 of 40,
// reward 0.76") rather than the driver's state name.
import { noLearningNote, type StepMetrics } from '../trainer/run/metrics';
import type { TrainingState } from '../controllers/training/training-driver';

/**
 * `last` is the newest step's point (none before the first step); `total` the run's steps, when known;
 * `interrupted`: a stored run that was running when the page went away (a reload), which nothing runs now.
 */
export function trainingStatusText(state: TrainingState, last: { step: number; reward: number } | undefined, total: number | null, interrupted = false): string {
  if (state === 'idle') return 'Not started.';
  const at = `step ${last?.step ?? 0}${total ? ` of ${total}` : ''}${last ? `, reward ${last.reward.toFixed(2)}` : ''}`;
  if (interrupted && state === 'paused') return `Interrupted at ${at} (the page closed while it ran) — Resume continues it from its last checkpoint.`;
  return { running: `Running: ${at}`, paused: `Paused at ${at}`, done: `Done: ${at}`, error: `Failed at ${at}` }[state];
}

/**
 * What the tab says about steps that learned nothing: null when every step had a reward signal; `run` when no
 * step did (the result is then the adapter the run started from); `steps` otherwise, counting them with the
 * newest one's reason.
 */
export function noSignalText(points: ReadonlyArray<Pick<StepMetrics, 'step' | 'noSignal' | 'skippedUpdate'>>): { run: boolean; text: string } | null {
  const none = noLearningNote(points);
  if (none) return { run: true, text: `This run learned nothing: ${none.replace(/^no step of this run learned anything: /, '')}` };
  const quiet = points.filter((p) => p.noSignal);
  if (!quiet.length) return null;
  const last = quiet[quiet.length - 1];
  return { run: false, text: `${quiet.length} of ${points.length} steps had no reward signal (step ${last.step}: ${last.noSignal}).` };
}

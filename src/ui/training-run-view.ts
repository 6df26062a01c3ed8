// Where the shown run stands, under the tab's buttons: progress (step k of n, a bar, the time left, the
// current step's rollouts), its label and notes, its result, steps with no reward signal and skipped updates.
import { html, nothing } from 'lit';
import type { RunResult } from '../trainer/run/run-store';
import { formatSeconds } from '../controllers/progress-tracker';
import type { TrainingStepPoint } from '../controllers/training/training-driver';
import type { RunProgress } from '../controllers/training/training-runner';
import { noSignalText } from './training-status';

export interface RunView {
  points: readonly TrainingStepPoint[];
  progress: RunProgress | null;
  label: string;
  notes: readonly string[];
  result: RunResult | null;
}

/** "step 17 of 40", a bar, and the time left at the pace of this session's steps. */
function renderProgress(pr: RunProgress | null, points: readonly TrainingStepPoint[]) {
  if (!pr || !pr.steps) return nothing;
  const done = points.at(-1)?.step ?? 0;
  const ran = done - pr.stepsAtStart;
  const secondsLeft = ran > 0 ? (((Date.now() - pr.started) / 1000) * (pr.steps - done)) / ran : null;
  const r = pr.rollouts;
  return html`<div data-testid="training-progress">
    <label>Step ${done} of ${pr.steps}${secondsLeft !== null ? `, about ${formatSeconds(secondsLeft)} left` : ''}
      <progress max=${pr.steps} .value=${done}></progress></label>
    ${r ? html`<small data-testid="rollout-progress">Step ${r.step}: playing group ${Math.min(r.groupsDone + 1, r.groups)} of ${r.groups}, ${r.rolloutsDone} of ${r.groupSize} rollouts done</small>` : nothing}
  </div>`;
}

/** Steps with no reward signal (all-equal groups): a note, or a warning when the whole run learned nothing. */
function renderNoSignal(p: readonly TrainingStepPoint[]) {
  const n = noSignalText(p);
  if (!n) return nothing;
  return n.run ? html`<p class="warning" role="status" data-testid="no-signal">${n.text}</p>` : html`<p class="note" data-testid="no-signal"><small>${n.text}</small></p>`;
}

export function renderRunState(v: RunView) {
  const p = v.points;
  const r = v.result;
  return html`${renderProgress(v.progress, p)}
    ${v.label ? html`<p data-testid="training-label"><small>${v.label}</small></p>` : nothing}
    ${v.notes.map((n) => html`<p class="note" role="status" data-testid="training-note"><small>${n}</small></p>`)}
    ${r ? html`<p data-testid="training-result">Result: the adapter of step ${r.step}${r.reason === 'best' ? `, the best rolling reward (${r.rollingReward.toFixed(2)})` : ' (the last step)'}.</p>` : nothing}
    ${renderNoSignal(p)}
    ${p.some((x) => x.skippedUpdate)
      ? html`<p class="error" data-testid="skipped-updates">Updates skipped (adapter unchanged): ${p.filter((x) => x.skippedUpdate).map((x) => `step ${x.step}: ${x.skippedUpdate}`).join('; ')}</p>`
      : nothing}`;
}

// The Training tab's list of stored runs: each with its step, a status in words, and Show / Resume. The run
// the tab shows is resumed by the tab's own Resume button, so a paused run has one Resume, not one per list.
// A run stored as running that nothing runs was cut off (a reload, a closed tab): it says "interrupted".
import { toolTaskOf } from '../tasks/tool-task-run';
import { html, nothing } from 'lit';
import type { StoredRun } from '../trainer/run/run-store';
import type { TrainingState, TrainingStepPoint } from '../controllers/training/training-driver';

export interface RunsView {
  runs: readonly StoredRun[];
  /** The run going on in this page now, with its live steps (the stored record lags behind it). */
  live: { id: string; points: readonly TrainingStepPoint[]; state: TrainingState } | null;
  /** The run the tab shows. */
  shownId: string | null;
  busy: boolean;
  /** Agent-rollout runs need a planner loaded to resume. */
  canResumeAgent: boolean;
  show(run: StoredRun): void;
  resume(run: StoredRun): void;
}

/** A stored run's status in words: a run stored as running that this page does not run was interrupted. */
export function runStatusWord(run: Pick<StoredRun, 'id' | 'status'>, live: RunsView['live']): 'running' | 'interrupted' | 'paused' | 'done' | 'failed' {
  // The page's own run: its live state (the stored record is written after it).
  if (live?.id === run.id) return live.state === 'error' ? 'failed' : live.state === 'idle' ? 'paused' : live.state;
  return run.status === 'running' ? 'interrupted' : run.status === 'error' ? 'failed' : run.status;
}

export function renderRunsList(v: RunsView) {
  if (!v.runs.length) return nothing;
  return html`<h3>Runs</h3>
    <ul class="runs" data-testid="training-runs" aria-label="Stored training runs">${v.runs.map((r) => {
      const live = v.live?.id === r.id ? v.live : null;
      const step = (live ? live.points.at(-1)?.step : r.history.at(-1)?.step) ?? 0;
      const word = runStatusWord(r, v.live);
      const resumable = (word === 'paused' || word === 'interrupted') && (r.spec.task === 'toy' || toolTaskOf(r.spec) !== null || v.canResumeAgent);
      const shown = v.shownId === r.id;
      return html`<li data-run=${r.id}>${r.spec.label}, run ${r.id}: step ${step} of ${r.spec.steps} — <span class="status">${word}</span>${r.result ? `, result step ${r.result.step}` : ''}${shown ? html` <small>(shown above)</small>` : nothing}
        ${shown ? nothing : html`<button type="button" ?disabled=${v.busy} aria-label=${`Show run ${r.id}`} @click=${() => v.show(r)}>Show</button>`}
        ${resumable && !shown ? html`<button type="button" ?disabled=${v.busy} aria-label=${`Resume run ${r.id}`} @click=${() => v.resume(r)}>Resume</button>` : nothing}</li>`;
    })}</ul>`;
}

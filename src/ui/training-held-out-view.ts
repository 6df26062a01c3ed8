// The agent mode's optional held-out file and how often the run evaluates on it (the CLI's --eval-data and
// --eval-every): the chosen file's summary, or why it is refused, and the "every K steps" field once a file is chosen.
import { html, nothing } from 'lit';
import type { HeldOutState } from '../controllers/training/held-out-choice';

export const DEFAULT_HELD_OUT_EVERY = 10;

export interface HeldOutView {
  state: HeldOutState | null;
  /** The field's value: the shown run's schedule, else the default. */
  every: number;
  onFile(e: Event): void;
  onClear(): void;
}

export function renderHeldOut(v: HeldOutView) {
  const s = v.state;
  return html`<div class="row" role="group" aria-label="Held-out evaluation">
      <label>Held-out items, to test the adapter on during the run (optional; AgentFlow data.json or JSONL)
        <input type="file" accept=".json,.jsonl,.ndjson,application/json" data-testid="training-held-out-file" @change=${(e: Event) => v.onFile(e)} />
      </label>
      ${s && !s.problem
        ? html`<label title="Also at step 0 (before training) and the last step">Test on the held-out items every (steps)<input id="held-out-every" type="number" min="1" .value=${String(v.every)} /></label>
            <span role="status" data-testid="training-held-out-summary">Held out: ${s.items} item${s.items === 1 ? '' : 's'} from “${s.fileName}”${s.skipped ? `; ${s.skipped} skipped` : ''}.</span>`
        : nothing}
      ${s ? html`<button type="button" data-testid="training-held-out-clear" @click=${(e: Event) => clearFile(e, v)}>No held-out items</button>` : nothing}
    </div>
    ${s?.problem ? html`<p class="error" data-testid="training-held-out-problem">${s.problem}</p>` : nothing}`;
}

/** Forgets the file, and empties the input so the same file can be chosen again. */
function clearFile(e: Event, v: HeldOutView): void {
  const input = (e.target as HTMLElement).parentElement?.querySelector<HTMLInputElement>('[data-testid="training-held-out-file"]');
  if (input) input.value = '';
  v.onClear();
}

/** The evaluation interval from the form, a whole number from 1 to the run's steps. */
export function readHeldOutEvery(root: ParentNode, steps: number): number {
  const k = Number((root.querySelector('#held-out-every') as HTMLInputElement | null)?.value ?? DEFAULT_HELD_OUT_EVERY);
  if (!Number.isInteger(k) || k < 1 || k > steps) throw new Error(`Test on the held-out items every … steps must be a whole number from 1 to the run's ${steps} steps, got ${k}`);
  return k;
}

// The Experiments tab's table of stored runs: A and B marked, each with Results, Compare, Export, Rename and
// Delete, the import of a run from files, and the accuracy of the newest runs as a chart.
import { html, nothing } from 'lit';
import { distinctLabels } from '../controllers/experiments/experiment-compare';
import type { ExperimentRuns } from '../controllers/experiments/experiment-runs';
import type { ExperimentRecord } from '../store/records';
import { barChart } from './charts';
import { deleteQuestion, focusDeleteQuestion } from './delete-question';

export interface RunsView {
  host: Parameters<typeof focusDeleteQuestion>[0];
  runs: ExperimentRuns;
  /** The run whose name is being edited, and why the last name was refused. */
  renaming: string | null;
  renameError: string | null;
  /** The run whose Delete button asks first. */
  deleting: string | null;
  setDeleting(id: string | null): void;
  startRename(id: string): void;
  saveRename(id: string): void;
  endRename(id: string): void;
  exportRun(id: string): void;
  onRunFiles(e: Event): void;
}

/** Which run is A (its results open) and which is B (compared with it), in the Runs table. */
function runMark(mark: 'A' | 'B' | null) {
  if (!mark) return nothing;
  return html`<span class="ab" data-testid="run-mark" title=${mark === 'A' ? 'Run A: its results are open' : 'Run B: compared with run A'}>${mark}</span> `;
}

/** The name field of a run being renamed: Enter or Save keeps the name, Escape or Cancel leaves it. */
function renderRename(v: RunsView, r: ExperimentRecord) {
  return html`<div class="rename">
    <input type="text" data-testid="rename-input" aria-label=${`New name for run ${r.name}`} .value=${r.name}
      aria-invalid=${v.renameError ? 'true' : 'false'} aria-describedby=${v.renameError ? 'rename-error' : nothing}
      @keydown=${(e: KeyboardEvent) => {
        if (e.key === 'Enter') v.saveRename(r.id);
        else if (e.key === 'Escape') v.endRename(r.id);
      }} />
    <button type="button" @click=${() => v.saveRename(r.id)}>Save</button>
    <button type="button" @click=${() => v.endRename(r.id)}>Cancel</button>
    ${v.renameError ? html`<p class="problems" id="rename-error" role="alert">${v.renameError}</p>` : nothing}
  </div>`;
}

export function renderRuns(v: RunsView) {
  const c = v.runs;
  const importRun = html`<label class="import-run">Import a run (cli eval's experiment.json, or results.jsonl with summary.json)
    <input type="file" multiple accept=".json,.jsonl,application/json" data-testid="run-file" @change=${v.onRunFiles} /></label>`;
  if (!c.runs.length) return html`<p>No runs yet.</p>${importRun}`;
  const shown = c.runs.slice(0, 8);
  const labels = distinctLabels(shown.map((r) => r.name));
  const acc = shown.map((r, i) => ({ label: labels[i], value: r.summary?.accuracy ?? 0 }));
  return html`<section aria-labelledby="runs-h">
    <h3 id="runs-h">Runs</h3>
    <div class="table-scroll" role="region" aria-label="Runs" tabindex="0">
    <table class="runs" data-testid="runs">
      <thead><tr><th scope="col">Run</th><th scope="col">Status</th><th scope="col">Turns</th><th scope="col">Accuracy</th><th scope="col">Tool calls</th><th scope="col">Actions</th></tr></thead>
      <tbody>
        ${c.runs.map(
          (r) => html`<tr data-run=${r.id}>
            <td class="run-name">${v.renaming === r.id ? renderRename(v, r) : html`${runMark(r.id === c.selected ? 'A' : r.id === c.compareId ? 'B' : null)}<span class="name">${r.name}</span>${r.config.scripted ? html` <span class="scripted" data-testid="scripted-run">(scripted demo)</span>` : nothing}`}</td><td>${r.status}</td>
            <td>${typeof r.config.maxTurns === 'number' ? r.config.maxTurns : '—'}</td>
            <td>${r.summary ? `${r.summary.correct}/${r.summary.items} (${Math.round(100 * (r.summary.accuracy ?? 0))}%)` : '—'}</td>
            <td>${r.summary?.toolCalls ?? '—'}</td>
            <td class="actions">
              <button type="button" aria-pressed=${c.selected === r.id ? 'true' : 'false'} @click=${() => c.select(r.id)}>Results</button>
              <button type="button" aria-pressed=${c.compareId === r.id ? 'true' : 'false'} ?disabled=${c.selected === r.id} @click=${() => c.compareWith(c.compareId === r.id ? null : r.id)}>Compare</button>
              <button type="button" @click=${() => v.exportRun(r.id)}>Export</button>
              <button type="button" data-rename=${r.id} aria-label=${`Rename run ${r.name}`} ?disabled=${v.renaming === r.id} @click=${() => v.startRename(r.id)}>Rename</button>
              ${v.deleting === r.id
                ? deleteQuestion(`run ${r.name}`, 'this run', () => {
                    v.setDeleting(null);
                    void c.deleteRun(r.id);
                  }, () => v.setDeleting(null))
                : html`<button type="button" aria-label=${`Delete run ${r.name}`} ?disabled=${r.status === 'running' && c.inFlight} @click=${() => {
                    v.setDeleting(r.id);
                    void focusDeleteQuestion(v.host);
                  }}>Delete</button>`}
            </td>
          </tr>`,
        )}
      </tbody>
    </table>
    </div>
    ${importRun}
    <div class="charts">${barChart('Accuracy by run', acc, 1, (val) => `${Math.round(val * 100)}%`)}</div>
  </section>`;
}

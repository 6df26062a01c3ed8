// Experiments: import a benchmark file, choose a subset and turn budget, run it with a progress bar that
// says which item, turn and module is running, read per-item results (question, expected and given answer
// side by side, numbered as the subset box numbers them, each linked to its trajectory), accuracy and
// tool-use charts, compare two runs side by side, export a run. Runs are kept in IndexedDB, named by the
// model, adapter, benchmark, turn budget and date they ran with (unique, and renamable); imported benchmarks
// are kept too and offered in a list.
//
// The panel holds what is only on screen (the open trajectory, a rename or delete in progress); the benchmark
// (BenchmarkChoice) and the runs (ExperimentRuns) are its controllers'.
import { LitElement, html, nothing } from 'lit';
import type { ImportedBenchmark } from '../agent/benchmark-import';
import type { AgentEngines } from '../agent/loop';
import { BenchmarkChoice, benchmarkLabel } from '../controllers/benchmark-choice';
import { ExperimentRuns } from '../controllers/experiments/experiment-runs';
import { parseSubset } from '../controllers/experiments/experiment-subset';
import type { EngineUse, EngineUser } from '../controllers/engines/engine-use';
import { storageOpenError } from '../controllers/storage-notices';
import type { ExperimentRecord, StepRecord } from '../store/records';
import type { ToolRegistry } from '../tools/registry';
import { downloadText } from './download';
import { experimentsPanelStyles } from './experiments-panel-styles';
import { renderComparison, renderItems, renderRunProgress } from './experiment-results-view';
import { renderRuns } from './experiment-runs-view';
import { renderTrajectory, trajectoryFromSteps } from './trajectory';

export class AgentflowExperimentsPanel extends LitElement implements EngineUser {
  static override properties = {
    engines: { attribute: false },
    registry: { attribute: false },
    dbName: { type: String, attribute: 'db-name' },
    openTrajectory: { state: true },
    deleting: { state: true },
    renaming: { state: true },
    renameError: { state: true },
  };
  declare engines: AgentEngines | undefined;
  declare registry: ToolRegistry | undefined;
  declare dbName: string | undefined;
  declare openTrajectory: { conversationId: string; steps: StepRecord[] } | null;
  /** The run whose Delete button asks first (see deleteQuestion). */
  declare deleting: string | null;
  /** The run whose name is being edited, and why the last name was refused. */
  declare renaming: string | null;
  declare renameError: string | null;
  private readonly runs = new ExperimentRuns(this, () => (this.openTrajectory = null));
  private readonly bench = new BenchmarkChoice(this, (error) => this.runs.setError(error));

  constructor() {
    super();
    this.openTrajectory = null;
    this.deleting = null;
    this.renaming = null;
    this.renameError = null;
  }

  static override styles = experimentsPanelStyles;

  /** The tab's error line (storage, a run that failed, an import refused). */
  get error(): string | null {
    return this.runs.error;
  }

  override connectedCallback(): void {
    super.connectedCallback();
    void this.runs
      .start()
      .then(() => this.bench.refresh())
      .catch((e) => this.runs.setError(storageOpenError(e)));
  }

  /**
   * The run in progress on the page's engines, for the app to stop before it replaces them. Stopping is the
   * Stop button: the items finished so far stay stored and the run is marked interrupted.
   */
  engineUse(): EngineUse | null {
    return this.runs.engineUse();
  }

  refresh(): Promise<void> {
    return this.runs.refresh();
  }

  /** Imports a benchmark from text (the file input calls this with the file's contents). */
  importText(text: string, fileName: string): ImportedBenchmark {
    return this.bench.importText(text, fileName);
  }

  private async onFile(e: Event): Promise<void> {
    const f = (e.target as HTMLInputElement).files?.[0];
    if (!f) return;
    this.importText(await f.text(), f.name);
  }

  /**
   * Imports a run from files: `cli eval`'s experiment.json, its results.jsonl (with summary.json beside it when
   * given), or a run this tab exported. The run is stored under a new id and opened.
   */
  importRunFiles(files: Array<{ name: string; text: string }>): Promise<ExperimentRecord | null> {
    return this.runs.importRunFiles(files);
  }

  private async onRunFiles(e: Event): Promise<void> {
    const list = [...((e.target as HTMLInputElement).files ?? [])];
    if (list.length) await this.importRunFiles(await Promise.all(list.map(async (f) => ({ name: f.name, text: await f.text() }))));
  }

  /** Runs the subset and turn budget the form gives, of the chosen benchmark. */
  private run(): Promise<void> | undefined {
    const b = this.bench.benchmark;
    if (!b) return;
    const root = this.renderRoot;
    const maxTurns = Number((root.querySelector('#turns') as HTMLInputElement).value);
    return this.runs.run(b, this.bench.chosen, () => parseSubset((root.querySelector('#subset') as HTMLInputElement).value, b.items.length), maxTurns);
  }

  private async showTrajectory(conversationId: string): Promise<void> {
    this.openTrajectory = { conversationId, steps: await this.runs.steps(conversationId) };
    await this.updateComplete;
    (this.renderRoot.querySelector('#trajectory-h') as HTMLElement | null)?.focus();
  }

  private async startRename(id: string): Promise<void> {
    this.renaming = id;
    this.renameError = null;
    await this.updateComplete;
    const input = this.renderRoot.querySelector<HTMLInputElement>('[data-testid="rename-input"]');
    input?.focus();
    input?.select();
  }

  /** Saves the typed name (Enter or Save); a refused name keeps the field open with the reason. */
  private async saveRename(id: string): Promise<void> {
    const input = this.renderRoot.querySelector<HTMLInputElement>('[data-testid="rename-input"]');
    if (!input) return;
    try {
      await this.runs.rename(id, input.value);
    } catch (e) {
      this.renameError = (e as Error).message;
      input.focus();
      return;
    }
    await this.endRename(id);
  }

  /** Closes the name field and gives the focus back to the run's Rename button. */
  private async endRename(id: string): Promise<void> {
    this.renaming = null;
    this.renameError = null;
    await this.runs.refresh();
    await this.updateComplete;
    this.renderRoot.querySelector<HTMLButtonElement>(`button[data-rename="${CSS.escape(id)}"]`)?.focus();
  }

  private renderImport() {
    const { benchmark: b, stored, chosen } = this.bench;
    const runs = this.runs;
    return html`<section aria-labelledby="import-h">
      <h3 id="import-h">Benchmark</h3>
      <div class="row">
        <label>Benchmark file (AgentFlow data.json or JSONL)
          <input type="file" accept=".json,.jsonl,.ndjson,application/json" data-testid="benchmark-file" @change=${this.onFile} />
        </label>
        ${stored.length
          ? html`<label class="stored">Imported benchmarks
              <select data-testid="stored-benchmarks" ?disabled=${runs.busy} @change=${(e: Event) => this.bench.choose((e.target as HTMLSelectElement).value)}>
                ${chosen && !stored.some((r) => r.id === chosen) ? html`<option value="" selected>${b?.name ?? ''} (being kept…)</option>` : nothing}
                ${stored.map((r) => html`<option value=${r.id} .selected=${r.id === chosen}>${benchmarkLabel(r)}</option>`)}
              </select></label>`
          : nothing}
      </div>
      ${b
        ? html`<p role="status" data-testid="import-summary">Imported ${b.items.length} item${b.items.length === 1 ? '' : 's'} from “${b.name}” (reward: ${b.kind})${b.problems.length ? `; ${b.problems.length} skipped` : ''}.</p>
            ${b.problems.length
              ? html`<ul class="problems" data-testid="import-problems" aria-label="Problems in the file">${b.problems.map((p) => html`<li>${p.message}</li>`)}</ul>`
              : nothing}
            <div class="row">
              <label>Items (e.g. 1-20, 25; empty = all)<input id="subset" type="text" value=${b.items.length > 20 ? '1-20' : ''} /></label>
              <label>Turn budget<input id="turns" type="number" min="1" max="20" value="3" /></label>
              ${runs.busy
                ? html`<button type="button" @click=${() => runs.stop()}>Stop</button>`
                : html`<button type="button" ?disabled=${!b.items.length} @click=${() => this.run()}>Run</button>`}
            </div>
            ${runs.progress ? renderRunProgress(runs.progress) : nothing}`
        : nothing}
      ${runs.error ? html`<p class="problems" role="alert">${runs.error}</p>` : nothing}
    </section>`;
  }

  override render() {
    const c = this.runs;
    const sel = c.runs.find((r) => r.id === c.selected);
    const cmp = c.runs.find((r) => r.id === c.compareId);
    const show = (id: string) => void this.showTrajectory(id);
    return html`
      ${this.renderImport()}
      ${renderRuns({
        host: this,
        runs: c,
        renaming: this.renaming,
        renameError: this.renameError,
        deleting: this.deleting,
        setDeleting: (id) => (this.deleting = id),
        startRename: (id) => void this.startRename(id),
        saveRename: (id) => void this.saveRename(id),
        endRename: (id) => void this.endRename(id),
        exportRun: (id) => void c.exportRun(id).then((text) => downloadText(text, `agentflow-experiment-${id}.json`)),
        onRunFiles: (e) => void this.onRunFiles(e),
      })}
      ${sel
        ? html`<section aria-label="Results">
            ${cmp ? renderComparison(sel, c.items, cmp, c.compareItems, show) : html`<div data-testid="results">${renderItems(sel.name, c.items, !!sel.config.scripted, show)}</div>`}
          </section>`
        : nothing}
      ${this.openTrajectory
        ? html`<section aria-labelledby="trajectory-h">
            <h3 id="trajectory-h" tabindex="-1">Trajectory</h3>
            ${renderTrajectory(trajectoryFromSteps(this.openTrajectory.steps))}
            <button type="button" @click=${() => (this.openTrajectory = null)}>Close trajectory</button>
          </section>`
        : nothing}
    `;
  }
}

if (!customElements.get('agentflow-experiments-panel')) customElements.define('agentflow-experiments-panel', AgentflowExperimentsPanel);

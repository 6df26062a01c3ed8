// Experiments: import a benchmark file, choose a subset and turn budget, run it with a progress bar that
// says which item, turn and module is running, read per-item results (question, expected and given answer
// side by side, numbered as the subset box numbers them, each linked to its trajectory), accuracy and
// tool-use charts, compare two runs side by side, export a run. Runs are kept in IndexedDB, named by the
// model, adapter, benchmark, turn budget and date they ran with (unique, and renamable); imported benchmarks
// are kept too and offered in a list.
import { LitElement, css, html, nothing } from 'lit';
import { importBenchmark, type ImportedBenchmark } from '../agent/benchmark-import';
import { describeScore, type ScoreRule } from '../agent/rewards';
import { benchmarkFromRecord, benchmarkId, benchmarkLabel, listBenchmarks, saveBenchmark } from '../store/benchmarks';
import type { AgentEngines } from '../agent/loop';
import { toolsFromRegistry } from '../agent/registry-tools';
import { getSteps } from '../store/conversations';
import type { BenchmarkRecord, ExperimentItemRecord, ExperimentRecord, StepRecord } from '../store/records';
import type { ToolRegistry } from '../tools/registry';
import { barChart } from './charts';
import { deleteQuestion, deleteQuestionStyles, focusDeleteQuestion } from './delete-question';
import { compareRuns, describeComparison, distinctLabels } from '../controllers/experiments/experiment-compare';
import { downloadText } from './download';
import { runExperiment, type ExperimentProgress } from '../controllers/experiments/experiment-runner';
import { moduleLabel } from './chat-view';
import { openAgentDb, storageOpenError } from '../store/db';
import type { EngineUse, EngineUser } from '../controllers/engines/engine-use';
import { InFlight } from '../controllers/in-flight';
import type { PlannerClient } from '../planner/planner-client';
import { parseSubset } from '../controllers/experiments/experiment-subset';
import { deleteExperiment, exportExperiment, importExperiment, getExperimentItems, listExperiments, markStaleExperiments, renameExperiment, summarize } from '../controllers/experiments/experiment-store';
import { renderTrajectory, trajectoryFromSteps } from './trajectory';

export class AgentflowExperimentsPanel extends LitElement implements EngineUser {
  static override properties = {
    engines: { attribute: false },
    registry: { attribute: false },
    dbName: { type: String, attribute: 'db-name' },
    benchmark: { state: true },
    runs: { state: true },
    selected: { state: true },
    items: { state: true },
    compareId: { state: true },
    compareItems: { state: true },
    progress: { state: true },
    error: { state: true },
    openTrajectory: { state: true },
    deleting: { state: true },
    storedBenchmarks: { state: true },
    benchmarkChoice: { state: true },
    renaming: { state: true },
    renameError: { state: true },
  };
  declare engines: AgentEngines | undefined;
  declare registry: ToolRegistry | undefined;
  declare dbName: string | undefined;
  declare benchmark: ImportedBenchmark | null;
  declare runs: ExperimentRecord[];
  declare selected: string | null;
  declare items: ExperimentItemRecord[];
  declare compareId: string | null;
  declare compareItems: ExperimentItemRecord[];
  declare progress: { done: number; total: number; at: ExperimentProgress | null } | null;
  declare error: string | null;
  declare openTrajectory: { conversationId: string; steps: StepRecord[] } | null;
  /** The run whose Delete button asks first (see deleteQuestion). */
  declare deleting: string | null;
  /** Imported benchmarks kept in IndexedDB, newest first, and the one chosen (its id). */
  declare storedBenchmarks: BenchmarkRecord[];
  declare benchmarkChoice: string | null;
  /** The run whose name is being edited, and why the last name was refused. */
  declare renaming: string | null;
  declare renameError: string | null;
  private controller: AbortController | null = null;
  /** The run in progress, so a stop can wait for its end. */
  private readonly running = new InFlight();

  constructor() {
    super();
    this.benchmark = null;
    this.runs = [];
    this.selected = null;
    this.items = [];
    this.compareId = null;
    this.compareItems = [];
    this.progress = null;
    this.error = null;
    this.openTrajectory = null;
    this.deleting = null;
    this.storedBenchmarks = [];
    this.benchmarkChoice = null;
    this.renaming = null;
    this.renameError = null;
  }

  static override styles = [
    deleteQuestionStyles,
    css`
    :host { display: block; }
    section { margin-bottom: 1.25rem; }
    h3 { font-size: 1.05rem; margin: 0.5rem 0; }
    .row { display: flex; gap: 0.75rem; flex-wrap: wrap; align-items: end; }
    label { display: grid; gap: 0.2rem; }
    input, select, button { font: inherit; }
    button { padding: 0.25rem 0.6rem; cursor: pointer; }
    button:focus-visible, input:focus-visible, select:focus-visible { outline: 2px solid var(--agentflow-accent, #2563eb); outline-offset: 2px; }
    .problems { color: var(--agentflow-error-color, #b00020); }
    table { border-collapse: collapse; width: 100%; font-size: 0.9rem; }
    td, th { padding: 0.2rem 0.4rem; text-align: left; border-bottom: 1px solid color-mix(in srgb, currentColor 15%, transparent); vertical-align: top; }
    /* break-word, not anywhere: 'anywhere' lets a column shrink to one letter wide ("loade / d"); a long
       word still breaks, and a table too wide for the panel scrolls in its box. */
    td.ans { max-width: 18rem; overflow-wrap: break-word; }
    /* At 390 px the Runs table squeezed each name to a word per line: the name keeps a readable width and the
       table scrolls in its box instead. */
    table.runs td.run-name { min-width: 15rem; }
    table.runs td.actions { min-width: 13rem; }
    .ab { display: inline-block; min-width: 1.3em; text-align: center; font-weight: 600; border-radius: 3px; margin-right: 0.3rem;
      background: color-mix(in srgb, var(--agentflow-accent, #2563eb) 15%, transparent); }
    .rename input { width: min(24rem, 100%); }
    .stored select { max-width: 100%; }
    .charts { display: flex; gap: 1rem; flex-wrap: wrap; }
    .charts figure { margin: 0; width: min(22rem, 100%); }
    figcaption { font-size: 0.8rem; text-align: center; }
    .compare-summaries { display: grid; grid-template-columns: repeat(auto-fit, minmax(min(22rem, 100%), 1fr)); gap: 1rem; }
    .table-scroll { overflow-x: auto; }
    tr.changed { background: color-mix(in srgb, var(--agentflow-accent, #2563eb) 8%, transparent); }
    progress { width: min(32rem, 100%); display: block; }
    .yes { color: #15803d; }
    .scripted { color: #92400e; font-size: 0.85em; }
    .no { color: #b91c1c; }
    .trajectory dl { display: grid; grid-template-columns: max-content 1fr; gap: 0.1rem 0.6rem; }
    .trajectory pre { white-space: pre-wrap; margin: 0; }
  `,
  ];

  override connectedCallback(): void {
    super.connectedCallback();
    void markStaleExperiments(new Set(), this.dbName)
      .then(() => this.refresh())
      .then(() => this.refreshBenchmarks())
      .catch((e) => (this.error = storageOpenError(e)));
  }

  /** Reads the kept benchmarks; with none chosen yet, the newest is (a reload comes back to it). */
  async refreshBenchmarks(): Promise<void> {
    this.storedBenchmarks = await listBenchmarks(this.dbName);
    if (!this.benchmark && this.storedBenchmarks.length) this.chooseBenchmark(this.storedBenchmarks[0].id);
  }

  private chooseBenchmark(id: string): void {
    const rec = this.storedBenchmarks.find((r) => r.id === id);
    if (!rec) return;
    this.benchmarkChoice = id;
    this.benchmark = benchmarkFromRecord(rec);
  }

  /**
   * The run in progress on the page's engines, for the app to stop before it replaces them. Stopping is the
   * Stop button: the items finished so far stay stored and the run is marked interrupted.
   */
  engineUse(): EngineUse | null {
    const c = this.controller;
    const running = this.running.current;
    if (!c || !running) return null;
    const p = this.progress;
    return {
      what: `an experiment run${p ? ` (item ${Math.min(p.done + 1, p.total)} of ${p.total})` : ''}`,
      kept: 'its finished items are kept and it is marked interrupted',
      stop: async () => {
        c.abort();
        await running;
      },
    };
  }

  async refresh(): Promise<void> {
    this.runs = await listExperiments(this.dbName);
    if (this.selected) this.items = await getExperimentItems(this.selected, this.dbName);
    if (this.compareId) this.compareItems = await getExperimentItems(this.compareId, this.dbName);
  }

  /** Imports a benchmark from text (the file input calls this with the file's contents). */
  importText(text: string, fileName: string): ImportedBenchmark {
    const b = importBenchmark(text, fileName);
    this.benchmark = b;
    this.benchmarkChoice = b.items.length ? benchmarkId(b) : null;
    if (b.items.length) {
      void saveBenchmark(b, fileName, this.dbName)
        .then(() => this.refreshBenchmarks())
        .catch((e) => (this.error = `The benchmark is imported but could not be kept for later: ${(e as Error).message}`));
    }
    return b;
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
  async importRunFiles(files: Array<{ name: string; text: string }>): Promise<ExperimentRecord | null> {
    const summary = files.find((f) => /(^|[\/])summary\.json$/i.test(f.name));
    const main = files.find((f) => f !== summary);
    this.error = '';
    if (!main) {
      this.error = 'Import a run: choose results.jsonl (with its summary.json) or experiment.json.';
      return null;
    }
    try {
      const rec = await importExperiment(main.text, main.name, summary?.text, this.dbName);
      await this.refresh();
      await this.select(rec.id);
      return rec;
    } catch (e) {
      this.error = `Could not import the run from ${main.name}: ${(e as Error).message}`;
      return null;
    }
  }

  private async onRunFiles(e: Event): Promise<void> {
    const list = [...((e.target as HTMLInputElement).files ?? [])];
    if (list.length) await this.importRunFiles(await Promise.all(list.map(async (f) => ({ name: f.name, text: await f.text() }))));
  }

  private run(): Promise<void> {
    return this.running.current ?? this.running.track(this.runSubset());
  }

  private async runSubset(): Promise<void> {
    const b = this.benchmark;
    if (!b) return;
    this.error = null;
    if (!this.engines) {
      this.error = 'No engines: load models (or choose the scripted demo) in the Models & GPU tab first.';
      return;
    }
    if (!this.registry) {
      this.error = 'No tools are set up.';
      return;
    }
    let indices: number[];
    const root = this.renderRoot;
    const maxTurns = Number((root.querySelector('#turns') as HTMLInputElement).value);
    try {
      indices = parseSubset((root.querySelector('#subset') as HTMLInputElement).value, b.items.length);
    } catch (e) {
      this.error = (e as Error).message;
      return;
    }
    this.controller = new AbortController();
    this.progress = { done: 0, total: indices.length, at: null };
    let listed = false;
    try {
      const { experiment } = await runExperiment({
        benchmark: b,
        ...(this.benchmarkChoice ? { benchmarkId: this.benchmarkChoice } : {}),
        indices,
        maxTurns,
        engines: this.engines,
        adapter: await activeAdapter(this.engines, this.dbName),
        tools: toolsFromRegistry(this.registry),
        signal: this.controller.signal,
        dbName: this.dbName,
        onItem: (_item, done, total) => {
          this.progress = { done, total, at: this.progress?.at ?? null };
          void this.refresh();
        },
        onProgress: (at) => {
          this.progress = { done: at.item - 1, total: at.total, at };
          // The run's record is stored before its first item starts: list it now, as running.
          if (!listed) {
            listed = true;
            void this.refresh();
          }
        },
      });
      this.selected = experiment.id;
    } catch (e) {
      this.error = (e as Error).message;
    } finally {
      this.controller = null;
      this.progress = null;
      await this.refresh();
    }
  }

  private async select(id: string | null): Promise<void> {
    this.selected = id;
    this.openTrajectory = null;
    // A run compared with itself shows nothing: opening the compared run's results ends the comparison.
    if (id !== null && id === this.compareId) await this.compareWith(null);
    this.items = id ? await getExperimentItems(id, this.dbName) : [];
  }

  private async compareWith(id: string | null): Promise<void> {
    this.compareId = id;
    this.compareItems = id ? await getExperimentItems(id, this.dbName) : [];
  }

  private async showTrajectory(conversationId: string): Promise<void> {
    this.openTrajectory = { conversationId, steps: await getSteps(conversationId, this.dbName) };
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
      await renameExperiment(id, input.value, this.dbName);
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
    await this.refresh();
    await this.updateComplete;
    this.renderRoot.querySelector<HTMLButtonElement>(`button[data-rename="${CSS.escape(id)}"]`)?.focus();
  }

  private async deleteRun(id: string): Promise<void> {
    this.deleting = null;
    await deleteExperiment(id, this.dbName);
    if (this.selected === id) await this.select(null);
    if (this.compareId === id) await this.compareWith(null);
    await this.refresh();
  }

  private renderImport() {
    const b = this.benchmark;
    return html`<section aria-labelledby="import-h">
      <h3 id="import-h">Benchmark</h3>
      <div class="row">
        <label>Benchmark file (AgentFlow data.json or JSONL)
          <input type="file" accept=".json,.jsonl,.ndjson,application/json" data-testid="benchmark-file" @change=${this.onFile} />
        </label>
        ${this.storedBenchmarks.length
          ? html`<label class="stored">Imported benchmarks
              <select data-testid="stored-benchmarks" ?disabled=${!!this.controller} @change=${(e: Event) => this.chooseBenchmark((e.target as HTMLSelectElement).value)}>
                ${this.benchmarkChoice && !this.storedBenchmarks.some((r) => r.id === this.benchmarkChoice) ? html`<option value="" selected>${b?.name ?? ''} (being kept…)</option>` : nothing}
                ${this.storedBenchmarks.map((r) => html`<option value=${r.id} .selected=${r.id === this.benchmarkChoice}>${benchmarkLabel(r)}</option>`)}
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
              ${this.controller
                ? html`<button type="button" @click=${() => this.controller?.abort()}>Stop</button>`
                : html`<button type="button" ?disabled=${!b.items.length} @click=${() => this.run()}>Run</button>`}
            </div>
            ${this.progress ? this.renderProgress(this.progress) : nothing}`
        : nothing}
      ${this.error ? html`<p class="problems" role="alert">${this.error}</p>` : nothing}
    </section>`;
  }

  private renderProgress(p: NonNullable<AgentflowExperimentsPanel['progress']>) {
    const at = p.at;
    const where = at
      ? `Item ${at.item} of ${at.total} (#${at.number}${at.pid !== String(at.number) ? `, ${at.pid}` : ''}), ${at.turn ? `turn ${at.turn}: ` : ''}${moduleLabel(at.module)}…`
      : `Starting: 0 of ${p.total} items done`;
    return html`<div role="status" data-testid="experiment-progress">
      <span class="where">${where}</span>
      <progress max=${p.total} .value=${p.done} aria-label="Items done" aria-valuetext=${`${p.done} of ${p.total} items done`}></progress>
    </div>`;
  }

  private renderRuns() {
    const importRun = html`<label class="import-run">Import a run (cli eval's experiment.json, or results.jsonl with summary.json)
      <input type="file" multiple accept=".json,.jsonl,application/json" data-testid="run-file" @change=${this.onRunFiles} /></label>`;
    if (!this.runs.length) return html`<p>No runs yet.</p>${importRun}`;
    const shown = this.runs.slice(0, 8);
    const labels = distinctLabels(shown.map((r) => r.name));
    const acc = shown.map((r, i) => ({ label: labels[i], value: r.summary?.accuracy ?? 0 }));
    return html`<section aria-labelledby="runs-h">
      <h3 id="runs-h">Runs</h3>
      <div class="table-scroll" role="region" aria-label="Runs" tabindex="0">
      <table class="runs" data-testid="runs">
        <thead><tr><th scope="col">Run</th><th scope="col">Status</th><th scope="col">Turns</th><th scope="col">Accuracy</th><th scope="col">Tool calls</th><th scope="col">Actions</th></tr></thead>
        <tbody>
          ${this.runs.map(
            (r) => html`<tr data-run=${r.id}>
              <td class="run-name">${this.renaming === r.id ? this.renderRename(r) : html`${runMark(r.id === this.selected ? 'A' : r.id === this.compareId ? 'B' : null)}<span class="name">${r.name}</span>${r.config.scripted ? html` <span class="scripted" data-testid="scripted-run">(scripted demo)</span>` : nothing}`}</td><td>${r.status}</td>
              <td>${typeof r.config.maxTurns === 'number' ? r.config.maxTurns : '—'}</td>
              <td>${r.summary ? `${r.summary.correct}/${r.summary.items} (${Math.round(100 * (r.summary.accuracy ?? 0))}%)` : '—'}</td>
              <td>${r.summary?.toolCalls ?? '—'}</td>
              <td class="actions">
                <button type="button" aria-pressed=${this.selected === r.id ? 'true' : 'false'} @click=${() => this.select(r.id)}>Results</button>
                <button type="button" aria-pressed=${this.compareId === r.id ? 'true' : 'false'} ?disabled=${this.selected === r.id} @click=${() => this.compareWith(this.compareId === r.id ? null : r.id)}>Compare</button>
                <button type="button" @click=${async () => downloadText(await exportExperiment(r.id, this.dbName), `agentflow-experiment-${r.id}.json`)}>Export</button>
                <button type="button" data-rename=${r.id} aria-label=${`Rename run ${r.name}`} ?disabled=${this.renaming === r.id} @click=${() => this.startRename(r.id)}>Rename</button>
                ${this.deleting === r.id
                  ? deleteQuestion(`run ${r.name}`, 'this run', () => void this.deleteRun(r.id), () => (this.deleting = null))
                  : html`<button type="button" aria-label=${`Delete run ${r.name}`} ?disabled=${r.status === 'running' && this.running.current !== null} @click=${() => {
                      this.deleting = r.id;
                      void focusDeleteQuestion(this);
                    }}>Delete</button>`}
              </td>
            </tr>`,
          )}
        </tbody>
      </table>
      </div>
      ${importRun}
      <div class="charts">${barChart('Accuracy by run', acc, 1, (v) => `${Math.round(v * 100)}%`)}</div>
    </section>`;
  }

  /** The name field of a run being renamed: Enter or Save keeps the name, Escape or Cancel leaves it. */
  private renderRename(r: ExperimentRecord) {
    return html`<div class="rename">
      <input type="text" data-testid="rename-input" aria-label=${`New name for run ${r.name}`} .value=${r.name}
        aria-invalid=${this.renameError ? 'true' : 'false'} aria-describedby=${this.renameError ? 'rename-error' : nothing}
        @keydown=${(e: KeyboardEvent) => {
          if (e.key === 'Enter') void this.saveRename(r.id);
          else if (e.key === 'Escape') void this.endRename(r.id);
        }} />
      <button type="button" @click=${() => this.saveRename(r.id)}>Save</button>
      <button type="button" @click=${() => this.endRename(r.id)}>Cancel</button>
      ${this.renameError ? html`<p class="problems" id="rename-error" role="alert">${this.renameError}</p>` : nothing}
    </div>`;
  }

  /** A run's heading, scripted label, accuracy line and tool-call chart. */
  private renderSummary(title: string, items: ExperimentItemRecord[], scripted: boolean) {
    const s = summarize(items);
    const tools = Object.entries(s)
      .filter(([k]) => k.startsWith('tool:'))
      .map(([k, v]) => ({ label: k.slice(5), value: v as number }));
    return html`<div data-testid="run-summary">
      <h4>${title}</h4>
      ${scripted ? html`<p class="scripted" data-testid="scripted-label">Scripted demo: no model wrote these answers.</p>` : nothing}
      <p>Accuracy ${s.correct}/${s.items} (${Math.round(100 * s.accuracy)}%), ${s.toolCalls} tool calls, ${s.errors} errors.</p>
      <div class="charts">${barChart('Tool calls', tools)}</div>
    </div>`;
  }

  /**
   * Two runs: their summaries side by side, then one table matched item by item (A is the run whose results
   * were open, B the one compared with it), the items whose outcome differs marked.
   */
  private renderComparison(a: ExperimentRecord, b: ExperimentRecord) {
    const { rows, counts, repeated } = compareRuns(this.items, this.compareItems);
    const verdict = (it: ExperimentItemRecord | null) => (it ? correctCell(it) : html`<span title="not in this run">—</span>`);
    const open = (run: string, it: ExperimentItemRecord | null, label: string) =>
      it?.conversationId ? html`<button type="button" aria-label=${`Open run ${run}'s trajectory of item ${label}`} @click=${() => this.showTrajectory(it.conversationId!)}>${run}</button>` : nothing;
    return html`<div data-testid="comparison">
      <div class="compare-summaries">${this.renderSummary(`A: ${a.name}`, this.items, !!a.config.scripted)} ${this.renderSummary(`B: ${b.name}`, this.compareItems, !!b.config.scripted)}</div>
      <p data-testid="compare-counts">${describeComparison(counts, repeated)}</p>
      <div class="table-scroll" role="region" aria-label="Runs A and B item by item" tabindex="0">
        <table data-testid="compare-items">
          <thead><tr><th scope="col">#</th><th scope="col">Question</th><th scope="col">Expected</th><th scope="col">A: given</th><th scope="col">A</th><th scope="col">B: given</th><th scope="col">B</th><th scope="col">Trajectories</th></tr></thead>
          <tbody>
            ${rows.map(
              (r) => html`<tr class=${r.change === 'right-in-a' || r.change === 'right-in-b' ? 'changed' : ''} data-change=${r.change}>
                <td>${r.label}</td>
                <td class="ans">${r.query}</td>
                <td class="ans">${expected(r.reference)}</td>
                <td class="ans">${r.a ? (r.a.answer ?? '—') : '—'}</td>
                <td>${verdict(r.a)}</td>
                <td class="ans">${r.b ? (r.b.answer ?? '—') : '—'}</td>
                <td>${verdict(r.b)}</td>
                <td>${open('A', r.a, r.label)} ${open('B', r.b, r.label)}</td>
              </tr>`,
            )}
          </tbody>
        </table>
      </div>
    </div>`;
  }

  private renderItems(title: string, items: ExperimentItemRecord[], scripted = false) {
    return html`<div>
      ${this.renderSummary(title, items, scripted)}
      <div class="table-scroll" role="region" aria-label=${`Items of ${title}`} tabindex="0">
      <table data-testid="items">
        <thead><tr><th scope="col">#</th><th scope="col">Question</th><th scope="col">Expected</th><th scope="col">Given</th><th scope="col">Correct</th><th scope="col">Scored by</th><th scope="col">Tools</th><th scope="col">Errors</th><th scope="col">Trajectory</th></tr></thead>
        <tbody>
          ${items.map(
            (it) => html`<tr>
              <td title=${`id ${it.pid}`}>${it.number ?? it.pid}</td>
              <td class="ans">${it.query}</td>
              <td class="ans">${expected(it.reference)}</td>
              <td class="ans">${it.answer ?? '—'}</td>
              <td>${correctCell(it)}</td>
              <td>${it.scoring ? describeScore({ rule: it.scoring.rule as ScoreRule, compared: it.scoring.compared }) : '—'}</td>
              <td>${Object.entries(it.toolCalls ?? {}).map(([k, v]) => `${k}×${v}`).join(', ') || '—'}</td>
              <td>${it.errors?.length ?? 0}</td>
              <td>${it.conversationId ? html`<button type="button" @click=${() => this.showTrajectory(it.conversationId!)}>Open</button>` : '—'}</td>
            </tr>`,
          )}
        </tbody>
      </table>
      </div>
    </div>`;
  }

  override render() {
    const sel = this.runs.find((r) => r.id === this.selected);
    const cmp = this.runs.find((r) => r.id === this.compareId);
    return html`
      ${this.renderImport()}
      ${this.renderRuns()}
      ${sel
        ? html`<section aria-label="Results">
            ${cmp ? this.renderComparison(sel, cmp) : html`<div data-testid="results">${this.renderItems(sel.name, this.items, !!sel.config.scripted)}</div>`}
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
/** Which run is A (its results open) and which is B (compared with it), in the Runs table. */
function runMark(mark: 'A' | 'B' | null) {
  if (!mark) return nothing;
  return html`<span class="ab" data-testid="run-mark" title=${mark === 'A' ? 'Run A: its results are open' : 'Run B: compared with run A'}>${mark}</span> `;
}

/** An item's Correct cell: yes, no, or — when it was not scored. */
function correctCell(it: ExperimentItemRecord) {
  return it.correct === undefined ? '—' : it.correct ? html`<span class="yes">yes</span>` : html`<span class="no">no</span>`;
}

/** A reference stored as JSON (a number, a list) shows as its value; a plain string as itself. */
function expected(reference: string): string {
  try {
    const v: unknown = JSON.parse(reference);
    return typeof v === 'string' ? v : v === null ? '—' : reference;
  } catch {
    return reference;
  }
}

/** The planner's active LoRA adapter and its stored name, when the planner is this page's runtime. */
async function activeAdapter(engines: AgentEngines, dbName?: string): Promise<{ id: string; name: string } | null> {
  const client = (engines.planner as { client?: PlannerClient }).client;
  if (!client) return null;
  try {
    const id = (await client.info()).activeAdapter;
    if (!id) return null;
    const rec = await (await openAgentDb(dbName)).get('adapters', id);
    return { id, name: rec?.name ?? id };
  } catch {
    // The planner went away: the run fails on its first call and says so.
    return null;
  }
}

if (!customElements.get('agentflow-experiments-panel')) customElements.define('agentflow-experiments-panel', AgentflowExperimentsPanel);

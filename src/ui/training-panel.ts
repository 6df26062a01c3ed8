// Training: Flow-GRPO settings, start/pause/resume, live charts of reward, loss, KL, clip fraction and
// tokens/s from the trainer's step statistics, and the stored LoRA adapters (activate, export, import,
// delete, start a run from one). The learning rate defaults per mode (DEFAULT_LEARNING_RATE). "Toy mode"
// trains the toy task's tiny planner (createToyDriver, in a worker); with a planner model loaded,
// "Imported benchmark (agent rollouts)" trains the real planner (createAgentDriver); both are runs of the
// library's TrainingRun. Any other TrainingDriver can be plugged in through `createDriver`.
import { LitElement, css, html, nothing } from 'lit';
import { importBenchmark, type ImportedBenchmark } from '../agent/benchmark-import';
import { benchmarkFromRecord, benchmarkId, benchmarkLabel, listBenchmarks, saveBenchmark } from '../store/benchmarks';
import type { BenchmarkRecord } from '../store/records';
import type { AgentEngines } from '../agent/loop';
import { toolsFromRegistry } from '../agent/registry-tools';
import type { ToolRegistry } from '../tools/registry';
import {
  createAgentDriver,
  DEFAULT_AGENT_BUDGET,
  MAX_DEFAULT_ROLLOUT_CONCURRENCY,
  MAX_ROLLOUT_CONCURRENCY,
  resumableAgentRuns,
  resumeAgentDriver,
  rolloutConcurrency,
  type AgentBudget,
} from './agent-training-driver';
import type { PolicyTrainer } from '../trainer/training-host';
import type { RunResult, StoredRun } from '../trainer/run/run-store';
import type { RolloutProgress } from '../trainer/run/collector';
import { listRuns } from '../trainer/run/run-store-idb';
import { isScripted } from '../agent/engines-used';
import { keepAdapter } from '../store/training-storage';
import { formatSeconds } from './progress-tracker';
import { deleteQuestion, deleteQuestionStyles, focusDeleteQuestion } from './delete-question';
import { LORA_MODULES, type LoraModule } from '../engine/io/peft';
import type { AdapterRecord } from '../store/records';
import { getSetting, putSetting } from '../store/settings';
import { adapterFiles, adapterShape, deleteAdapter, importAdapterFiles, importedAdapterName, listAdapters } from './adapter-store';
import { lineChart } from './charts';
import { DEFAULT_GRPO_CONFIG } from '../trainer/config';
import { TOY_TRAINING } from '../trainer/toy-task';
import { downloadBlob, downloadText } from './download';
import type { EngineUse, EngineUser } from './engine-use';
import { InFlight } from './in-flight';
import { TOY_BASE_MODEL, createToyDriver, resumeToyDriver, WorkerToyTrainingDriver, type TrainingDriver, type TrainingSettings, type TrainingStepPoint } from './training-driver';
import { noSignalText, trainingStatusText } from './training-status';

export const ACTIVE_ADAPTER_KEY = 'activeAdapter';

export type TrainingMode = 'toy' | 'agent';

/**
 * The learning rate the form shows for each mode until the user types one for that mode.
 * - toy: TOY_TRAINING.learningRate (0.01), the rate the toy's stability runs were measured at (README, "Toy
 *   training"); its tiny planner and zero-initialised adapter need large steps to learn within a short demo.
 * - agent: the trainer's default (DEFAULT_GRPO_CONFIG.learningRate, reasons in trainer/config.ts). The toy
 *   rate would rewrite a real planner's adapter within a few steps and wreck its language.
 */
export const DEFAULT_LEARNING_RATE: Readonly<Record<TrainingMode, number>> = Object.freeze({ toy: TOY_TRAINING.learningRate, agent: DEFAULT_GRPO_CONFIG.learningRate });

export class AgentflowTrainingPanel extends LitElement implements EngineUser {
  static override properties = {
    dbName: { type: String, attribute: 'db-name' },
    createDriver: { attribute: false },
    points: { state: true },
    state: { state: true },
    error: { state: true },
    adapters: { state: true },
    active: { state: true },
    label: { state: true },
    engines: { attribute: false },
    trainer: { attribute: false },
    registry: { attribute: false },
    benchmark: { state: true },
    datasetChoice: { state: true },
    storedBenchmarks: { state: true },
    benchmarkChoice: { state: true },
    agentRuns: { state: true },
    startChoice: { state: true },
    importStatus: { state: true },
    starting: { state: true },
    groupSizeShown: { state: true },
    progress: { state: true },
    runs: { state: true },
    result: { state: true },
    notes: { state: true },
    keeping: { state: true },
    deleting: { state: true },
    smoothing: { state: true },
  };
  declare dbName: string | undefined;
  /** Makes the driver for a settings choice; default: the toy driver. */
  declare createDriver: (s: TrainingSettings, dbName?: string) => Promise<TrainingDriver>;
  declare points: TrainingStepPoint[];
  declare state: TrainingDriver['state'];
  declare error: string | null;
  declare adapters: AdapterRecord[];
  declare active: string | null;
  declare label: string;
  /** The page's engines and tools (agent-rollout training); a new value re-renders the panel. */
  declare engines: AgentEngines | undefined;
  /** The optimizer next to the engines' planner (the planner worker's); none for the scripted demo and web-llm. */
  declare trainer: PolicyTrainer | undefined;
  declare registry: ToolRegistry | undefined;
  /** The benchmark imported for agent-rollout training. */
  declare benchmark: ImportedBenchmark | null;
  declare datasetChoice: string;
  /** Imported benchmarks kept in IndexedDB (newest first), and the one chosen (its id). */
  declare storedBenchmarks: BenchmarkRecord[];
  declare benchmarkChoice: string | null;
  /** Stored agent-rollout runs that can be continued (paused, or cut off by a reload). */
  declare agentRuns: StoredRun[];
  /** Id of the stored adapter to start the next run from; '' for a fresh adapter. */
  declare startChoice: string;
  declare importStatus: string;
  /** A run is being set up (a worker starting, a checkpoint loading): no second one may start meanwhile. */
  declare starting: boolean;
  /** The group size field's value, for the default of "rollouts at once" the form shows. */
  declare groupSizeShown: number;
  /** The running run's position: steps done of all, its pace, and where the current step's rollouts are. */
  declare progress: { steps: number; started: number; stepsAtStart: number; rollouts: RolloutProgress | null } | null;
  /** Every stored run (toy and agent), newest first, so their charts survive a reload. */
  declare runs: StoredRun[];
  /** The shown run's result: its best checkpoint by rolling reward, or its last. */
  declare result: RunResult | null;
  declare notes: readonly string[];
  /** The adapter whose "keep as" name field is open. */
  declare keeping: string | null;
  /** The adapter whose Delete button asks first (see deleteQuestion). */
  declare deleting: string | null;
  /** EMA weight of the training charts' drawn lines (0: the raw steps). */
  declare smoothing: number;
  private driver: TrainingDriver | null = null;
  /** Steps of the run the status line is about (the driver's, or the stored run shown), when known. */
  private totalSteps: number | null = null;
  /** Drivers of real-planner runs and the page's engines each runs on (toy runs use none of them). */
  private readonly driverEngines = new WeakMap<TrainingDriver, AgentEngines>();
  /** A real-planner run is being set up (its optimizer starting in the planner worker). */
  private startingOnEngines = false;
  /** The start, resume or run in progress (one at a time: `busy`), so a stop can wait for its end. */
  private readonly current = new InFlight();
  // Learning rates the user typed, per mode, saved when the mode changes: an edit sticks to its mode and
  // never carries over (a toy-sized rate must not reach the real planner). Not reactive state, so the
  // field is only rewritten on a mode change, never while the user types.
  private readonly lrTyped: Partial<Record<TrainingMode, string>> = {};
  private readonly lrTouched = new Set<TrainingMode>();
  private lrMode: TrainingMode | null = null;

  constructor() {
    super();
    // In a worker where the browser has them, so a step's computation never freezes the page.
    this.createDriver = (s, db) => (typeof Worker === 'function' ? WorkerToyTrainingDriver.create(s, db) : createToyDriver(s, db));
    this.points = [];
    this.state = 'idle';
    this.error = null;
    this.adapters = [];
    this.active = null;
    this.label = '';
    this.engines = undefined;
    this.registry = undefined;
    this.benchmark = null;
    this.datasetChoice = 'toy';
    this.storedBenchmarks = [];
    this.benchmarkChoice = null;
    this.agentRuns = [];
    this.startChoice = '';
    this.importStatus = '';
    this.starting = false;
    this.groupSizeShown = 8;
    this.progress = null;
    this.runs = [];
    this.result = null;
    this.notes = [];
    this.keeping = null;
    this.deleting = null;
    this.smoothing = 0;
  }

  private get busy(): boolean {
    return this.starting || this.state === 'running';
  }

  /**
   * The real-planner run using the page's engines, if one is starting or running, for the app to stop before
   * it replaces them. Stopping pauses it: the step in progress is dropped, its checkpoints stay and the run
   * is stored as paused, so Resume continues it (on the engines loaded then).
   */
  engineUse(): EngineUse | null {
    const d = this.driver;
    // Toy runs have no entry: with no engines loaded, undefined === undefined must not count them as a use.
    const on = d ? this.driverEngines.get(d) : undefined;
    const running = this.state === 'running' && on !== undefined && on === this.engines;
    if (!(this.starting && this.startingOnEngines) && !running) return null;
    return {
      what: `a training run${this.label ? ` (${this.label})` : ''}`,
      kept: 'it is paused with its checkpoints kept; resume it in Training',
      stop: () => this.stopOnEngines(),
    };
  }

  private async stopOnEngines(): Promise<void> {
    // A run still starting is paused once it has started (go() checks pauseWanted before its first step).
    this.pauseWanted = true;
    if (this.state === 'running') this.driver?.pause();
    await this.current.idle();
  }

  /** Set by stopOnEngines while a run starts; the run then stops before its first step. */
  private pauseWanted = false;

  override willUpdate(): void {
    const mode = this.mode;
    if (this.lrMode && mode !== this.lrMode && this.lrTouched.has(this.lrMode)) {
      const input = this.renderRoot.querySelector<HTMLInputElement>('#lr');
      if (input) this.lrTyped[this.lrMode] = input.value;
    }
    this.lrMode = mode;
  }

  /** The mode the form is in: the real planner only when it is chosen and can run. */
  get mode(): TrainingMode {
    return this.datasetChoice === 'agent' && this.plannerTrainer() !== null && !!this.benchmark?.items.length ? 'agent' : 'toy';
  }

  /** Stored adapters a run of `mode` can start from: toy adapters for the toy planner, the others for the real one. */
  startableAdapters(mode: TrainingMode): AdapterRecord[] {
    return this.adapters.filter((a) => (a.baseModel === TOY_BASE_MODEL) === (mode === 'toy'));
  }

  private startAdapter(mode: TrainingMode): AdapterRecord | undefined {
    return this.startChoice ? this.startableAdapters(mode).find((a) => a.id === this.startChoice) : undefined;
  }

  /** The engines and tool registry to train with, set by the page (app-shell passes its own). */
  private pageContext(): { engines?: AgentEngines; registry?: ToolRegistry } {
    return { engines: this.engines, registry: this.registry };
  }

  /** The trainer the page handed over with its engines, when there are both. */
  private plannerTrainer(): PolicyTrainer | null {
    return this.engines && this.trainer ? this.trainer : null;
  }

  /** Imports a benchmark for agent-rollout training (the file input calls this with the file's contents). */
  importBenchmarkText(text: string, fileName: string): ImportedBenchmark {
    const b = importBenchmark(text, fileName);
    this.benchmark = b;
    this.benchmarkChoice = b.items.length ? benchmarkId(b) : null;
    if (b.items.length && this.plannerTrainer()) this.datasetChoice = 'agent';
    if (b.items.length) {
      void saveBenchmark(b, fileName, this.dbName)
        .then(() => this.refreshBenchmarks())
        .catch((e) => (this.error = `The benchmark is imported but could not be kept for later: ${(e as Error).message}`));
    }
    return b;
  }

  /**
   * Reads the kept benchmarks. With none chosen yet (after a reload) it chooses the one the newest resumable
   * run trained on, else the newest import, so the dataset option is not greyed out while such a run is listed.
   */
  async refreshBenchmarks(): Promise<void> {
    try {
      this.storedBenchmarks = await listBenchmarks(this.dbName);
    } catch {
      this.storedBenchmarks = [];
      return;
    }
    if (this.benchmark || !this.storedBenchmarks.length) return;
    const dataset = this.agentRuns[0]?.spec.dataset;
    this.chooseBenchmark((this.storedBenchmarks.find((r) => r.name === dataset) ?? this.storedBenchmarks[0]).id);
  }

  private chooseBenchmark(id: string): void {
    const rec = this.storedBenchmarks.find((r) => r.id === id);
    if (!rec) return;
    this.benchmarkChoice = id;
    this.benchmark = benchmarkFromRecord(rec);
  }

  static override styles = [
    deleteQuestionStyles,
    css`
    :host { display: block; }
    fieldset { border: 1px solid color-mix(in srgb, currentColor 20%, transparent); border-radius: 6px; margin: 0 0 1rem; }
    .grid { display: grid; grid-template-columns: repeat(auto-fill, minmax(11rem, 1fr)); gap: 0.5rem 1rem; }
    label { display: grid; gap: 0.2rem; }
    .grid input, .grid select { min-width: 0; width: 100%; box-sizing: border-box; }
    /* The dataset's option names are long: on a row of their own, sized to the name, never clipped. */
    .grid label.dataset { grid-column: 1 / -1; }
    .grid label.dataset select { width: auto; max-width: 100%; justify-self: start; }
    .targets { margin-top: 0.5rem; }
    .targets label { display: inline-flex; gap: 0.25rem; margin-right: 0.75rem; }
    input, select, button { font: inherit; }
    button { padding: 0.25rem 0.6rem; cursor: pointer; }
    button:focus-visible, input:focus-visible, select:focus-visible { outline: 2px solid var(--agentflow-accent, #2563eb); outline-offset: 2px; }
    .row { display: flex; gap: 0.5rem; flex-wrap: wrap; align-items: center; margin: 0.5rem 0; }
    .charts { display: grid; grid-template-columns: repeat(auto-fill, minmax(16rem, 1fr)); gap: 0.75rem; }
    figure { margin: 0; }
    figcaption { font-size: 0.8rem; text-align: center; }
    .error { color: var(--agentflow-error-color, #b00020); }
    .warning { color: var(--agentflow-warning-color, #8a5a00); font-weight: 600; }
    table { border-collapse: collapse; }
    td, th { padding: 0.2rem 0.5rem; text-align: left; border-bottom: 1px solid color-mix(in srgb, currentColor 15%, transparent); }
    /* On a phone the adapters table scrolls in its own box rather than squeezing names onto a line per part. */
    .table-scroll { overflow-x: auto; max-width: 100%; }
    .adapters td:first-child { min-width: 10rem; }
    /* A checkpoint's name already carries its time; the date column is the one a narrow screen does without.
       Kept and imported adapters bear names of the user's choosing: their date moves under the name. */
    .adapters .created-inline { display: none; }
    @media (max-width: 30rem) {
      .adapters .created { display: none; }
      .adapters .created-inline { display: block; }
    }
  `,
  ];

  override connectedCallback(): void {
    super.connectedCallback();
    void this.refreshAdapters();
    void this.refreshAgentRuns().then(() => this.refreshBenchmarks());
  }

  async refreshAgentRuns(): Promise<void> {
    try {
      this.agentRuns = await resumableAgentRuns(this.dbName);
      this.runs = await listRuns(this.dbName);
    } catch {
      this.agentRuns = [];
      this.runs = [];
    }
  }

  /** Shows a stored run's charts and result (any run, finished or not). */
  showStored(run: StoredRun): void {
    if (this.busy) return;
    this.points = [...run.history];
    this.label = `${run.spec.label}, run ${run.id}`;
    this.result = run.result;
    this.notes = [];
    this.totalSteps = run.spec.steps;
    this.state = run.status === 'running' ? 'paused' : run.status;
  }

  /** Continues a stored toy run (paused, or cut off by a reload) in a worker where the browser has them. */
  resumeToy(runId: string): Promise<void> {
    return this.openRun(() => (typeof Worker === 'function' ? WorkerToyTrainingDriver.resume(runId, this.dbName) : resumeToyDriver(runId, this.dbName)), true);
  }

  /**
   * Sets a run's driver up and runs it, as `current`, unless one is already starting or running. A set-up
   * that fails shows its error and starts nothing. A resumed run shows its stored history; a new one starts
   * with none and clears the last run's result.
   */
  private openRun(setUp: () => Promise<TrainingDriver>, resumed: boolean): Promise<void> {
    return this.busy ? Promise.resolve() : this.current.track(this.setUpAndGo(setUp, resumed));
  }

  private async setUpAndGo(setUp: () => Promise<TrainingDriver>, resumed: boolean): Promise<void> {
    this.error = null;
    this.pauseWanted = false;
    this.starting = true;
    try {
      this.replaceDriver(await setUp());
    } catch (e) {
      this.error = (e as Error).message;
      return;
    } finally {
      this.starting = false;
      this.startingOnEngines = false;
    }
    const d = this.driver!;
    this.points = resumed ? [...d.history] : [];
    if (!resumed) this.result = null;
    this.notes = d.notes ?? [];
    this.label = `${d.label}, run ${d.runId}`;
    await this.go();
  }

  /** Sets up a real-planner run on the page's engines, which the app must stop before it replaces them. */
  private async onEngines(setUp: (deps: ReturnType<AgentflowTrainingPanel['agentDeps']>) => Promise<TrainingDriver>): Promise<TrainingDriver> {
    this.startingOnEngines = true;
    const deps = this.agentDeps();
    const d = await setUp(deps);
    this.driverEngines.set(d, deps.engines);
    return d;
  }

  private agentDeps() {
    const trainer = this.plannerTrainer();
    const { engines, registry } = this.pageContext();
    if (!trainer || !engines) throw new Error('Training the planner needs a planner model loaded in Models & GPU.');
    return { trainer, engines, tools: registry ? toolsFromRegistry(registry) : [], dbName: this.dbName };
  }

  private budget(groupSize: number): Partial<AgentBudget> {
    const n = (id: string) => Number((this.renderRoot.querySelector(`#${id}`) as HTMLInputElement).value);
    const budget: Partial<AgentBudget> = { maxTurns: n('max-turns'), plannerTokens: n('planner-tokens'), moduleTokens: n('module-tokens'), queriesPerStep: n('queries'), microBatchTokens: n('micro-tokens') };
    // An empty field leaves the driver's default, min(group size, MAX_DEFAULT_ROLLOUT_CONCURRENCY).
    const atOnce = (this.renderRoot.querySelector('#rollout-concurrency') as HTMLInputElement).value.trim();
    if (atOnce !== '') {
      // The driver's check, so a bad value is refused before anything starts, with the driver's message.
      budget.rolloutConcurrency = rolloutConcurrency({ rolloutConcurrency: Number(atOnce) }, groupSize);
    }
    return budget;
  }

  /** Dynamic sampling's budget per group with no success (0 turns it off); checked as GrpoConfig checks it. */
  private extraRollouts(): number {
    const v = Number((this.renderRoot.querySelector('#extra-rollouts') as HTMLInputElement).value);
    if (!Number.isInteger(v) || v < 0 || v > 4096) throw new Error(`Extra rollouts for a group with no success must be a whole number from 0 to 4096, got ${v}`);
    return v;
  }

  /** What "rollouts at once" means when left empty, for the group size the form shows. */
  private defaultRolloutsAtOnce(): number {
    const g = this.groupSizeShown;
    return Number.isInteger(g) && g > 0 ? Math.min(g, MAX_DEFAULT_ROLLOUT_CONCURRENCY) : MAX_DEFAULT_ROLLOUT_CONCURRENCY;
  }

  /** Continues a stored agent-rollout run from its latest checkpoint. */
  resumeStored(runId: string): Promise<void> {
    return this.openRun(() => this.onEngines((deps) => resumeAgentDriver(runId, deps)), true);
  }

  async refreshAdapters(): Promise<void> {
    try {
      this.adapters = await listAdapters(this.dbName);
      this.active = (await getSetting<string | null>(ACTIVE_ADAPTER_KEY, this.dbName)) ?? null;
    } catch (e) {
      this.error = `Could not read stored adapters: ${(e as Error).message}`;
    }
  }

  private settings(): TrainingSettings {
    const v = (id: string) => (this.renderRoot.querySelector(`#${id}`) as HTMLInputElement | HTMLSelectElement).value;
    const targets = [...this.renderRoot.querySelectorAll<HTMLInputElement>('.targets input:checked')].map((i) => i.value as LoraModule);
    const dataset = v('dataset');
    const start = this.startAdapter(dataset === 'agent' ? 'agent' : 'toy');
    return {
      dataset,
      reward: v('reward'),
      groupSize: Number(v('group')),
      steps: Number(v('steps')),
      learningRate: Number(v('lr')),
      // A stored adapter brings its own rank and targets; the form's are for a fresh one.
      ...(start ? { ...adapterShape(start), startAdapter: { id: start.id, name: start.name } } : { rank: Number(v('rank')), targets, startAdapter: null }),
    };
  }

  /** Starts a new run with the form's settings (the Toy mode button). */
  start(): Promise<void> {
    return this.openRun(async () => {
      const s = this.settings();
      if (s.dataset !== 'agent') return this.createDriver(s, this.dbName);
      if (!this.benchmark?.items.length) throw new Error('Import a benchmark file with at least one item first.');
      const benchmark = this.benchmark;
      return this.onEngines((deps) => createAgentDriver(s, benchmark, deps, this.budget(s.groupSize), { extraRollouts: this.extraRollouts() }));
    }, false);
  }

  pause(): void {
    this.driver?.pause();
  }

  /** A new run replaces the previous (paused or ended) one, whose worker would otherwise live on with the page. */
  private replaceDriver(d: TrainingDriver): void {
    if (this.driver && this.driver !== d) this.driver.dispose?.();
    this.driver = d;
    this.totalSteps = d.steps ?? null;
  }

  /**
   * Continues the paused run. A real-planner run paused on engines the page has since replaced continues from
   * its stored checkpoint on the engines loaded now (its old driver's engines are gone).
   */
  async resume(): Promise<void> {
    const d = this.driver;
    // A run stopped while it was being set up never ran: its driver is still idle.
    if (this.busy || this.state !== 'paused' || !d || (d.state !== 'paused' && d.state !== 'idle')) return;
    const on = this.driverEngines.get(d);
    if (on && on !== this.engines) return this.resumeStored(d.runId);
    this.pauseWanted = false;
    await this.current.track(this.go());
  }

  private async go(): Promise<void> {
    const d = this.driver!;
    if (this.pauseWanted) {
      // The page stopped the run while it was being set up: it is stored, at its start, and can be resumed.
      this.pauseWanted = false;
      this.state = 'paused';
      await this.refreshAgentRuns();
      return;
    }
    this.state = 'running';
    const at = this.points.at(-1)?.step ?? 0;
    this.progress = { steps: d.steps ?? 0, started: Date.now(), stepsAtStart: at, rollouts: null };
    try {
      await d.run(
        (p) => {
          this.points = [...this.points, p];
          if (this.progress) this.progress = { ...this.progress, rollouts: null };
        },
        { onProgress: (r) => this.progress && (this.progress = { ...this.progress, rollouts: r }) },
      );
    } catch (e) {
      this.error = `Training stopped: ${(e as Error).message}`;
    } finally {
      this.state = d.state;
      this.progress = null;
      this.result = d.result ?? null;
      await this.refreshAdapters();
      await this.refreshAgentRuns();
    }
  }

  /** "step 17 of 40", a bar, and the time left at the pace of this session's steps. */
  /** Steps with no reward signal (all-equal groups): a note, or an error when the whole run learned nothing. */
  private renderNoSignal(p: readonly TrainingStepPoint[]) {
    const n = noSignalText(p);
    if (!n) return nothing;
    return n.run ? html`<p class="warning" role="status" data-testid="no-signal">${n.text}</p>` : html`<p class="note" data-testid="no-signal"><small>${n.text}</small></p>`;
  }

  private renderProgress() {
    const pr = this.progress;
    if (!pr || !pr.steps) return nothing;
    const done = this.points.at(-1)?.step ?? 0;
    const ran = done - pr.stepsAtStart;
    const secondsLeft = ran > 0 ? (((Date.now() - pr.started) / 1000) * (pr.steps - done)) / ran : null;
    const r = pr.rollouts;
    return html`<div data-testid="training-progress">
      <label>Step ${done} of ${pr.steps}${secondsLeft !== null ? `, about ${formatSeconds(secondsLeft)} left` : ''}
        <progress max=${pr.steps} .value=${done}></progress></label>
      ${r ? html`<small data-testid="rollout-progress">Step ${r.step}: playing group ${Math.min(r.groupsDone + 1, r.groups)} of ${r.groups}, ${r.rolloutsDone} of ${r.groupSize} rollouts done</small>` : nothing}
    </div>`;
  }

  private async deleteStoredAdapter(id: string): Promise<void> {
    this.deleting = null;
    await deleteAdapter(id, this.dbName);
    if (this.active === id) await this.activate(null);
    await this.refreshAdapters();
  }

  private async keep(a: AdapterRecord, name: string): Promise<void> {
    try {
      await keepAdapter(a.id, name, this.dbName);
      this.keeping = null;
      this.error = null;
    } catch (e) {
      this.error = (e as Error).message;
    }
    await this.refreshAdapters();
  }

  private async activate(id: string | null): Promise<void> {
    await putSetting(ACTIVE_ADAPTER_KEY, id, this.dbName);
    this.active = id;
    this.dispatchEvent(new CustomEvent('agentflow-adapter', { detail: { adapterId: id }, bubbles: true, composed: true }));
  }

  private exportAdapter(a: AdapterRecord): void {
    const f = adapterFiles(a);
    const base = a.name.replace(/[^\w.-]+/g, '_');
    downloadText(f.config, `${base}.adapter_config.json`);
    downloadBlob(new Blob([f.weights as Uint8Array<ArrayBuffer>], { type: 'application/octet-stream' }), `${base}.adapter_model.safetensors`);
  }

  private onBenchmarkFile = async (e: Event): Promise<void> => {
    const f = (e.target as HTMLInputElement).files?.[0];
    if (f) this.importBenchmarkText(await f.text(), f.name);
  };

  private async importAdapter(): Promise<void> {
    const cfg = (this.renderRoot.querySelector('#import-config') as HTMLInputElement).files?.[0];
    const w = (this.renderRoot.querySelector('#import-weights') as HTMLInputElement).files?.[0];
    this.importStatus = '';
    if (!cfg || !w) {
      this.error = 'Choose both files of the adapter: adapter_config.json and adapter_model.safetensors.';
      return;
    }
    const nameInput = this.renderRoot.querySelector('#import-name') as HTMLInputElement;
    const name = nameInput.value.trim() || importedAdapterName(w.name);
    try {
      await importAdapterFiles(name, await cfg.text(), new Uint8Array(await w.arrayBuffer()), this.dbName, { config: cfg.name, weights: w.name });
      this.error = null;
      this.importStatus = `Imported “${name}” from ${w.name}.`;
      nameInput.value = '';
    } catch (e) {
      this.error = `Import failed: ${(e as Error).message}`;
    }
    await this.refreshAdapters();
  }

  override render() {
    const p = this.points;
    // Points stored before a field existed (or from a run that has no such figure) plot as gaps.
    const series = (k: keyof TrainingStepPoint) => p.map((x) => (typeof x[k] === 'number' ? (x[k] as number) : NaN));
    const canTrainPlanner = this.plannerTrainer() !== null;
    const b = this.benchmark;
    const agentReady = canTrainPlanner && !!b?.items.length;
    const mode = this.mode;
    const agent = mode === 'agent';
    const lr = this.lrTyped[mode] ?? String(DEFAULT_LEARNING_RATE[mode]);
    const startable = this.startableAdapters(mode);
    const start = this.startAdapter(mode);
    return html`
      <fieldset>
        <legend>Flow-GRPO settings</legend>
        <div class="grid">
          <label class="dataset">Dataset<select id="dataset" @change=${(e: Event) => (this.datasetChoice = (e.target as HTMLSelectElement).value)}>
            <option value="toy" .selected=${!agent}>Toy task (two-turn tool use, tiny planner)</option>
            <option value="agent" ?disabled=${!agentReady} .selected=${agent}>Imported benchmark (agent rollouts)</option>
          </select></label>
          <label>Reward<select id="reward">${agent ? html`<option value="benchmark">Reference answers (${b!.kind})</option>` : html`<option value="toy">Toy: both turns right</option>`}</select></label>
          <label>Group size<input id="group" type="number" min="2" max="64" value=${agent ? 8 : TOY_TRAINING.groupSize}
            @input=${(e: Event) => (this.groupSizeShown = Number((e.target as HTMLInputElement).value))} /></label>
          <label>Steps<input id="steps" type="number" min="1" max="10000" value=${agent ? 40 : TOY_TRAINING.steps} /></label>
          <label>Learning rate<input id="lr" type="number" min="0" step="any" .value=${lr}
            @input=${() => this.lrTouched.add(mode)} /></label>
          <label>Start from<select id="start-adapter" @change=${(e: Event) => (this.startChoice = (e.target as HTMLSelectElement).value)}>
            <option value="" .selected=${!start}>A fresh adapter</option>
            ${startable.map((a) => html`<option value=${a.id} .selected=${start?.id === a.id}>${a.name}</option>`)}
          </select></label>
          <label>LoRA rank<input id="rank" type="number" min="1" max="256" value="4" ?disabled=${!!start} /></label>
        </div>
        <div class="targets" role="group" aria-label="LoRA target modules">
          Targets: ${LORA_MODULES.map((m) => html`<label><input type="checkbox" value=${m} checked ?disabled=${!!start} />${m}</label>`)}
        </div>
        ${start
          ? html`<p data-testid="start-adapter-note"><small>Training continues the stored adapter “${start.name}” (rank ${adapterShape(start).rank}, targets ${adapterShape(start).targets.join(', ')}); the stored copy is kept.</small></p>`
          : nothing}
        <p data-testid="agent-availability"><small>${!canTrainPlanner && this.engines && isScripted(this.engines)
          ? 'The scripted demo is loaded: its answers are scripted, not a model’s, so there is no planner to train. Load a planner model in Models & GPU to train it on agent rollouts; the toy task shows Flow-GRPO learning meanwhile.'
          : !canTrainPlanner
          ? 'Imported benchmark (agent rollouts) trains the real planner and needs a planner model loaded in Models & GPU (it runs on this page’s WebGPU runtime; a planner on web-llm gives no token ids to train on). Until then the toy task shows Flow-GRPO learning in any browser.'
          : !b?.items.length
            ? 'Import a benchmark with reference answers below to train the loaded planner on agent rollouts.'
            : `Agent rollouts: each step runs the agent group-size times on each of a few of the ${b.items.length} items of “${b.name}”, scores the answers against the references, and updates the planner’s adapter in its worker.`}</small></p>
      </fieldset>
      <fieldset>
        <legend>Agent rollouts</legend>
        <div class="row">
          <label>Benchmark file (AgentFlow data.json or JSONL)
            <input type="file" accept=".json,.jsonl,.ndjson,application/json" data-testid="training-benchmark-file" @change=${this.onBenchmarkFile} />
          </label>
          ${this.storedBenchmarks.length
            ? html`<label>Imported benchmarks
                <select data-testid="training-stored-benchmarks" ?disabled=${this.busy} @change=${(e: Event) => this.chooseBenchmark((e.target as HTMLSelectElement).value)}>
                  ${this.benchmarkChoice && !this.storedBenchmarks.some((r) => r.id === this.benchmarkChoice) ? html`<option value="" selected>${b?.name ?? ''} (being kept…)</option>` : nothing}
                  ${this.storedBenchmarks.map((r) => html`<option value=${r.id} .selected=${r.id === this.benchmarkChoice}>${benchmarkLabel(r)}</option>`)}
                </select></label>`
            : nothing}
          ${b ? html`<span role="status" data-testid="training-benchmark-summary">Imported ${b.items.length} item${b.items.length === 1 ? '' : 's'} from “${b.name}” (reward: ${b.kind})${b.problems.length ? `; ${b.problems.length} skipped` : ''}.</span>` : nothing}
        </div>
        ${b?.problems.length
          ? html`<ul class="error" data-testid="training-import-problems" aria-label="Problems in the file">${b.problems.map((p) => html`<li>${p.message}</li>`)}</ul>`
          : nothing}
        <div class="grid">
          <label>Max turns<input id="max-turns" type="number" min="1" max="10" value=${DEFAULT_AGENT_BUDGET.maxTurns} /></label>
          <label>Planner tokens<input id="planner-tokens" type="number" min="1" max="2048" value=${DEFAULT_AGENT_BUDGET.plannerTokens} /></label>
          <label>Other modules' tokens<input id="module-tokens" type="number" min="1" max="4096" value=${DEFAULT_AGENT_BUDGET.moduleTokens} /></label>
          <label>Queries per step<input id="queries" type="number" min="1" max="64" value=${DEFAULT_AGENT_BUDGET.queriesPerStep} /></label>
          <label>Micro-batch tokens<input id="micro-tokens" type="number" min="2" max="16384" value=${DEFAULT_AGENT_BUDGET.microBatchTokens} /></label>
          <label title="A group whose rollouts all failed gets up to this many more, until one succeeds (0: none)">Extra rollouts (no success)<input id="extra-rollouts" type="number" min="0" max="4096" value=${DEFAULT_GRPO_CONFIG.extraRollouts} /></label>
          <label>Rollouts at once<input id="rollout-concurrency" type="number" min="1" max=${MAX_ROLLOUT_CONCURRENCY} step="1"
            placeholder=${String(this.defaultRolloutsAtOnce())} aria-describedby="rollout-concurrency-hint" /></label>
        </div>
        <p id="rollout-concurrency-hint" data-testid="rollout-concurrency-hint"><small>Rollouts at once: a group's rollouts that run together have their planner calls decoded together, up to 8 sequences per step with 4-bit weights (4 with f16 weights); at most ${MAX_ROLLOUT_CONCURRENCY}; empty means min(group size, ${MAX_DEFAULT_ROLLOUT_CONCURRENCY}).</small></p>
        ${this.agentRuns.length
          ? html`<ul data-testid="agent-runs" aria-label="Stored agent-rollout runs">${this.agentRuns.map(
              (r) => html`<li>${r.id}: step ${r.history.length} of ${r.spec.steps} (${r.status})
                <button type="button" ?disabled=${!canTrainPlanner || this.busy} aria-label=${`Resume run ${r.id}`} @click=${() => this.resumeStored(r.id)}>Resume</button></li>`,
            )}</ul>`
          : nothing}
      </fieldset>
      <div class="row">
        <button type="button" ?disabled=${this.busy} @click=${() => this.start()}>${agent ? 'Start training the planner' : 'Toy mode: start training'}</button>
        <button type="button" ?disabled=${this.state !== 'running'} @click=${() => this.pause()}>Pause</button>
        <button type="button" ?disabled=${this.state !== 'paused' || this.starting} @click=${() => this.resume()}>Resume</button>
        <span role="status" data-testid="training-status">${this.starting ? 'Starting…' : trainingStatusText(this.state, p.at(-1), this.totalSteps)}</span>
      </div>
      ${this.renderProgress()}
      ${this.label ? html`<p data-testid="training-label"><small>${this.label}</small></p>` : nothing}
      ${this.notes.map((n) => html`<p class="note" role="status"><small>${n}</small></p>`)}
      ${this.result
        ? html`<p data-testid="training-result">Result: the adapter of step ${this.result.step}${this.result.reason === 'best' ? `, the best rolling reward (${this.result.rollingReward.toFixed(2)})` : ' (the last step)'}.</p>`
        : nothing}
      ${this.renderNoSignal(p)}
      ${p.some((x) => x.skippedUpdate)
        ? html`<p class="error" data-testid="skipped-updates">Updates skipped (adapter unchanged): ${p.filter((x) => x.skippedUpdate).map((x) => `step ${x.step}: ${x.skippedUpdate}`).join('; ')}</p>`
        : nothing}
      ${this.error ? html`<p class="error" role="alert">${this.error}</p>` : nothing}
      <label class="smoothing">Smoothing
        <select id="smoothing" @change=${(e: Event) => (this.smoothing = Number((e.target as HTMLSelectElement).value))}>
          ${[0, 0.6, 0.9].map((w) => html`<option value=${w} .selected=${this.smoothing === w}>${w ? `EMA ${w}` : 'off'}</option>`)}
        </select></label>
      <div class="charts" data-testid="training-charts">
        ${lineChart(
          'Reward (mean)',
          [
            { label: 'reward', values: series('reward') },
            { label: 'rolling', values: series('rollingReward') },
          ],
          { smoothing: this.smoothing, flat: (v) => (v === 0 ? 'no rollout was rewarded, so there is nothing to learn from yet' : v === 1 ? 'every rollout was rewarded, so groups give no learning signal' : null) },
        )}
        ${lineChart('Loss', [{ label: 'loss', values: series('loss') }], {
          // The clipped objective's value at the sampling policy is -mean(advantage), and advantages are
          // normalised within each group: ≈ 0 is its usual value, not a sign that nothing is learned.
          zeroBelow: 1e-6,
          log: true,
          smoothing: this.smoothing,
          flat: (v) => (v === 0 ? 'usual for Flow-GRPO, whose advantages average 0 within a group; the reward shows the learning' : null),
        })}
        ${lineChart('KL to the base policy', [{ label: 'KL', values: series('kl') }], { zeroBelow: 1e-9, log: true, smoothing: this.smoothing, flat: (v) => (v === 0 ? 'the adapter has not moved the planner from its base model' : null) })}
        ${lineChart('Clip fraction', [{ label: 'clip fraction', values: series('clipFraction') }], { smoothing: this.smoothing, flat: (v) => (v === 0 ? 'no ratio was clipped (every update stayed within the clip range)' : null) })}
        ${lineChart('Tokens per second', [{ label: 'tokens/s', values: series('tokensPerSecond') }], { smoothing: this.smoothing })}
        ${p.some((x) => x.rolloutSeconds !== undefined) ? lineChart('Rollout time per step (s)', [{ label: 'rollouts s', values: series('rolloutSeconds') }], { smoothing: this.smoothing }) : nothing}
        ${p.some((x) => x.plannerSequencesPerStep !== undefined)
          ? lineChart('Planner sequences per decode step', [{ label: 'sequences/step', values: series('plannerSequencesPerStep') }], { smoothing: this.smoothing })
          : nothing}
      </div>
      ${this.runs.length
        ? html`<h3>Runs</h3>
            <ul data-testid="training-runs" aria-label="Stored training runs">${this.runs.map(
              (r) => html`<li>${r.spec.label}: step ${r.history.at(-1)?.step ?? 0} of ${r.spec.steps} (${r.status})${r.result ? `, result step ${r.result.step}` : ''}
                <button type="button" ?disabled=${this.busy} aria-label=${`Show run ${r.id}`} @click=${() => this.showStored(r)}>Show</button>
                ${r.spec.task === 'toy' && (r.status === 'paused' || r.status === 'running')
                  ? html`<button type="button" ?disabled=${this.busy} aria-label=${`Resume toy run ${r.id}`} @click=${() => this.resumeToy(r.id)}>Resume</button>`
                  : nothing}</li>`,
            )}</ul>`
        : nothing}
      <h3>Adapters</h3>
      ${this.adapters.length === 0
        ? html`<p>No adapters stored yet. Training saves one at each checkpoint.</p>`
        : html`<div class="table-scroll" role="region" aria-label="Stored adapters" tabindex="0"><table class="adapters" data-testid="adapters">
            <thead><tr><th scope="col">Adapter</th><th scope="col">Base model</th><th scope="col" class="created">Created</th><th scope="col">Actions</th></tr></thead>
            <tbody>
              ${this.adapters.map(
                (a) => html`<tr>
                  <td>${a.name}${this.active === a.id ? html` <strong>(active)</strong>` : nothing}${a.keep ? html` <small>(kept)</small>` : nothing}${a.keep || !a.trainingRunId
                    ? html`<small class="created-inline" data-testid="created-inline">${new Date(a.createdAt).toLocaleString()}</small>`
                    : nothing}</td>
                  <td>${a.baseModel || '—'}</td>
                  <td class="created">${new Date(a.createdAt).toLocaleString()}</td>
                  <td>
                    <button type="button" aria-pressed=${this.active === a.id ? 'true' : 'false'} aria-label=${`${this.active === a.id ? 'Deactivate' : 'Activate'} adapter ${a.name}`} @click=${() => this.activate(this.active === a.id ? null : a.id)}>${this.active === a.id ? 'Deactivate' : 'Activate'}</button>
                    <button type="button" aria-label=${`Export adapter ${a.name}`} @click=${() => this.exportAdapter(a)}>Export</button>
                    ${a.trainingRunId && !a.keep
                      ? this.keeping === a.id
                        ? html`<input type="text" aria-label=${`Name to keep adapter ${a.name} under`} .value=${a.name}
                              @keydown=${(e: KeyboardEvent) => e.key === 'Enter' && this.keep(a, (e.target as HTMLInputElement).value)} />
                            <button type="button" aria-label=${`Keep adapter ${a.name} under this name`} @click=${(e: Event) => this.keep(a, ((e.target as HTMLElement).previousElementSibling as HTMLInputElement).value)}>Keep</button>`
                        : html`<button type="button" aria-label=${`Keep adapter ${a.name} under a name`} title="Checkpoints are pruned; a kept adapter stays" @click=${() => (this.keeping = a.id)}>Keep as…</button>`
                      : nothing}
                    ${this.deleting === a.id
                      ? deleteQuestion(`adapter ${a.name}`, 'this adapter', () => void this.deleteStoredAdapter(a.id), () => (this.deleting = null))
                      : html`<button type="button" aria-label=${`Delete adapter ${a.name}`} @click=${() => {
                          this.deleting = a.id;
                          void focusDeleteQuestion(this);
                        }}>Delete</button>`}
                  </td>
                </tr>`,
              )}
            </tbody>
          </table></div>`}
      <fieldset>
        <legend>Import a PEFT adapter</legend>
        <div class="row">
          <label>adapter_config.json<input id="import-config" type="file" accept=".json,application/json" /></label>
          <label>adapter_model.safetensors<input id="import-weights" type="file" accept=".safetensors" /></label>
          <label>Name (optional)<input id="import-name" type="text" placeholder="from the file name" /></label>
          <button type="button" @click=${() => this.importAdapter()}>Import</button>
          ${this.importStatus ? html`<span role="status" data-testid="import-status">${this.importStatus}</span>` : nothing}
        </div>
      </fieldset>
    `;
  }
}
if (!customElements.get('agentflow-training-panel')) customElements.define('agentflow-training-panel', AgentflowTrainingPanel);

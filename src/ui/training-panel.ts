// Training: Flow-GRPO settings, start/pause/resume, live charts of the trainer's step statistics, the stored
// runs and the stored LoRA adapters. The learning rate defaults per mode (DEFAULT_LEARNING_RATE). "Toy mode"
// trains the toy task's tiny planner (createToyDriver, in a worker); with a planner model loaded,
// "Imported benchmark (agent rollouts)" trains the real planner (createAgentDriver); both are runs of the
// library's TrainingRun. Any other TrainingDriver can be plugged in through `createDriver`. The views are in
// training-form.ts, training-runs-view.ts, training-charts-view.ts and <agentflow-training-adapters>; this
// element holds the state and runs the runs.
import { LitElement, html, nothing } from 'lit';
import { importBenchmark, type ImportedBenchmark } from '../agent/benchmark-import';
import { benchmarkFromRecord, benchmarkId, listBenchmarks, saveBenchmark } from '../store/benchmarks';
import type { AdapterRecord, BenchmarkRecord } from '../store/records';
import type { AgentEngines } from '../agent/loop';
import { toolsFromRegistry } from '../agent/registry-tools';
import type { ToolRegistry } from '../tools/registry';
import { createAgentDriver, MAX_DEFAULT_ROLLOUT_CONCURRENCY, resumeAgentDriver, rolloutConcurrency, type AgentBudget } from './agent-training-driver';
import type { PolicyTrainer } from '../trainer/training-host';
import type { RunResult, RunSpec, StoredRun } from '../trainer/run/run-store';
import type { RolloutProgress } from '../trainer/run/collector';
import { listRuns } from '../trainer/run/run-store-idb';
import { isScripted } from '../agent/engines-used';
import { formatSeconds } from './progress-tracker';
import type { LoraModule } from '../engine/io/peft';
import type { PlannerInfo } from '../engine/planner-protocol';
import { getSetting } from '../store/settings';
import { adapterShape, listAdapters } from './adapter-store';
import { DEFAULT_GRPO_CONFIG } from '../trainer/config';
import { TOY_TRAINING } from '../trainer/toy-task';
import type { EngineUse, EngineUser } from './engine-use';
import { InFlight } from './in-flight';
import { TOY_BASE_MODEL, createToyDriver, resumeToyDriver, WorkerToyTrainingDriver, type TrainingDriver, type TrainingSettings, type TrainingStepPoint } from './training-driver';
import { droppedStepText, noSignalText, trainingStatusText } from './training-status';
import { ACTIVE_ADAPTER_KEY, type PlannerBase } from './training-adapters';
import { renderAgentSetup, renderSettings, type FormView, type TrainingMode } from './training-form';
import { renderRunsList, runStatusWord } from './training-runs-view';
import { renderTrainingCharts } from './training-charts-view';
import { trainingPanelStyles } from './training-panel-styles';
import './training-adapters';

export { ACTIVE_ADAPTER_KEY, type TrainingMode };

/**
 * The learning rate the form shows for each mode until the user types one for that mode.
 * - toy: TOY_TRAINING.learningRate (0.01), the rate the toy's stability runs were measured at (README, "Toy
 *   training"); its tiny planner and zero-initialised adapter need large steps to learn within a short demo.
 * - agent: the trainer's default (DEFAULT_GRPO_CONFIG.learningRate, reasons in trainer/config.ts). The toy
 *   rate would rewrite a real planner's adapter within a few steps and wreck its language.
 */
export const DEFAULT_LEARNING_RATE: Readonly<Record<TrainingMode, number>> = Object.freeze({ toy: TOY_TRAINING.learningRate, agent: DEFAULT_GRPO_CONFIG.learningRate });

/** A pause asked for while a step ran: which step, why, and how far its rollouts had got. */
interface PauseAsk {
  cause: 'pause' | 'swap';
  step: number;
  rollouts: RolloutProgress | null;
}

export class AgentflowTrainingPanel extends LitElement implements EngineUser {
  static override properties = {
    dbName: { type: String, attribute: 'db-name' },
    createDriver: { attribute: false },
    resumeToyDriver: { attribute: false },
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
    startChoice: { state: true },
    starting: { state: true },
    groupSizeShown: { state: true },
    progress: { state: true },
    runs: { state: true },
    result: { state: true },
    notes: { state: true },
    smoothing: { state: true },
    shownRunId: { state: true },
    interrupted: { state: true },
    planner: { state: true },
  };
  declare dbName: string | undefined;
  /** Makes the driver for a settings choice; default: the toy driver. */
  declare createDriver: (s: TrainingSettings, dbName?: string) => Promise<TrainingDriver>;
  /** Continues a stored toy run; default: in a worker where the browser has them. */
  declare resumeToyDriver: (runId: string, dbName?: string) => Promise<TrainingDriver>;
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
  /** Id of the stored adapter to start the next run from; '' for a fresh adapter. */
  declare startChoice: string;
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
  /** EMA weight of the training charts' drawn lines (0: the raw steps). */
  declare smoothing: number;
  /** The run whose charts and settings the tab shows (the driver's, or a stored one). */
  declare shownRunId: string | null;
  /** The shown stored run was running when the page went away, and nothing runs it now. */
  declare interrupted: boolean;
  /** The loaded planner adapters would go on (its shapes), when one of this page's planners is loaded. */
  declare planner: PlannerBase | null;
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
  /** Set by stopOnEngines while a run starts; the run then stops before its first step. */
  private pauseWanted = false;
  /** The pause asked for during the current step, to say afterwards what it dropped. */
  private pauseAsk: PauseAsk | null = null;
  /** What the last pause dropped, for the app's "stopped first" line. */
  private dropped: string | null = null;

  constructor() {
    super();
    // In a worker where the browser has them, so a step's computation never freezes the page.
    this.createDriver = (s, db) => (typeof Worker === 'function' ? WorkerToyTrainingDriver.create(s, db) : createToyDriver(s, db));
    this.resumeToyDriver = (id, db) => (typeof Worker === 'function' ? WorkerToyTrainingDriver.resume(id, db) : resumeToyDriver(id, db));
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
    this.startChoice = '';
    this.starting = false;
    this.groupSizeShown = 8;
    this.progress = null;
    this.runs = [];
    this.result = null;
    this.notes = [];
    this.smoothing = 0;
    this.shownRunId = null;
    this.interrupted = false;
    this.planner = null;
  }

  static override styles = trainingPanelStyles;

  private get busy(): boolean {
    return this.starting || this.state === 'running';
  }

  /** Agent-rollout runs that can be continued (paused, or cut off by a reload while running), newest first. */
  get agentRuns(): StoredRun[] {
    return this.runs.filter((r) => r.spec.task === 'agent' && (r.status === 'paused' || r.status === 'running'));
  }

  /**
   * The real-planner run using the page's engines, if one is starting or running, for the app to stop before
   * it replaces them. Stopping pauses it: the step in progress is dropped (and said so), its checkpoints stay
   * and the run is stored as paused, so Resume continues it (on the engines loaded then).
   */
  engineUse(): EngineUse | null {
    const d = this.driver;
    // Toy runs have no entry: with no engines loaded, undefined === undefined must not count them as a use.
    const on = d ? this.driverEngines.get(d) : undefined;
    const running = this.state === 'running' && on !== undefined && on === this.engines;
    if (!(this.starting && this.startingOnEngines) && !running) return null;
    // eslint-disable-next-line @typescript-eslint/no-this-alias
    const panel = this;
    return {
      what: `a training run${this.label ? ` (${this.label})` : ''}`,
      // Read after stop(): by then it knows whether a step was cut short.
      get kept() {
        return `it is paused with its checkpoints kept; resume it in Training${panel.dropped ? `. ${panel.dropped}` : ''}`;
      },
      stop: () => this.stopOnEngines(),
    };
  }

  private async stopOnEngines(): Promise<void> {
    // A run still starting is paused once it has started (go() checks pauseWanted before its first step).
    this.pauseWanted = true;
    if (this.state === 'running') this.askPause('swap');
    await this.current.idle();
  }

  override willUpdate(changed: Map<string, unknown>): void {
    const mode = this.mode;
    if (this.lrMode && mode !== this.lrMode && this.lrTouched.has(this.lrMode)) {
      const input = this.renderRoot.querySelector<HTMLInputElement>('#lr');
      if (input) this.lrTyped[this.lrMode] = input.value;
    }
    this.lrMode = mode;
    if (changed.has('trainer')) void this.readPlanner();
  }

  /** The loaded planner's id and shapes (the page's trainer is its worker's client), for which adapters fit it. */
  private async readPlanner(): Promise<void> {
    const t = this.trainer as (PolicyTrainer & { info?: () => Promise<Partial<PlannerInfo>> }) | undefined;
    const info = await t?.info?.().catch(() => null);
    if (this.trainer !== t) return;
    this.planner = info?.config && info.id ? { id: info.id, config: info.config } : null;
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

  override connectedCallback(): void {
    super.connectedCallback();
    void this.refreshAdapters();
    // After a reload the tab shows the newest run (its charts, settings and where it stands), not a blank "Not started."
    void this.refreshAgentRuns()
      .then(() => {
        if (!this.driver && !this.busy && this.shownRunId === null && this.runs.length) this.showStored(this.runs[0]);
      })
      .then(() => this.refreshBenchmarks());
  }

  /** Re-reads the stored runs (the list, and which agent runs can be resumed). */
  async refreshAgentRuns(): Promise<void> {
    try {
      this.runs = await listRuns(this.dbName);
    } catch {
      this.runs = [];
    }
  }

  /** Shows a stored run's charts, settings and result (any run, finished or not). */
  showStored(run: StoredRun): void {
    if (this.busy) return;
    this.points = [...run.history];
    this.label = `${run.spec.label}, run ${run.id}`;
    this.result = run.result;
    this.notes = [];
    this.totalSteps = run.spec.steps;
    this.shownRunId = run.id;
    const live = this.driver?.runId === run.id;
    this.interrupted = run.status === 'running' && !live;
    this.state = run.status === 'running' ? 'paused' : run.status;
  }

  /** Continues a stored toy run (paused, or cut off by a reload) in a worker where the browser has them. */
  resumeToy(runId: string): Promise<void> {
    return this.openRun(() => this.resumeToyDriver(runId, this.dbName), true);
  }

  /** Continues a stored agent-rollout run from its latest checkpoint. */
  resumeStored(runId: string): Promise<void> {
    return this.openRun(() => this.onEngines((deps) => resumeAgentDriver(runId, deps)), true);
  }

  /** Continues any stored run, by its task. */
  private resumeRun(run: Pick<StoredRun, 'id' | 'spec'>): Promise<void> {
    return run.spec.task === 'toy' ? this.resumeToy(run.id) : this.resumeStored(run.id);
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
    this.shownRunId = d.runId;
    this.interrupted = false;
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
    const engines = this.engines;
    if (!trainer || !engines) throw new Error('Training the planner needs a planner model loaded in Models & GPU.');
    return { trainer, engines, tools: this.registry ? toolsFromRegistry(this.registry) : [], dbName: this.dbName };
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
    if (this.state === 'running') this.askPause('pause');
  }

  private askPause(cause: PauseAsk['cause']): void {
    this.pauseAsk = { cause, step: (this.points.at(-1)?.step ?? 0) + 1, rollouts: this.progress?.rollouts ?? null };
    this.driver?.pause();
  }

  /** A new run replaces the previous (paused or ended) one, whose worker would otherwise live on with the page. */
  private replaceDriver(d: TrainingDriver): void {
    if (this.driver && this.driver !== d) this.driver.dispose?.();
    this.driver = d;
    this.totalSteps = d.steps ?? null;
  }

  /**
   * Continues the shown run. A real-planner run paused on engines the page has since replaced continues from
   * its stored checkpoint on the engines loaded now (its old driver's engines are gone); a stored run shown
   * after a reload is set up again from storage.
   */
  async resume(): Promise<void> {
    const d = this.driver;
    if (this.busy || this.state !== 'paused') return;
    if (!d || d.runId !== this.shownRunId) {
      const run = this.runs.find((r) => r.id === this.shownRunId);
      return run ? this.resumeRun(run) : undefined;
    }
    // A run stopped while it was being set up never ran: its driver is still idle.
    if (d.state !== 'paused' && d.state !== 'idle') return;
    const on = this.driverEngines.get(d);
    if (on && on !== this.engines) return this.resumeStored(d.runId);
    this.pauseWanted = false;
    await this.current.track(this.go());
  }

  private async go(): Promise<void> {
    const d = this.driver!;
    this.dropped = null;
    this.pauseAsk = null;
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
    // The list gets the new run now; its entry then follows the live steps (renderRunsList's `live`).
    void this.refreshAgentRuns();
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
      this.afterRun(d);
      await this.refreshAdapters();
      await this.refreshAgentRuns();
    }
  }

  /** Notes once a run stops: a finished run drops how it restarted (moot now); a pause says which step it cut short. */
  private afterRun(d: TrainingDriver): void {
    const ask = this.pauseAsk;
    this.pauseAsk = null;
    if (d.state === 'done') {
      this.notes = [];
      return;
    }
    if (ask && d.state === 'paused' && (this.points.at(-1)?.step ?? 0) < ask.step) {
      const r = ask.rollouts?.step === ask.step ? ask.rollouts : null;
      const played = r ? r.groupsDone * r.groupSize + r.rolloutsDone : null;
      this.dropped = droppedStepText(ask.step, ask.cause, played);
      this.notes = [...this.notes, this.dropped];
    }
  }

  /** Steps with no reward signal (all-equal groups): a note, or a warning when the whole run learned nothing. */
  private renderNoSignal(p: readonly TrainingStepPoint[]) {
    const n = noSignalText(p);
    if (!n) return nothing;
    return n.run ? html`<p class="warning" role="status" data-testid="no-signal">${n.text}</p>` : html`<p class="note" data-testid="no-signal"><small>${n.text}</small></p>`;
  }

  /** "step 17 of 40", a bar, and the time left at the pace of this session's steps. */
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

  private onBenchmarkFile = async (e: Event): Promise<void> => {
    const f = (e.target as HTMLInputElement).files?.[0];
    if (f) this.importBenchmarkText(await f.text(), f.name);
  };

  /** The shown run's spec, whose settings the form shows. */
  private get shownSpec(): RunSpec | null {
    return this.runs.find((r) => r.id === this.shownRunId)?.spec ?? null;
  }

  private formView(): FormView {
    const mode = this.mode;
    const canTrainPlanner = this.plannerTrainer() !== null;
    return {
      mode,
      agentReady: canTrainPlanner && !!this.benchmark?.items.length,
      canTrainPlanner,
      scriptedLoaded: !!this.engines && isScripted(this.engines),
      benchmark: this.benchmark,
      storedBenchmarks: this.storedBenchmarks,
      benchmarkChoice: this.benchmarkChoice,
      busy: this.busy,
      lr: this.lrTyped[mode] ?? String(DEFAULT_LEARNING_RATE[mode]),
      startable: this.startableAdapters(mode),
      start: this.startAdapter(mode),
      defaultRolloutsAtOnce: this.defaultRolloutsAtOnce(),
      spec: this.shownSpec,
      onDataset: (v) => (this.datasetChoice = v),
      onGroupSize: (n) => (this.groupSizeShown = n),
      onLrInput: () => this.lrTouched.add(mode),
      onStartChoice: (id) => (this.startChoice = id),
      onBenchmarkFile: (e) => void this.onBenchmarkFile(e),
      onChooseBenchmark: (id) => this.chooseBenchmark(id),
    };
  }

  override render() {
    const p = this.points;
    const form = this.formView();
    const agent = form.mode === 'agent';
    const shown = this.runs.find((r) => r.id === this.shownRunId);
    const live = this.driver && this.driver.runId === this.shownRunId ? { id: this.driver.runId, points: p, running: this.state === 'running' } : null;
    return html`
      ${renderSettings(form)}
      ${agent ? renderAgentSetup(form) : nothing}
      <div class="row">
        <button type="button" ?disabled=${this.busy} @click=${() => this.start()}>${agent ? 'Start training the planner' : 'Toy mode: start training'}</button>
        <button type="button" ?disabled=${this.state !== 'running'} @click=${() => this.pause()}>Pause</button>
        <button type="button" ?disabled=${this.state !== 'paused' || this.starting || (shown?.spec.task === 'agent' && !this.plannerTrainer() && !live)}
          @click=${() => this.resume()}>Resume</button>
        <span role="status" data-testid="training-status">${this.starting ? 'Starting…' : trainingStatusText(this.state, p.at(-1), this.totalSteps, this.interrupted)}</span>
      </div>
      ${this.renderProgress()}
      ${this.label ? html`<p data-testid="training-label"><small>${this.label}</small></p>` : nothing}
      ${this.notes.map((n) => html`<p class="note" role="status" data-testid="training-note"><small>${n}</small></p>`)}
      ${this.result
        ? html`<p data-testid="training-result">Result: the adapter of step ${this.result.step}${this.result.reason === 'best' ? `, the best rolling reward (${this.result.rollingReward.toFixed(2)})` : ' (the last step)'}.</p>`
        : nothing}
      ${this.renderNoSignal(p)}
      ${p.some((x) => x.skippedUpdate)
        ? html`<p class="error" data-testid="skipped-updates">Updates skipped (adapter unchanged): ${p.filter((x) => x.skippedUpdate).map((x) => `step ${x.step}: ${x.skippedUpdate}`).join('; ')}</p>`
        : nothing}
      ${this.error ? html`<p class="error" role="alert">${this.error}</p>` : nothing}
      ${agent ? nothing : renderAgentSetup(form)}
      ${renderTrainingCharts(p, this.smoothing, (w) => (this.smoothing = w))}
      ${renderRunsList({
        runs: this.runs,
        live,
        shownId: this.shownRunId,
        busy: this.busy,
        canResumeAgent: this.plannerTrainer() !== null,
        show: (r) => this.showStored(r),
        resume: (r) => void this.resumeRun(r),
      })}
      <agentflow-training-adapters db-name=${this.dbName ?? nothing} .adapters=${this.adapters} .runs=${this.runs} .active=${this.active} .planner=${this.planner}
        @training-adapters-changed=${() => void this.refreshAdapters()}></agentflow-training-adapters>
    `;
  }
}
if (!customElements.get('agentflow-training-panel')) customElements.define('agentflow-training-panel', AgentflowTrainingPanel);

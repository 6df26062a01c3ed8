// Training: Flow-GRPO settings, start/pause/resume, live charts of the trainer's step statistics, the stored
// runs and the stored LoRA adapters. The learning rate defaults per mode (DEFAULT_LEARNING_RATE). "Toy mode"
// trains the toy task's tiny planner (createToyDriver, in a worker); with a planner model loaded,
// "Imported benchmark (agent rollouts)" trains the real planner (createAgentDriver, evaluating on an optional held-out file); both are runs of the
// library's TrainingRun. "Tool-choice task (no download)" trains a tiny planner through the real agent loop on
// a built-in task (tool-task-driver.ts, in a worker), with held-out evaluations charted beside the reward. Any other TrainingDriver can be plugged in through `createDriver`. The views are in
// training-form.ts, training-run-view.ts, training-runs-view.ts, training-charts-view.ts and
// <agentflow-training-adapters>; training-runner.ts runs the runs; this element holds the state.
import { LitElement, html, nothing } from 'lit';
import type { ImportedBenchmark } from '../agent/benchmark-import';
import { isScripted } from '../agent/engines-used';
import type { AgentEngines } from '../agent/loop';
import type { AdapterRecord } from '../store/records';
import type { ToolRegistry } from '../tools/registry';
import { DEFAULT_GRPO_CONFIG } from '../trainer/grpo-config';
import type { EvalPoint } from '../trainer/run/metrics';
import type { RunResult, RunSpec, StoredRun } from '../trainer/run/run-store';
import { TOY_TRAINING } from '../trainer/toy-task';
import type { PolicyTrainer } from '../trainer/training-host';
import { listAdapters } from '../controllers/training/adapter-store';
import { createAgentDriver, MAX_DEFAULT_ROLLOUT_CONCURRENCY } from '../controllers/training/agent-training-driver';
import type { EngineUse, EngineUser } from '../controllers/engines/engine-use';
import { BenchmarkChoice } from '../controllers/benchmark-choice';
import { HeldOutChoice } from '../controllers/training/held-out-choice';
import { plannerBaseOf, readActiveAdapter, type PlannerBase } from '../controllers/training/adapter-activation';
import * as defaultDrivers from '../controllers/training/default-drivers';
import './training-adapters';
import { renderTrainingCharts } from './training-charts-view';
import { TOY_BASE_MODEL, type TrainingDriver, type TrainingSettings, type TrainingStepPoint } from '../controllers/training/training-driver';
import { readBudget, readExtraRollouts, readMaxUpdateKl, readSettings, readToolTaskSettings, renderAgentSetup, renderSettings, specMode, type FormView, type TrainingMode } from './training-form';
import { TOOL_TASK_FORM_DEFAULTS, type ToolTaskSettings } from '../controllers/training/tool-task-driver';
import { isToolTaskBaseModel } from '../tasks/tool-task';
import { trainingPanelStyles } from './training-panel-styles';
import { TrainingRunner, type RunProgress } from '../controllers/training/training-runner';
import { renderRunState } from './training-run-view';
import { renderRunsList } from './training-runs-view';
import { trainingStatusText } from './training-status';
import { DEFAULT_HELD_OUT_EVERY, readHeldOutEvery } from './training-held-out-view';

export type { TrainingMode };

/**
 * The learning rate the form shows for each mode until the user types one for that mode.
 * - toy: TOY_TRAINING.learningRate (0.01), the rate the toy's stability runs were measured at (README, "Toy
 *   training"); its tiny planner and zero-initialised adapter need large steps to learn within a short demo.
 * - agent: the trainer's default (DEFAULT_GRPO_CONFIG.learningRate, reasons in trainer/grpo-config.ts). The toy
 *   rate would rewrite a real planner's adapter within a few steps and wreck its language.
 * - tools: the tool-choice task's (`cli train --task tools`'s default, the rate of its measured learning run).
 */
export const DEFAULT_LEARNING_RATE: Readonly<Record<TrainingMode, number>> = Object.freeze({
  toy: TOY_TRAINING.learningRate,
  tools: TOOL_TASK_FORM_DEFAULTS.learningRate,
  agent: DEFAULT_GRPO_CONFIG.learningRate,
});

export class AgentflowTrainingPanel extends LitElement implements EngineUser {
  static override properties = {
    dbName: { type: String, attribute: 'db-name' },
    createDriver: { attribute: false },
    resumeToyDriver: { attribute: false },
    createToolTaskDriver: { attribute: false },
    resumeToolTaskDriver: { attribute: false },
    points: { state: true },
    evals: { state: true },
    state: { state: true },
    error: { state: true },
    adapters: { state: true },
    active: { state: true },
    label: { state: true },
    engines: { attribute: false },
    trainer: { attribute: false },
    registry: { attribute: false },
    datasetChoice: { state: true },
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
  /** Starts and continues tool-choice task runs; default: in a worker where the browser has them. */
  declare createToolTaskDriver: (s: TrainingSettings & { toolTask?: ToolTaskSettings }, dbName?: string) => Promise<TrainingDriver>;
  declare resumeToolTaskDriver: (runId: string, dbName?: string) => Promise<TrainingDriver>;
  declare points: TrainingStepPoint[];
  declare evals: EvalPoint[];
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
  declare datasetChoice: string;
  /** Id of the stored adapter to start the next run from; '' for a fresh adapter. */
  declare startChoice: string;
  /** A run is being set up (a worker starting, a checkpoint loading): no second one may start meanwhile. */
  declare starting: boolean;
  /** The group size field's value, for the default of "rollouts at once" the form shows. */
  declare groupSizeShown: number;
  /** The running run's position: steps done of all, its pace, and where the current step's rollouts are. */
  declare progress: RunProgress | null;
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
  private readonly runner = new TrainingRunner(this);
  /** The benchmark imported for agent-rollout training, and the kept ones. */
  private readonly bench = new BenchmarkChoice(this, (error) => (this.error = error));
  /** Held-out items for the next real-planner run (in memory; the run's spec keeps them). */
  readonly heldOut = new HeldOutChoice(this);
  // Learning rates the user typed, per mode, saved when the mode changes: an edit sticks to its mode and
  // never carries over (a toy-sized rate must not reach the real planner). Not reactive state, so the
  // field is only rewritten on a mode change, never while the user types.
  private readonly lrTyped: Partial<Record<TrainingMode, string>> = {};
  private readonly lrTouched = new Set<TrainingMode>();
  private lrMode: TrainingMode | null = null;

  constructor() {
    super();
    this.createDriver = defaultDrivers.createToy;
    this.resumeToyDriver = defaultDrivers.resumeToy;
    this.createToolTaskDriver = defaultDrivers.createToolTask;
    this.resumeToolTaskDriver = defaultDrivers.resumeToolTask;
    this.points = [];
    this.evals = [];
    this.state = 'idle';
    this.error = null;
    this.adapters = [];
    this.active = null;
    this.label = '';
    this.engines = undefined;
    this.registry = undefined;
    this.datasetChoice = 'toy';
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

  /** The real-planner run on the page's engines, for the app to stop before it replaces them (TrainingRunner). */
  engineUse(): EngineUse | null {
    return this.runner.engineUse();
  }

  override willUpdate(changed: Map<string, unknown>): void {
    // A run shown (after a reload, from the list) puts the form in its mode, where the page can train it.
    const spec = changed.has('shownRunId') ? this.shownSpec : null;
    if (spec) this.datasetChoice = specMode(spec);
    const mode = this.mode;
    if (this.lrMode && mode !== this.lrMode && this.lrTouched.has(this.lrMode)) {
      const input = this.renderRoot.querySelector<HTMLInputElement>('#lr');
      if (input) this.lrTyped[this.lrMode] = input.value;
    }
    this.lrMode = mode;
    if (changed.has('trainer')) void this.readPlanner();
  }

  /** The loaded planner's id and shapes, for which adapters fit it. */
  private async readPlanner(): Promise<void> {
    const t = this.trainer;
    const base = await plannerBaseOf(t);
    if (this.trainer === t) this.planner = base;
  }

  /** The mode the form is in: the real planner only when it is chosen and can run. */
  get mode(): TrainingMode {
    if (this.datasetChoice === 'tools') return 'tools';
    return this.datasetChoice === 'agent' && this.plannerTrainer() !== null && !!this.benchmark?.items.length ? 'agent' : 'toy';
  }

  /** Stored adapters a run of `mode` can start from: each tiny planner's own, the others for the real one. */
  startableAdapters(mode: TrainingMode): AdapterRecord[] {
    const base = (a: AdapterRecord): TrainingMode => (a.baseModel === TOY_BASE_MODEL ? 'toy' : isToolTaskBaseModel(a.baseModel) ? 'tools' : 'agent');
    return this.adapters.filter((a) => base(a) === mode);
  }

  private startAdapter(mode: TrainingMode): AdapterRecord | undefined {
    return this.startChoice ? this.startableAdapters(mode).find((a) => a.id === this.startChoice) : undefined;
  }

  /** The trainer the page handed over with its engines, when there are both. */
  plannerTrainer(): PolicyTrainer | null {
    return this.engines && this.trainer ? this.trainer : null;
  }

  /** Imports a benchmark for agent-rollout training (the file input calls this with the file's contents). */
  importBenchmarkText(text: string, fileName: string): ImportedBenchmark {
    const b = this.bench.importText(text, fileName);
    if (b.items.length && this.plannerTrainer()) this.datasetChoice = 'agent';
    return b;
  }

  /** The benchmark imported for agent-rollout training. */
  get benchmark(): ImportedBenchmark | null {
    return this.bench.benchmark;
  }

  /**
   * Reads the kept benchmarks. With none chosen yet (after a reload) it chooses the one the newest resumable
   * run trained on, else the newest import, so the dataset option is not greyed out while such a run is listed.
   */
  async refreshBenchmarks(): Promise<void> {
    const dataset = this.runs.find((r) => r.spec.task === 'agent' && (r.status === 'paused' || r.status === 'running'))?.spec.dataset;
    await this.bench.refresh((stored) => stored.find((r) => r.name === dataset)).catch(() => this.bench.forgetStored());
  }

  override connectedCallback(): void {
    super.connectedCallback();
    void this.refreshAdapters();
    // After a reload the tab shows the newest run (its charts, settings and where it stands), not a blank "Not started."
    void this.refreshAgentRuns()
      .then(() => {
        if (!this.runner.driverRunId && !this.runner.busy && this.shownRunId === null && this.runs.length) this.showStored(this.runs[0]);
      })
      .then(() => this.refreshBenchmarks());
  }

  /** Re-reads the stored runs (the list, and which agent runs can be resumed). */
  refreshAgentRuns(): Promise<void> {
    return this.runner.refreshRuns();
  }

  /** Shows a stored run's charts, settings and result (any run, finished or not). */
  showStored(run: StoredRun): void {
    if (this.runner.busy) return;
    this.points = [...run.history];
    this.evals = [...(run.evals ?? [])];
    this.label = `${run.spec.label}, run ${run.id}`;
    this.result = run.result;
    this.notes = [];
    this.runner.totalSteps = run.spec.steps;
    this.shownRunId = run.id;
    const live = this.runner.driverRunId === run.id;
    this.interrupted = run.status === 'running' && !live;
    this.state = run.status === 'running' ? 'paused' : run.status;
  }

  /** Continues a stored toy run (paused, or cut off by a reload) in a worker where the browser has them. */
  resumeToy(runId: string): Promise<void> {
    return this.runner.open(() => this.resumeToyDriver(runId, this.dbName), true);
  }

  /** Continues a stored agent-rollout run from its latest checkpoint. */
  resumeStored(runId: string): Promise<void> {
    return this.runner.resumeStored(runId);
  }

  async refreshAdapters(): Promise<void> {
    try {
      this.adapters = await listAdapters(this.dbName);
      this.active = await readActiveAdapter(this.dbName);
    } catch (e) {
      this.error = `Could not read stored adapters: ${(e as Error).message}`;
    }
  }

  /** What "rollouts at once" means when left empty, for the group size the form shows. */
  private defaultRolloutsAtOnce(): number {
    const g = this.groupSizeShown;
    return Number.isInteger(g) && g > 0 ? Math.min(g, MAX_DEFAULT_ROLLOUT_CONCURRENCY) : MAX_DEFAULT_ROLLOUT_CONCURRENCY;
  }

  /** Starts a new run with the form's settings and mode. */
  start(): Promise<void> {
    return this.runner.open(async () => {
      const root = this.renderRoot;
      const dataset = (root.querySelector('#dataset') as HTMLSelectElement).value;
      const s = readSettings(root, this.startAdapter(dataset === 'agent' ? 'agent' : dataset === 'tools' ? 'tools' : 'toy'));
      if (s.dataset === 'tools') return this.createToolTaskDriver({ ...s, toolTask: readToolTaskSettings(root) }, this.dbName);
      if (s.dataset !== 'agent') return this.createDriver(s, this.dbName);
      if (!this.benchmark?.items.length) throw new Error('Import a benchmark file with at least one item first.');
      const benchmark = this.benchmark;
      const heldOut = this.heldOut.heldOut(benchmark, () => readHeldOutEvery(root, s.steps));
      return this.runner.onEngines((deps) => createAgentDriver(s, benchmark, deps, readBudget(root, s.groupSize), { extraRollouts: readExtraRollouts(root), maxUpdateKl: readMaxUpdateKl(root) }, heldOut));
    }, false);
  }

  pause(): void {
    this.runner.pause();
  }

  /** Continues the shown run (see TrainingRunner.resume). */
  resume(): Promise<void> {
    return this.runner.resume();
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
      storedBenchmarks: this.bench.stored,
      benchmarkChoice: this.bench.chosen,
      busy: this.runner.busy,
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
      onChooseBenchmark: (id) => this.bench.choose(id),
      heldOut: {
        state: this.heldOut.state(this.benchmark),
        every: (mode === 'agent' && this.shownSpec?.evaluation?.every) || DEFAULT_HELD_OUT_EVERY,
        onFile: (e) => void this.heldOut.onFile(e),
        onClear: () => this.heldOut.clear(),
      },
    };
  }

  override render() {
    const p = this.points;
    const form = this.formView();
    const agent = form.mode === 'agent';
    const shown = this.runs.find((r) => r.id === this.shownRunId);
    const live = this.runner.driverRunId && this.runner.driverRunId === this.shownRunId ? { id: this.runner.driverRunId, points: p, state: this.state } : null;
    return html`
      ${renderSettings(form)}
      ${agent ? renderAgentSetup(form) : nothing}
      <div class="row">
        <button type="button" ?disabled=${this.runner.busy} @click=${() => this.start()}>${agent ? 'Start training the planner' : form.mode === 'tools' ? 'Tool-choice task: start training' : 'Toy mode: start training'}</button>
        <button type="button" ?disabled=${this.state !== 'running'} @click=${() => this.pause()}>Pause</button>
        <button type="button" ?disabled=${this.state !== 'paused' || this.starting || (!!shown && specMode(shown.spec) === 'agent' && !this.plannerTrainer() && !live)}
          @click=${() => this.resume()}>Resume</button>
        <span role="status" data-testid="training-status">${this.starting ? 'Starting…' : trainingStatusText(this.state, p.at(-1), this.runner.totalSteps, this.interrupted)}</span>
      </div>
      ${renderRunState({ points: p, progress: this.progress, label: this.label, notes: this.notes, result: this.result })}
      ${this.error ? html`<p class="error" role="alert">${this.error}</p>` : nothing}
      ${agent ? nothing : renderAgentSetup(form)}
      ${renderTrainingCharts(p, this.evals, this.smoothing, (w) => (this.smoothing = w))}
      ${renderRunsList({
        runs: this.runs,
        live,
        shownId: this.shownRunId,
        busy: this.runner.busy,
        canResumeAgent: this.plannerTrainer() !== null,
        show: (r) => this.showStored(r),
        resume: (r) => void this.runner.resumeRun(r),
      })}
      <agentflow-training-adapters db-name=${this.dbName ?? nothing} .adapters=${this.adapters} .runs=${this.runs} .active=${this.active} .planner=${this.planner}
        @training-adapters-changed=${() => void this.refreshAdapters()}></agentflow-training-adapters>
    `;
  }
}
if (!customElements.get('agentflow-training-panel')) customElements.define('agentflow-training-panel', AgentflowTrainingPanel);

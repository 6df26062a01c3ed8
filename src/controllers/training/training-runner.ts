// Runs the Training tab's runs, one at a time: sets a driver up (a new run or a stored one resumed), runs it
// and writes where it stands into the tab's state (points, state, progress, result, notes), pauses it, and
// stops a real-planner run before the page replaces the engines it runs on. A pause that cuts a step short
// says so: the step's rollouts so far are dropped, and Resume plays that step again.
import type { AgentEngines } from '../../agent/loop';
import { toolsFromRegistry } from '../../agent/registry-tools';
import { toolTaskOf } from '../../tasks/tool-task-run';
import type { RolloutProgress } from '../../trainer/run/collector';
import type { EvalPoint } from '../../trainer/run/metrics';
import type { RunResult, StoredRun } from '../../trainer/run/run-store';
import { listRuns } from '../../trainer/run/run-store-idb';
import type { PolicyTrainer } from '../../trainer/training-host';
import type { ToolRegistry } from '../../tools/registry';
import { resumeAgentDriver } from './agent-training-driver';
import type { EngineUse } from '../engines/engine-use';
import { InFlight } from '../in-flight';
import type { TrainingDriver, TrainingState, TrainingStepPoint } from './training-driver';

/** The run's position while it goes: steps done of all, its pace, and where the current step's rollouts are. */
export interface RunProgress {
  steps: number;
  started: number;
  stepsAtStart: number;
  rollouts: RolloutProgress | null;
}

/** What the runner reads from the tab and writes into it (the panel's reactive state). */
export interface RunnerHost {
  points: TrainingStepPoint[];
  /** The run's held-out evaluations (runs that evaluate), charted beside the reward. */
  evals: EvalPoint[];
  state: TrainingState;
  error: string | null;
  label: string;
  result: RunResult | null;
  notes: readonly string[];
  starting: boolean;
  progress: RunProgress | null;
  shownRunId: string | null;
  interrupted: boolean;
  runs: StoredRun[];
  dbName: string | undefined;
  engines: AgentEngines | undefined;
  registry: ToolRegistry | undefined;
  resumeToyDriver: (runId: string, dbName?: string) => Promise<TrainingDriver>;
  resumeToolTaskDriver: (runId: string, dbName?: string) => Promise<TrainingDriver>;
  /** The trainer next to the engines' planner, when there are both. */
  plannerTrainer(): PolicyTrainer | null;
  refreshAdapters(): Promise<void>;
}

/** A pause asked for while a step ran: which step, why, and how far its rollouts had got. */
interface PauseAsk {
  cause: 'pause' | 'swap';
  step: number;
  rollouts: RolloutProgress | null;
}

export type AgentDeps = ReturnType<TrainingRunner['agentDeps']>;

export class TrainingRunner {
  private driver: TrainingDriver | null = null;
  /** Steps of the run the status line is about (the driver's, or the stored run shown), when known. */
  totalSteps: number | null = null;
  /** Drivers of real-planner runs and the page's engines each runs on (toy runs use none of them). */
  private readonly driverEngines = new WeakMap<TrainingDriver, AgentEngines>();
  /** A real-planner run is being set up (its optimizer starting in the planner worker). */
  private startingOnEngines = false;
  /** The start, resume or run in progress (one at a time: `busy`), so a stop can wait for its end. */
  private readonly current = new InFlight();
  /** Set by stopOnEngines while a run starts; the run then stops before its first step. */
  private pauseWanted = false;
  /** The pause asked for during the current step, to say afterwards what it dropped. */
  private pauseAsk: PauseAsk | null = null;
  /** What the last pause dropped, for the app's "stopped first" line. */
  private dropped: string | null = null;

  constructor(private readonly host: RunnerHost) {}

  get busy(): boolean {
    return this.host.starting || this.host.state === 'running';
  }

  /** The id of the run this page has a driver for (running, or paused here). */
  get driverRunId(): string | null {
    return this.driver?.runId ?? null;
  }

  /**
   * The real-planner run using the page's engines, if one is starting or running, for the app to stop before
   * it replaces them. Stopping pauses it: the step in progress is dropped (and said so), its checkpoints stay
   * and the run is stored as paused, so Resume continues it (on the engines loaded then).
   */
  engineUse(): EngineUse | null {
    const h = this.host;
    const d = this.driver;
    // Toy runs have no entry: with no engines loaded, undefined === undefined must not count them as a use.
    const on = d ? this.driverEngines.get(d) : undefined;
    const running = h.state === 'running' && on !== undefined && on === h.engines;
    if (!(h.starting && this.startingOnEngines) && !running) return null;
    const runner = this;
    return {
      what: `a training run${h.label ? ` (${h.label})` : ''}`,
      // Read after stop(): by then it knows whether a step was cut short.
      get kept() {
        return `it is paused with its checkpoints kept; resume it in Training${runner.dropped ? `. ${runner.dropped}` : ''}`;
      },
      stop: () => this.stopOnEngines(),
    };
  }

  private async stopOnEngines(): Promise<void> {
    // A run still starting is paused once it has started (go() checks pauseWanted before its first step).
    this.pauseWanted = true;
    if (this.host.state === 'running') this.askPause('swap');
    await this.current.idle();
  }

  /**
   * Sets a run's driver up and runs it, as `current`, unless one is already starting or running. A set-up
   * that fails shows its error and starts nothing. A resumed run shows its stored history; a new one starts
   * with none and clears the last run's result.
   */
  open(setUp: () => Promise<TrainingDriver>, resumed: boolean): Promise<void> {
    return this.busy ? Promise.resolve() : this.current.track(this.setUpAndGo(setUp, resumed));
  }

  private async setUpAndGo(setUp: () => Promise<TrainingDriver>, resumed: boolean): Promise<void> {
    const h = this.host;
    h.error = null;
    this.pauseWanted = false;
    h.starting = true;
    try {
      this.replaceDriver(await setUp());
    } catch (e) {
      h.error = (e as Error).message;
      return;
    } finally {
      h.starting = false;
      this.startingOnEngines = false;
    }
    const d = this.driver!;
    h.points = resumed ? [...d.history] : [];
    // A resumed run keeps the evaluations of the steps it kept (the stored record has them).
    const last = h.points.at(-1)?.step ?? 0;
    h.evals = resumed ? (h.runs.find((r) => r.id === d.runId)?.evals ?? []).filter((e) => e.step <= last) : [];
    if (!resumed) h.result = null;
    h.notes = d.notes ?? [];
    h.label = `${d.label}, run ${d.runId}`;
    h.shownRunId = d.runId;
    h.interrupted = false;
    await this.go();
  }

  /** Sets up a real-planner run on the page's engines, which the app must stop before it replaces them. */
  async onEngines(setUp: (deps: AgentDeps) => Promise<TrainingDriver>): Promise<TrainingDriver> {
    this.startingOnEngines = true;
    const deps = this.agentDeps();
    const d = await setUp(deps);
    this.driverEngines.set(d, deps.engines);
    return d;
  }

  agentDeps() {
    const trainer = this.host.plannerTrainer();
    const engines = this.host.engines;
    if (!trainer || !engines) throw new Error('Training the planner needs a planner model loaded in Models & GPU.');
    return { trainer, engines, tools: this.host.registry ? toolsFromRegistry(this.host.registry) : [], dbName: this.host.dbName };
  }

  /** Continues a stored agent-rollout run from its latest checkpoint. */
  resumeStored(runId: string): Promise<void> {
    return this.open(() => this.onEngines((deps) => resumeAgentDriver(runId, deps)), true);
  }

  /** Continues any stored run (paused, or cut off by a reload), by its task. */
  resumeRun(run: Pick<StoredRun, 'id' | 'spec'>): Promise<void> {
    if (run.spec.task === 'toy') return this.open(() => this.host.resumeToyDriver(run.id, this.host.dbName), true);
    // A tool-choice task run is an agent run on its own tiny planner, not on the page's engines.
    if (toolTaskOf(run.spec)) return this.open(() => this.host.resumeToolTaskDriver(run.id, this.host.dbName), true);
    return this.resumeStored(run.id);
  }

  pause(): void {
    if (this.host.state === 'running') this.askPause('pause');
  }

  private askPause(cause: PauseAsk['cause']): void {
    this.pauseAsk = { cause, step: (this.host.points.at(-1)?.step ?? 0) + 1, rollouts: this.host.progress?.rollouts ?? null };
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
    const h = this.host;
    const d = this.driver;
    if (this.busy || h.state !== 'paused') return;
    if (!d || d.runId !== h.shownRunId) {
      const run = h.runs.find((r) => r.id === h.shownRunId);
      return run ? this.resumeRun(run) : undefined;
    }
    // A run stopped while it was being set up never ran: its driver is still idle.
    if (d.state !== 'paused' && d.state !== 'idle') return;
    const on = this.driverEngines.get(d);
    if (on && on !== h.engines) return this.resumeStored(d.runId);
    this.pauseWanted = false;
    await this.current.track(this.go());
  }

  private async go(): Promise<void> {
    const h = this.host;
    const d = this.driver!;
    this.dropped = null;
    this.pauseAsk = null;
    if (this.pauseWanted) {
      // The page stopped the run while it was being set up: it is stored, at its start, and can be resumed.
      this.pauseWanted = false;
      h.state = 'paused';
      await this.refreshRuns();
      return;
    }
    h.state = 'running';
    h.progress = { steps: d.steps ?? 0, started: Date.now(), stepsAtStart: h.points.at(-1)?.step ?? 0, rollouts: null };
    // The list gets the new run now; its entry then follows the live steps.
    void this.refreshRuns();
    try {
      await d.run(
        (p) => {
          h.points = [...h.points, p];
          if (h.progress) h.progress = { ...h.progress, rollouts: null };
        },
        { onProgress: (r) => h.progress && (h.progress = { ...h.progress, rollouts: r }), onEval: (e) => (h.evals = [...h.evals, e]) },
      );
    } catch (e) {
      h.error = `Training stopped: ${(e as Error).message}`;
    } finally {
      h.state = d.state;
      h.progress = null;
      h.result = d.result ?? null;
      this.afterRun(d);
      await h.refreshAdapters();
      await this.refreshRuns();
    }
  }

  /** Re-reads the stored runs into the tab (the list, and which agent runs can be resumed); none when unreadable. */
  async refreshRuns(): Promise<void> {
    const h = this.host;
    try {
      h.runs = await listRuns(h.dbName);
    } catch {
      h.runs = [];
    }
  }

  /** Notes once a run stops: a finished run drops how it restarted (moot now); a pause says which step it cut short. */
  private afterRun(d: TrainingDriver): void {
    const h = this.host;
    const ask = this.pauseAsk;
    this.pauseAsk = null;
    if (d.state === 'done') {
      h.notes = [];
      return;
    }
    if (ask && d.state === 'paused' && (h.points.at(-1)?.step ?? 0) < ask.step) {
      const r = ask.rollouts?.step === ask.step ? ask.rollouts : null;
      const played = r ? r.groupsDone * r.groupSize + r.rolloutsDone : null;
      this.dropped = droppedStepText(ask.step, ask.cause, played);
      h.notes = [...h.notes, this.dropped];
    }
  }
}

/** What a pause cost: the step it cut short, whose rollouts so far are dropped (a step is trained on whole or not at all). */
export function droppedStepText(step: number, cause: 'pause' | 'swap', played: number | null): string {
  const by = cause === 'swap' ? 'the model switch' : 'Pause';
  const what = played ? `the ${played} rollout${played === 1 ? '' : 's'} it had played were dropped` : 'its rollouts so far were dropped';
  return `Step ${step} was cut short by ${by}: ${what}, and Resume plays step ${step} again from its start.`;
}

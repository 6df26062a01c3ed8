// The element's one training run (train() / resumeTraining()) from its set-up until it lets go of its engines:
// what the page must stop before it replaces them, and the pause that replacing them causes by itself.
import type { ReactiveControllerHost } from 'lit';
import type { AgentEngines } from '../../agent/loop';
import type { Tool } from '../../tools/tool';
import type { StepMetrics } from '../../trainer/run/metrics';
import type { RunSummary, TrainingRun } from '../../trainer/run/training-run';
import type { PolicyTrainer } from '../../trainer/training-host';
import type { EngineUse } from '../engines/engine-use';
import { driveTraining, resumeElementTraining, startElementTraining, type ElementTrainOptions, type TrainableEngines } from './element-training';

export interface AgentflowTrainStepDetail {
  runId: string;
  metrics: StepMetrics;
}

export interface AgentflowTrainDoneDetail {
  summary: RunSummary;
}

/** A training run the element stopped by itself: the page replaced the engines it ran on. */
export interface AgentflowTrainStoppedDetail {
  runId: string;
  reason: 'engines-replaced';
  message: string;
}

export interface TrainingHost extends ReactiveControllerHost, EventTarget {
  readonly engines: AgentEngines | undefined;
  readonly trainer: PolicyTrainer | undefined;
  readonly dbName: string | undefined;
}

/** The run from its start until it no longer uses its engines. */
interface TrainingOn {
  /** Null while the element still loads its own engines. */
  engines: AgentEngines | null;
  /** Null while it is being set up (stored, checked). */
  run: TrainingRun | null;
  /** A pause was asked for (pause(), the app's engine swap, or the engines replaced under it). */
  pauseWanted: boolean;
  enginesReplaced: boolean;
  ended: Promise<void>;
}

export class ElementTrainingController {
  /** Said when the run was paused by itself (the page replaced its engines). */
  notice: string | null = null;
  private on: TrainingOn | null = null;

  constructor(
    private readonly host: TrainingHost,
    /** The tools the run's rollouts call, read when it starts. */
    private readonly tools: () => Tool[],
    /** The element's own engines (loaded if need be) when the page gave none. */
    private readonly ownEngines: () => Promise<TrainableEngines>,
  ) {}

  train(o: ElementTrainOptions): Promise<RunSummary> {
    return this.drive((on) => startElementTraining(o, on, this.tools(), this.host.dbName));
  }

  resume(runId: string): Promise<RunSummary> {
    return this.drive((on) => resumeElementTraining(runId, on, this.tools(), this.host.dbName));
  }

  pause(): void {
    if (this.on) this.pauseRun(this.on);
  }

  /**
   * The page replaced `old` with other engines. Called synchronously from the setter: a page that disposes the
   * old engines right after must find the run's calls already aborted, or the step dies mid-call ("planner
   * worker stopped") instead of being dropped cleanly.
   */
  enginesReplaced(old: AgentEngines | undefined): void {
    const t = this.on;
    if (t && old && t.engines === old) {
      t.enginesReplaced = true;
      this.pauseRun(t);
    }
  }

  /** The run on the page's engines `engines`, if any: stopping pauses it. */
  use(engines: AgentEngines | undefined): EngineUse | null {
    const t = this.on;
    if (!t || !engines || t.engines !== engines) return null;
    return {
      what: `a training run${t.run ? ` (${t.run.id})` : ''} started through the chat element`,
      kept: 'it is paused with its checkpoints kept; resumeTraining() or the Training tab continues it',
      stop: async () => {
        this.pauseRun(t);
        await t.ended;
      },
    };
  }

  /** The step in progress is dropped, its checkpoints stay; one still being set up stops before its first step. */
  private pauseRun(t: TrainingOn): void {
    t.pauseWanted = true;
    t.run?.pause();
  }

  private async drive(start: (on: TrainableEngines) => Promise<TrainingRun>): Promise<RunSummary> {
    if (this.on) throw new Error(`training run${this.on.run ? ` '${this.on.run.id}'` : ''} is already running; pauseTraining() first`);
    const host = this.host;
    // The page's engines and their optimizer are taken here, before the first await, and the run is set up on
    // them alone: a page that sets other `engines` and `trainer` right after calling train() pauses this run
    // (the setter), and read after an await the new trainer would be paired with the old engines.
    const given: TrainableEngines | null = host.engines ? { engines: host.engines, trainer: host.trainer ?? null } : null;
    let ended!: () => void;
    const t: TrainingOn = { engines: given?.engines ?? null, run: null, pauseWanted: false, enginesReplaced: false, ended: new Promise<void>((r) => (ended = r)) };
    this.on = t;
    this.setNotice(null);
    try {
      const on = given ?? (await this.ownEngines());
      t.engines = on.engines;
      const run = await start(on);
      t.run = run;
      const going = driveTraining(run, {
        onStep: (runId, metrics) => host.dispatchEvent(new CustomEvent<AgentflowTrainStepDetail>('agentflow-train-step', { detail: { runId, metrics }, bubbles: true, composed: true })),
        onProgress: () => undefined,
      });
      // run() marks itself running before its first await, so this pauses a run asked to stop while it was set
      // up before its first step (its record is stored, at its start, and resumes like any paused run).
      if (t.pauseWanted) run.pause();
      const summary = await going;
      if (t.enginesReplaced) this.saySwapPaused(summary);
      host.dispatchEvent(new CustomEvent<AgentflowTrainDoneDetail>('agentflow-train-done', { detail: { summary }, bubbles: true, composed: true }));
      return summary;
    } finally {
      this.on = null;
      ended();
    }
  }

  private saySwapPaused(summary: RunSummary): void {
    const id = summary.runId;
    const message = `Training run '${id}' was paused after ${summary.steps} step${summary.steps === 1 ? '' : 's'}: the page replaced the engines it ran on. Its checkpoints are kept; resumeTraining('${id}') continues it on the new engines.`;
    this.setNotice(message);
    this.host.dispatchEvent(new CustomEvent<AgentflowTrainStoppedDetail>('agentflow-train-stopped', { detail: { runId: id, reason: 'engines-replaced', message }, bubbles: true, composed: true }));
  }

  private setNotice(n: string | null): void {
    this.notice = n;
    this.host.requestUpdate();
  }
}

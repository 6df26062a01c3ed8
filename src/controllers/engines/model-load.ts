// Loading the models the Models & GPU tab's form names: one load at a time, cancellable, with a progress bar
// per engine; the engines go to the app in an `agentflow-engines` event. A planner that loaded while the shared
// model did not is kept on offer ("go on with the planner alone") until the user takes or declines it.
import type { ReactiveControllerHost } from 'lit';
import type { AgentEngines } from '../../agent/loop';
import { servesAllModules } from '../../engine/base-model-view';
import type { LoadProgress } from '../../engine/chat-engine';
import type { PlannerTrainer } from '../../planner/planner-client';
import { ProgressTracker, type ProgressSummary } from '../progress-tracker';
import { enginesLabel } from './engine-use';
import { saveModelChoice, type ModelChoice } from './model-choice';
import type { SizeReport } from './model-files';
import type { LoadedEngines } from './model-loader';

export interface EnginesChosenDetail {
  engines: AgentEngines;
  label: string;
  /** The planner worker's trainer when real models were loaded (training, activating adapters). */
  trainer?: PlannerTrainer;
}

/** `agentflow-models-loading`: a load started or moved on (detail set), or ended (null). */
export interface ModelsLoadingDetail {
  /** What is loading, as the form names it, e.g. 'Qwen/Qwen2.5-0.5B-Instruct + Qwen2.5-1.5B-Instruct-q4f16_1-MLC'. */
  what: string;
  /** Reloading the last models from the cache as the page starts. */
  restoring: boolean;
  percent: number | null;
}

/** A planner that loaded without its shared model, offered to go on with. */
export interface PartialLoad {
  engines: LoadedEngines;
  choice: ModelChoice;
  message: string;
  detail: string;
}

export interface ModelLoadHost extends ReactiveControllerHost, EventTarget {
  readonly dbName: string | undefined;
}

/** What the form would load, in words. */
export function describeChoice(c: ModelChoice): string {
  const planner = c.plannerFromShared ? `the planner from ${c.sharedModel}` : c.plannerModel;
  return c.sharedModel && !c.plannerFromShared ? `${planner} + ${c.sharedModel}` : planner;
}

export class ModelLoad {
  progress: Record<string, ProgressSummary> = {};
  busy = false;
  error: string | null = null;
  /** A note that is not an error (a cancelled load, last models no longer cached). */
  notice: string | null = null;
  partial: PartialLoad | null = null;
  private abort: AbortController | null = null;

  constructor(private readonly host: ModelLoadHost) {}

  set(patch: Partial<Pick<ModelLoad, 'progress' | 'error' | 'notice'>>): void {
    Object.assign(this, patch);
    this.host.requestUpdate();
  }

  choose(detail: EnginesChosenDetail): void {
    this.host.dispatchEvent(new CustomEvent<EnginesChosenDetail>('agentflow-engines', { detail, bubbles: true, composed: true }));
  }

  /** Stops the load in progress (both workers end); the engines in use stay as they were. */
  cancel(): void {
    this.abort?.abort(new DOMException('Cancelled by the user', 'AbortError'));
  }

  /** Lets go of a planner kept for "go on with the planner alone" that the user did not take. */
  dropPartial(): void {
    this.partial?.engines.dispose();
    this.partial = null;
    this.host.requestUpdate();
  }

  /** The user goes on with the planner alone: it serves every module. Returns the choice now in use. */
  usePartial(): ModelChoice | null {
    const p = this.partial;
    if (!p) return null;
    const choice = { ...p.choice, sharedModel: '' };
    this.partial = null;
    this.set({ error: null, progress: Object.fromEntries(Object.entries(this.progress).filter(([k]) => k === 'planner')) });
    void saveModelChoice(choice, this.host.dbName).catch(() => undefined);
    const label = enginesLabel(p.engines.planner.id, null);
    this.choose({ engines: p.engines, trainer: p.engines.trainer, label: p.engines.notes.length ? `${label}; ${p.engines.notes.join('; ')}` : label });
    return choice;
  }

  /**
   * Loads `c`. `restoring`: the page is starting and reloads the last models from the cache only; what is not
   * cached any more is left for the user to download. `after` runs once it ends, whatever happened.
   */
  async load(c: ModelChoice, restoring: boolean, after: () => Promise<void>): Promise<void> {
    const what = describeChoice(c);
    const abort = new AbortController();
    this.abort = abort;
    this.busy = true;
    this.set({ error: null, notice: null, progress: {} });
    const trackers: Record<string, ProgressTracker> = { planner: new ProgressTracker(), shared: new ProgressTracker() };
    this.loading({ what, restoring, percent: null });
    try {
      const { loadEngines } = await import('./model-loader');
      const engines = await loadEngines({
        plannerModel: c.plannerModel,
        plannerFromShared: c.plannerFromShared,
        ...(c.sharedModel ? { sharedModel: c.sharedModel } : {}),
        adapterId: c.adapterId,
        dbName: this.host.dbName,
        signal: abort.signal,
        cacheOnly: restoring,
        onProgress: (which: 'planner' | 'shared', p: LoadProgress) => {
          trackers[which].update(p);
          this.set({ progress: { ...this.progress, [which]: trackers[which].summary() } });
          this.loading({ what, restoring, percent: trackers[which].summary().percent });
        },
      });
      // The bars stay, marked finished, so the user sees what was loaded.
      this.set({ progress: Object.fromEntries(Object.entries(this.progress).map(([k, s]) => [k, { ...s, secondsLeft: null, status: 'loaded' }])) });
      const label = enginesLabel(engines.planner.id, servesAllModules(engines) ? null : engines.shared.id);
      await saveModelChoice(c, this.host.dbName).catch(() => undefined);
      this.choose({ engines, trainer: engines.trainer, label: engines.notes.length ? `${label}; ${engines.notes.join('; ')}` : label });
    } catch (e) {
      await this.failed(e, c, what, restoring, abort.signal.aborted);
    } finally {
      this.busy = false;
      this.abort = null;
      this.host.requestUpdate();
      this.loading(null);
      await after();
    }
  }

  private async failed(e: unknown, c: ModelChoice, what: string, restoring: boolean, cancelled: boolean): Promise<void> {
    const err = e as Error;
    const { SharedModelUnavailableError } = await import('./model-loader');
    const partial = e instanceof SharedModelUnavailableError ? e : null;
    // A planner that loaded while the shared model did not stays on offer, its bar with it.
    if (partial && !cancelled) {
      this.partial = { engines: partial.plannerAlone, choice: c, message: partial.message, detail: partial.detail };
      this.set({ progress: this.progress.planner ? { planner: { ...this.progress.planner, secondsLeft: null, status: 'loaded' } } : {} });
    } else {
      partial?.plannerAlone.dispose();
      this.set({ progress: {} });
    }
    if (this.partial) {
      // Said by the offer itself.
    } else if (cancelled) this.set({ notice: `Loading ${what} was cancelled; nothing changed.` });
    else if (restoring && err?.name === 'ModelNotCachedError') {
      this.set({ notice: `Your last models (${what}) were not reloaded: ${err.message}. Press “${LOAD_BUTTON}” to download them again.` });
    } else {
      const msg = err?.message ?? String(e);
      // The page knows best whether the browser is offline (a worker's fetch only says it failed).
      this.set({ error: navigator.onLine === false && !/offline/i.test(msg) ? `You appear to be offline: ${msg}` : msg });
    }
  }

  /**
   * The planner's worker reports progress for its weight files only (config and tokenizer files are read
   * whole), so its bar ended a few KiB short of the size line, which counts every file a load reads. Once the
   * planner is all in this browser, its finished bar shows the size line's total: the two agree.
   */
  finishBars(planner: SizeReport | null | undefined): void {
    const bar = this.progress.planner;
    if (!bar || bar.status !== 'loaded' || !planner?.complete) return;
    this.set({ progress: { ...this.progress, planner: { ...bar, bytesDone: planner.total, bytesTotal: planner.total, percent: 100 } } });
  }

  private loading(detail: ModelsLoadingDetail | null): void {
    this.host.dispatchEvent(new CustomEvent<ModelsLoadingDetail | null>('agentflow-models-loading', { detail, bubbles: true, composed: true }));
  }
}

export const LOAD_BUTTON = 'Download and load models';
export const DEMO_BUTTON = 'Use the scripted demo';

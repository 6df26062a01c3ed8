// The engines <agentflow-chat> answers and trains on: the page's (its `engines` property) when set, otherwise
// the ones it loads itself, once, from its model attributes on the first question. Kept apart from the element
// so a question, a resume and a training run all take the same engines and see the same lost worker.
import type { ReactiveControllerHost } from 'lit';
import type { AgentEngines } from '../../agent/loop';
import type { LoadProgress } from '../../engine/chat-engine';
import type { PolicyTrainer } from '../../trainer/training-host';
import { ProgressTracker } from '../progress-tracker';
import type { TrainableEngines } from '../training/element-training';
import type { LoadedEngines } from './model-loader';

/** What the element says about the models it may load (its attributes) and the engines the page gave it. */
export interface EnginesHost extends ReactiveControllerHost, EventTarget {
  readonly plannerModel: string | undefined;
  readonly sharedModel: string | undefined;
  readonly plannerFromShared: boolean | undefined;
  readonly adapter: string | undefined;
  readonly dbName: string | undefined;
  readonly engines: AgentEngines | undefined;
  readonly trainer: PolicyTrainer | undefined;
}

export class ElementEngines {
  /** The element's own models while they load: what a progress bar shows. */
  loading: { tracker: ProgressTracker; which: string } | null = null;
  /** A worker behind the engines died: the chat offers to reload the models. */
  lost = false;
  private loaded: LoadedEngines | null = null;

  constructor(private readonly host: EnginesHost) {}

  /** The engines in use now, without loading any. */
  get current(): AgentEngines | null {
    return this.host.engines ?? this.loaded;
  }

  /** The element's attributes name models it can load itself. */
  get canLoad(): boolean {
    return !!this.host.plannerModel || !!this.host.plannerFromShared;
  }

  /** True when no engines are set nor can be loaded from attributes: the chat says so and offers the demo. */
  get none(): boolean {
    return !this.current && !this.canLoad;
  }

  /** The page's engines, or the element's own, loaded on first use. */
  async get(): Promise<AgentEngines> {
    const h = this.host;
    if (h.engines) return h.engines;
    if (this.loaded) return this.loaded;
    if (!this.canLoad) {
      throw new Error('No models are loaded. Load them in the Models & GPU tab, or give this element a planner-model attribute (a URL or Hugging Face repo id), or shared-model with planner-from-shared.');
    }
    const tracker = new ProgressTracker();
    this.setLoading({ tracker, which: 'models' });
    try {
      const { loadEngines } = await import('./model-loader');
      this.loaded = await loadEngines({
        plannerModel: h.plannerModel ?? '',
        plannerFromShared: !!h.plannerFromShared,
        ...(h.sharedModel ? { sharedModel: h.sharedModel } : {}),
        adapterId: h.adapter ?? null,
        dbName: h.dbName,
        onProgress: (which: string, p: LoadProgress) => {
          tracker.update(p);
          this.setLoading({ tracker, which });
        },
      });
      return this.loaded;
    } finally {
      this.setLoading(null);
    }
  }

  /** The models this element loads itself (loading them if need be), with the optimizer their planner brings. */
  async trainable(): Promise<TrainableEngines> {
    const engines = await this.get();
    return { engines, trainer: (engines === this.loaded ? this.loaded.trainer : this.host.trainer) ?? null };
  }

  /**
   * When a worker behind `engines` has died, says so (`say`), marks the engines lost and returns true: engines
   * this element loaded are dropped (the next load starts fresh workers); the host is told with
   * `agentflow-engines-lost` so it can drop its own. Every later question would fail the same way.
   */
  noteLost(engines: AgentEngines, say: (message: string) => void): boolean {
    const lost = engines.planner.gone ?? engines.shared.gone ?? null;
    if (!lost) return false;
    say(`${lost.message}.`);
    this.lost = true;
    if (engines === this.loaded) {
      this.loaded.dispose();
      this.loaded = null;
    }
    this.host.requestUpdate();
    this.host.dispatchEvent(new CustomEvent('agentflow-engines-lost', { detail: { engines, error: lost }, bubbles: true, composed: true }));
    return true;
  }

  /** The "Reload the models" action clears the lost state first. */
  clearLost(): void {
    this.lost = false;
    this.host.requestUpdate();
  }

  private setLoading(l: ElementEngines['loading']): void {
    this.loading = l;
    this.host.requestUpdate();
  }
}

// The one pair of engines the app's tabs share, and swapping it. Loading other models never cuts what runs
// on the loaded ones: whatever runs is stopped first, the way its own Stop or Pause does, and the old engines
// are disposed only then. After a planner loads, the active adapter in settings and the planner's agree.
import type { ReactiveControllerHost } from 'lit';
import type { AgentEngines } from '../../agent/loop';
import type { PlannerTrainer } from '../../planner/planner-client';
import { getSetting, putSetting } from '../../store/settings';
import { ACTIVE_ADAPTER_KEY } from '../training/adapter-activation';
import { describeUses, storedAdapterLabel, type EngineUse } from './engine-use';
import type { EnginesChosenDetail } from './model-load';

/** Rounds of stopping what runs on the loaded engines before a swap gives up (and keeps them). */
const SWAP_STOP_ROUNDS = 5;

export type AppNoticeKind = 'info' | 'error';

export interface AppEnginesHost extends ReactiveControllerHost {
  readonly dbName: string | undefined;
  /** What runs on the loaded engines now, tab by tab. */
  enginesInUse(): EngineUse[];
  /** The app's notice line. */
  say(text: string | null, kind: AppNoticeKind): void;
  /** The Training tab re-reads which adapter is active (from settings). */
  refreshTraining(): void;
}

export class AppEngines {
  /** undefined until models are loaded or the user chooses the scripted demo. */
  engines: AgentEngines | undefined = undefined;
  /** The loaded planner's worker (training, adapters); undefined for the scripted demo and without models. */
  trainer: PlannerTrainer | undefined = undefined;
  label = 'none';
  private loaded: { dispose?: () => void } | null = null;
  /** Engine swaps run one after another: each may first wait for what runs on the old engines to stop. */
  private swaps: Promise<void> = Promise.resolve();

  constructor(private readonly host: AppEnginesHost) {}

  /** Models & GPU chose engines: they replace the loaded ones after any earlier swap. */
  chosen(d: EnginesChosenDetail): void {
    this.swaps = this.swaps.then(() => this.swap(d)).catch((err: unknown) => this.host.say(`Could not switch the models: ${(err as Error)?.message ?? String(err)}`, 'error'));
  }

  /**
   * Puts the chosen engines in place of the loaded ones. Whatever runs on the old ones is stopped first, and
   * the old ones are disposed only then: disposing them under a run cut it mid-call ("planner worker stopped
   * (terminated)") and lost its step.
   */
  private async swap(d: EnginesChosenDetail): Promise<void> {
    const host = this.host;
    const stopped = new Map<string, EngineUse>();
    if (this.loaded !== (d.engines as unknown)) {
      // Something started while the last ones stopped is stopped too (a few rounds at most in practice).
      let uses = host.enginesInUse();
      for (let round = 0; uses.length && round < SWAP_STOP_ROUNDS; round++, uses = host.enginesInUse()) {
        host.say(`Stopping ${describeUses(uses)} to switch to the new models…`, 'info');
        await Promise.all(uses.map((u) => u.stop().catch(() => undefined)));
        for (const u of uses) stopped.set(u.what, u);
      }
      if (uses.length) {
        // Still running after every round (it keeps restarting, or its stop did not take): disposing the old
        // engines would cut it mid-call, so the new ones go instead and nothing that runs is touched.
        (d.engines as { dispose?: () => void }).dispose?.();
        host.say(`Did not switch to ${d.label}: ${describeUses(uses)} kept running on the loaded models. Stop it, then load again.`, 'error');
        return;
      }
      this.loaded?.dispose?.();
    }
    this.loaded = d.engines as { dispose?: () => void };
    this.set(d.engines, d.trainer, d.label);
    host.say(stopped.size ? `Switched to ${d.label}. Stopped first: ${[...stopped.values()].map((u) => `${u.what} (${u.kept})`).join('; ')}.` : null, 'info');
    void this.syncAdapter();
  }

  /** A worker behind the loaded models died: drop them, so every tab says no model is loaded and offers Load. */
  lost(engines: AgentEngines, error: Error): void {
    if (this.engines !== engines) return;
    this.loaded?.dispose?.();
    this.loaded = null;
    this.set(undefined, undefined, 'none');
    this.host.say(`The models stopped (${error.message}). Load them again in Models & GPU.`, 'error');
  }

  /** The Training tab activated an adapter: apply it to the loaded planner (the scripted demo has none). */
  adapterChosen(id: string | null): void {
    const client = this.trainer;
    if (!client) return;
    this.host.say(null, 'info');
    void this.activate(client, id)
      .then(async () => this.labelAdapter((await client.info()).activeAdapter))
      .catch(() => undefined)
      .finally(() => this.host.refreshTraining());
  }

  private set(engines: AgentEngines | undefined, trainer: PlannerTrainer | undefined, label: string): void {
    this.engines = engines;
    this.trainer = trainer;
    this.label = label;
    this.host.requestUpdate();
  }

  private setLabel(label: string): void {
    this.label = label;
    this.host.requestUpdate();
  }

  private labelAdapter(id: string | null): void {
    const base = this.label.replace(/ \[adapter [^\]]*\]$/, '');
    this.setLabel(`${base}${id ? ` [adapter ${id}]` : ''}`);
    // The planner knows an adapter by its id; people by the name it was given (read from storage).
    if (!id) return;
    void storedAdapterLabel(id, this.host.dbName).then((l) => {
      if (this.label === `${base} [adapter ${id}]`) this.setLabel(`${base} [${l}]`);
    });
  }

  /**
   * After a planner loads: the adapter it activated (the form's) becomes the active one in settings, or
   * the one settings name (activated in Training before) is applied; one the planner refuses (made for
   * another base model) is no longer marked active.
   */
  private async syncAdapter(): Promise<void> {
    const client = this.trainer;
    if (!client) return;
    const db = this.host.dbName;
    try {
      const [info, stored] = await Promise.all([client.info(), getSetting<string | null>(ACTIVE_ADAPTER_KEY, db)]);
      if (info.activeAdapter) {
        if (stored !== info.activeAdapter) await putSetting(ACTIVE_ADAPTER_KEY, info.activeAdapter, db);
      } else if (stored) {
        await this.activate(client, stored);
      }
      this.labelAdapter((await client.info()).activeAdapter);
    } catch {
      // The planner went away (another load replaced it): nothing to sync.
    } finally {
      this.host.refreshTraining();
    }
  }

  /** Activates a stored adapter; on failure the planner's real state goes back into settings, and the user is told. */
  private async activate(client: PlannerTrainer, id: string | null): Promise<void> {
    const { activateStoredAdapter } = await import('./model-loader');
    try {
      await activateStoredAdapter(client, id, this.host.dbName);
    } catch (err) {
      this.host.say(`Could not activate the adapter ${id}: ${(err as Error).message}`, 'error');
      await putSetting(ACTIVE_ADAPTER_KEY, (await client.info()).activeAdapter, this.host.dbName).catch(() => undefined);
    }
  }
}

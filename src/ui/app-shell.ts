// The app: four tabs (Chat, Experiments, Training, Models & GPU) sharing one tool registry and one pair
// of engines. The models last loaded come back from the browser's cache when the page starts (Models & GPU
// does it, cancellable); until then, or without any, no engine is loaded and the page says so, offering
// the scripted demo, whose answers are labelled as scripted wherever they show. Loading other models never
// cuts what runs on the loaded ones: Models & GPU asks first, and the swap stops it cleanly (a training run
// is paused with its checkpoints, an experiment or a chat answer is interrupted) before the old engines go.
import { LitElement, css, html, nothing } from 'lit';
import { isScripted } from '../agent/engines-used';
import type { AgentEngines } from '../agent/loop';
import { StorageNotices } from '../controllers/storage-notices';
import type { ToolRegistry } from '../tools/registry';
import type { AgentFlowChat } from './agentflow-chat';
import './agentflow-chat';
import { AppEngines } from '../controllers/engines/app-engines';
import type { EngineUse } from '../controllers/engines/engine-use';
import type { AgentflowExperimentsPanel } from './experiments-panel';
import './experiments-panel';
import type { EnginesChosenDetail, ModelsLoadingDetail } from '../controllers/engines/model-load';
import type { PlannerTrainer } from '../planner/planner-client';
import type { AgentflowModelsPanel } from './models-panel';
import './models-panel';
import { noticeRole, noticeStyles, type NoticeKind } from './notice-styles';
import { ElementTools } from '../controllers/tools/element-tools';
import type { AgentflowTrainingPanel } from './training-panel';
import './training-panel';

export const TABS = [
  { id: 'chat', label: 'Chat' },
  { id: 'experiments', label: 'Experiments' },
  { id: 'training', label: 'Training' },
  { id: 'models', label: 'Models & GPU' },
] as const;
export type TabId = (typeof TABS)[number]['id'];

// Without a hash the page opens on Chat: a first visit meets what the app is for, with a short start (try
// the demo, load a model, train the toy) rather than a table of GPU capabilities (issue 28 item 4).
function tabFromHash(): TabId {
  const h = globalThis.location?.hash.replace(/^#/, '');
  return (TABS.find((t) => t.id === h)?.id ?? 'chat') as TabId;
}

export class AgentFlowApp extends LitElement {
  static override properties = {
    tab: { state: true },
    notice: { state: true },
    noticeKind: { state: true },
    loading: { state: true },
    dbName: { type: String, attribute: 'db-name' },
  };
  /** The IndexedDB database of every tab (default: the app's own); tests give each their own. */
  declare dbName: string | undefined;
  declare tab: TabId;
  declare notice: string | null;
  /** How `notice` is drawn: a swap done is news, not a failure. */
  declare noticeKind: NoticeKind;
  /** Models & GPU is loading models (at start: the last ones, from the cache). */
  declare loading: ModelsLoadingDetail | null;
  /**
   * The tools every tab offers, kept as a lone <agentflow-chat> keeps its own (ElementTools: the built-in
   * tools, the stored switches). The base generator asks the loaded pair's shared engine.
   */
  private readonly toolSet = new ElementTools({ requestUpdate: () => this.requestUpdate() }, async () => {
    if (!this.engines) throw new Error('no model is loaded (load one in Models & GPU, or try the scripted demo)');
    return this.engines.shared;
  });
  /** The engines every tab uses, and swapping them (AppEngines). */
  private readonly shared = new AppEngines(this);
  /** Another tab or the browser took the database away (or holds it up): shown above every tab. */
  private readonly storage = new StorageNotices(this, () => this.dbName);

  constructor() {
    super();
    this.tab = tabFromHash();
    this.notice = null;
    this.noticeKind = 'info';
    this.loading = null;
    void this.toolSet.setUp();
  }

  /** The registry the tabs share. */
  get registry(): ToolRegistry {
    return this.toolSet.registry;
  }

  static override styles = [noticeStyles, css`
    :host { display: block; max-width: 72rem; margin: 0 auto; padding: 1rem; font: 14px/1.45 system-ui, sans-serif; }
    h1 { font-size: 1.4rem; margin: 0 0 0.25rem; }
    .privacy { font-size: 0.9rem; opacity: 0.8; margin: 0 0 0.75rem; }
    [role='tablist'] { display: flex; gap: 0.25rem; border-bottom: 1px solid color-mix(in srgb, currentColor 25%, transparent); margin-bottom: 1rem; flex-wrap: wrap; }
    [role='tab'] { font: inherit; padding: 0.45rem 0.9rem; border: 1px solid transparent; border-bottom: none; background: transparent; color: inherit; cursor: pointer; border-radius: 6px 6px 0 0; }
    [role='tab'][aria-selected='true'] { border-color: color-mix(in srgb, currentColor 25%, transparent); background: color-mix(in srgb, var(--agentflow-accent, #2563eb) 12%, transparent); font-weight: 600; }
    [role='tab']:focus-visible { outline: 2px solid var(--agentflow-accent, #2563eb); outline-offset: 2px; }
    /* A phone's width holds the four tabs on one row with less padding (wrapped, the last tab sat alone below). */
    @media (max-width: 30rem) { [role='tablist'] { gap: 0; } [role='tab'] { padding: 0.45rem 0.5rem; } }
    .engines { font-size: 0.85rem; margin: 0 0 0.75rem; display: flex; gap: 0.5rem; align-items: center; flex-wrap: wrap; }
    .engines button { font: inherit; padding: 0.1rem 0.5rem; cursor: pointer; }
    .engines.none { color: color-mix(in srgb, currentColor 75%, transparent); }
  `];

  override connectedCallback(): void {
    super.connectedCallback();
    this.storage.watch();
    window.addEventListener('hashchange', this.onHash);
    this.addEventListener('agentflow-engines', this.onEngines as EventListener);
    this.addEventListener('agentflow-adapter', this.onAdapter as EventListener);
    this.addEventListener('agentflow-models-loading', this.onLoading as EventListener);
  }

  override disconnectedCallback(): void {
    super.disconnectedCallback();
    this.storage.stop();
    window.removeEventListener('hashchange', this.onHash);
    this.removeEventListener('agentflow-engines', this.onEngines as EventListener);
    this.removeEventListener('agentflow-adapter', this.onAdapter as EventListener);
    this.removeEventListener('agentflow-models-loading', this.onLoading as EventListener);
  }

  private onHash = () => (this.tab = tabFromHash());

  private onLoading = (e: CustomEvent<ModelsLoadingDetail | null>) => {
    this.loading = e.detail;
  };

  private onEngines = (e: CustomEvent<EnginesChosenDetail>) => {
    this.shared.chosen(e.detail);
  };

  /** undefined until models are loaded or the user chooses the scripted demo. */
  get engines(): AgentEngines | undefined {
    return this.shared.engines;
  }

  /** The loaded planner's worker (training, adapters); undefined for the scripted demo and without models. */
  get trainer(): PlannerTrainer | undefined {
    return this.shared.trainer;
  }

  get enginesLabel(): string {
    return this.shared.label;
  }

  /** What runs on the loaded engines now (a training run, an experiment, a chat answer), tab by tab. */
  readonly enginesInUse = (): EngineUse[] => {
    const r = this.renderRoot;
    const users = [
      r.querySelector<AgentflowTrainingPanel>('agentflow-training-panel'),
      r.querySelector<AgentflowExperimentsPanel>('agentflow-experiments-panel'),
      r.querySelector<AgentFlowChat>('agentflow-chat'),
    ];
    return users.flatMap((u) => u?.engineUse() ?? []);
  };

  /** A worker behind the loaded models died: drop them, so every tab says no model is loaded and offers Load. */
  private onEnginesLost = (e: CustomEvent<{ engines: AgentEngines; error: Error }>) => {
    this.shared.lost(e.detail.engines, e.detail.error);
  };

  /** The Training tab activated an adapter: apply it to the loaded planner (the scripted demo has none). */
  private onAdapter = (e: CustomEvent<{ adapterId: string | null }>) => {
    this.shared.adapterChosen(e.detail.adapterId);
  };

  say(text: string | null, kind: NoticeKind): void {
    this.notice = text;
    this.noticeKind = kind;
  }

  private get modelsPanel(): AgentflowModelsPanel | null {
    return this.renderRoot.querySelector('agentflow-models-panel');
  }

  /** The Training tab re-reads which adapter is active (from settings) after the planner refused one. */
  refreshTraining(): void {
    void (this.renderRoot.querySelector('agentflow-training-panel') as { refreshAdapters?: () => Promise<void> } | null)?.refreshAdapters?.();
  }

  /** The chat's "Load a model": Models & GPU, with the planner field focused. */
  private readonly gotoModels = (): void => {
    this.select('models');
    void this.updateComplete.then(async () => {
      const panel = this.modelsPanel;
      await panel?.updateComplete;
      (panel?.renderRoot.querySelector('#planner-model') as HTMLElement | null)?.focus();
    });
  };

  /** The chat's "Train the toy": the Training tab (the toy is its default task), at its start button. */
  private readonly gotoToy = (): void => {
    this.select('training');
    void this.updateComplete.then(async () => {
      const panel = this.renderRoot.querySelector<AgentflowTrainingPanel>('agentflow-training-panel');
      await panel?.updateComplete;
      const start = [...(panel?.renderRoot.querySelectorAll('button') ?? [])].find((b) => /start training/i.test(b.textContent ?? ''));
      (start ?? (this.renderRoot.querySelector('#tab-training') as HTMLElement | null))?.focus();
    });
  };

  select(tab: TabId, focus = false): void {
    this.tab = tab;
    // Experiments and Training store conversations too: the chat's list is re-read when it comes into view.
    if (tab === 'chat') void (this.renderRoot.querySelector('agentflow-chat') as { refreshList?: () => Promise<void> } | null)?.refreshList?.().catch(() => undefined);
    if (globalThis.location && location.hash !== `#${tab}`) history.replaceState(null, '', `#${tab}`);
    if (focus) void this.updateComplete.then(() => (this.renderRoot.querySelector(`#tab-${tab}`) as HTMLElement | null)?.focus());
  }

  private onTabKey(e: KeyboardEvent): void {
    const i = TABS.findIndex((t) => t.id === this.tab);
    const next = e.key === 'ArrowRight' ? (i + 1) % TABS.length : e.key === 'ArrowLeft' ? (i - 1 + TABS.length) % TABS.length : e.key === 'Home' ? 0 : e.key === 'End' ? TABS.length - 1 : -1;
    if (next < 0) return;
    e.preventDefault();
    this.select(TABS[next].id, true);
  }

  private renderEngines() {
    const l = this.loading;
    if (l) {
      return html`<p class="engines" data-testid="engines" role="status">
        ${l.restoring ? `Loading your last models (${l.what}) from this browser's cache` : `Loading ${l.what}`}${l.percent === null ? '…' : `: ${Math.round(l.percent)}%`}
        <button type="button" @click=${() => this.modelsPanel?.cancelLoad()}>Cancel</button>
      </p>`;
    }
    if (!this.engines) {
      return html`<p class="engines none" data-testid="engines">No model is loaded: load models in Models & GPU, or try the scripted demo from Chat.</p>`;
    }
    const demo = isScripted(this.engines);
    return html`<p class="engines" data-testid="engines">Engines: ${this.enginesLabel}${demo ? ' — answers are scripted, no model writes them. Load models in Models & GPU.' : ''}</p>`;
  }

  override render() {
    const storage = this.storage.notice;
    const loadingText = this.loading ? `Loading ${this.loading.restoring ? 'your last models' : 'models'} (${this.loading.what})…` : null;
    return html`
      <header>
        <h1>AgentFlow in the browser</h1>
        <p class="privacy">Everything runs on this device: models on your GPU, memory in this browser's storage. Nothing is sent anywhere unless you turn on a tool that uses the network; a model is downloaded, or its size checked, only when you press the button for it in Models &amp; GPU.</p>
      </header>
      ${this.renderEngines()}
      ${storage
        ? html`<p role="alert" class="notice error" data-testid="storage-banner">${storage.message}
            ${storage.kind === 'blocked' ? '' : html`<button type="button" @click=${() => location.reload()}>Reload</button>`}</p>`
        : ''}
      ${this.notice ? html`<p role=${noticeRole(this.noticeKind)} class="notice ${this.noticeKind}" data-testid="app-notice">${this.notice}</p>` : ''}
      <div role="tablist" aria-label="Sections" @keydown=${this.onTabKey}>
        ${TABS.map(
          (t) => html`<button role="tab" id=${`tab-${t.id}`} aria-selected=${this.tab === t.id ? 'true' : 'false'} aria-controls=${`panel-${t.id}`} tabindex=${this.tab === t.id ? 0 : -1} @click=${() => this.select(t.id)}>${t.label}</button>`,
        )}
      </div>
      <section role="tabpanel" id="panel-chat" aria-labelledby="tab-chat" ?hidden=${this.tab !== 'chat'}>
        <agentflow-chat db-name=${this.dbName ?? nothing} .hideStorageNotices=${true} .engines=${this.engines} .registry=${this.registry} .modelsLoading=${loadingText} .loadModelAction=${this.gotoModels} .trainToyAction=${this.gotoToy} @agentflow-engines-lost=${this.onEnginesLost}></agentflow-chat>
      </section>
      <section role="tabpanel" id="panel-experiments" aria-labelledby="tab-experiments" ?hidden=${this.tab !== 'experiments'}>
        <agentflow-experiments-panel db-name=${this.dbName ?? nothing} .engines=${this.engines} .registry=${this.registry}></agentflow-experiments-panel>
      </section>
      <section role="tabpanel" id="panel-training" aria-labelledby="tab-training" ?hidden=${this.tab !== 'training'}>
        <agentflow-training-panel db-name=${this.dbName ?? nothing} .engines=${this.engines} .trainer=${this.trainer} .registry=${this.registry}></agentflow-training-panel>
      </section>
      <section role="tabpanel" id="panel-models" aria-labelledby="tab-models" ?hidden=${this.tab !== 'models'}>
        <agentflow-models-panel restore db-name=${this.dbName ?? nothing} .registry=${this.registry} .enginesInUse=${this.enginesInUse} current=${this.enginesLabel}></agentflow-models-panel>
      </section>
    `;
  }
}
if (!customElements.get('agentflow-app')) customElements.define('agentflow-app', AgentFlowApp);

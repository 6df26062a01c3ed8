// The app: four tabs (Chat, Experiments, Training, Models & GPU) sharing one tool registry and one pair
// of engines. Until real models are loaded the scripted demo engines answer, and the page says so.
import { LitElement, css, html } from 'lit';
import type { AgentEngines } from '../agent/loop';
import { ToolRegistry } from '../tools/registry';
import { registerBuiltinTools } from '../tools/builtin';
import './agentflow-chat';
import { scriptedDemoEngines } from './demo-engines';
import './experiments-panel';
import type { EnginesChosenDetail } from './models-panel';
import './models-panel';
import { restoreToolSwitches } from './tool-switches';
import './training-panel';

export const TABS = [
  { id: 'chat', label: 'Chat' },
  { id: 'experiments', label: 'Experiments' },
  { id: 'training', label: 'Training' },
  { id: 'models', label: 'Models & GPU' },
] as const;
export type TabId = (typeof TABS)[number]['id'];

// Without a hash the page opens on Models & GPU: a first visit has to check WebGPU and load models
// before the agent can answer for real.
function tabFromHash(): TabId {
  const h = globalThis.location?.hash.replace(/^#/, '');
  return (TABS.find((t) => t.id === h)?.id ?? 'models') as TabId;
}

export class AgentFlowApp extends LitElement {
  static override properties = {
    tab: { state: true },
    engines: { state: true },
    enginesLabel: { state: true },
    notice: { state: true },
  };
  declare tab: TabId;
  declare engines: AgentEngines;
  declare enginesLabel: string;
  declare notice: string | null;
  readonly registry = new ToolRegistry();
  private loaded: { dispose?: () => void } | null = null;

  constructor() {
    super();
    this.tab = tabFromHash();
    this.engines = scriptedDemoEngines();
    this.enginesLabel = 'scripted demo (no model)';
    this.notice = null;
    registerBuiltinTools(this.registry, { engine: () => this.engines.shared });
    void restoreToolSwitches(this.registry);
  }

  static override styles = css`
    :host { display: block; max-width: 72rem; margin: 0 auto; padding: 1rem; font: 14px/1.45 system-ui, sans-serif; }
    h1 { font-size: 1.4rem; margin: 0 0 0.25rem; }
    .privacy { font-size: 0.9rem; opacity: 0.8; margin: 0 0 0.75rem; }
    [role='tablist'] { display: flex; gap: 0.25rem; border-bottom: 1px solid color-mix(in srgb, currentColor 25%, transparent); margin-bottom: 1rem; flex-wrap: wrap; }
    [role='tab'] { font: inherit; padding: 0.45rem 0.9rem; border: 1px solid transparent; border-bottom: none; background: transparent; color: inherit; cursor: pointer; border-radius: 6px 6px 0 0; }
    [role='tab'][aria-selected='true'] { border-color: color-mix(in srgb, currentColor 25%, transparent); background: color-mix(in srgb, var(--agentflow-accent, #2563eb) 12%, transparent); font-weight: 600; }
    [role='tab']:focus-visible { outline: 2px solid var(--agentflow-accent, #2563eb); outline-offset: 2px; }
    .engines { font-size: 0.85rem; margin: 0 0 0.75rem; }
    .demo { color: #92400e; }
    .notice { color: var(--agentflow-error-color, #b00020); }
  `;

  override connectedCallback(): void {
    super.connectedCallback();
    window.addEventListener('hashchange', this.onHash);
    this.addEventListener('agentflow-engines', this.onEngines as EventListener);
    this.addEventListener('agentflow-adapter', this.onAdapter as EventListener);
  }

  override disconnectedCallback(): void {
    super.disconnectedCallback();
    window.removeEventListener('hashchange', this.onHash);
    this.removeEventListener('agentflow-engines', this.onEngines as EventListener);
    this.removeEventListener('agentflow-adapter', this.onAdapter as EventListener);
  }

  private onHash = () => (this.tab = tabFromHash());

  private onEngines = (e: CustomEvent<EnginesChosenDetail>) => {
    if (this.loaded !== (e.detail.engines as unknown)) this.loaded?.dispose?.();
    this.loaded = e.detail.engines as { dispose?: () => void };
    this.engines = e.detail.engines;
    this.enginesLabel = e.detail.label;
  };

  /** The Training tab activated an adapter: apply it to the loaded planner (the scripted demo has none). */
  private onAdapter = (e: CustomEvent<{ adapterId: string | null }>) => {
    const client = (this.engines.planner as { client?: import('../engine/planner-client').PlannerClient }).client;
    if (!client) return;
    void import('./model-loader')
      .then(({ activateStoredAdapter }) => activateStoredAdapter(client, e.detail.adapterId))
      .then(() => (this.enginesLabel = `${this.enginesLabel.replace(/ \[adapter [^\]]*\]$/, '')}${e.detail.adapterId ? ` [adapter ${e.detail.adapterId}]` : ''}`))
      .catch((err) => (this.notice = `Could not activate the adapter: ${(err as Error).message}`));
  };

  select(tab: TabId, focus = false): void {
    this.tab = tab;
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

  override render() {
    const demo = this.enginesLabel.startsWith('scripted');
    return html`
      <header>
        <h1>AgentFlow in the browser</h1>
        <p class="privacy">Everything runs on this device: models on your GPU, memory in this browser's storage. Nothing is sent anywhere unless you turn on a tool that uses the network.</p>
      </header>
      <p class="engines ${demo ? 'demo' : ''}" data-testid="engines">Engines: ${this.enginesLabel}${demo ? ' — answers are scripted until you load models in Models & GPU.' : ''}</p>
      ${this.notice ? html`<p role="alert" class="notice">${this.notice}</p>` : ''}
      <div role="tablist" aria-label="Sections" @keydown=${this.onTabKey}>
        ${TABS.map(
          (t) => html`<button role="tab" id=${`tab-${t.id}`} aria-selected=${this.tab === t.id ? 'true' : 'false'} aria-controls=${`panel-${t.id}`} tabindex=${this.tab === t.id ? 0 : -1} @click=${() => this.select(t.id)}>${t.label}</button>`,
        )}
      </div>
      <section role="tabpanel" id="panel-chat" aria-labelledby="tab-chat" ?hidden=${this.tab !== 'chat'}>
        <agentflow-chat .engines=${this.engines} .registry=${this.registry}></agentflow-chat>
      </section>
      <section role="tabpanel" id="panel-experiments" aria-labelledby="tab-experiments" ?hidden=${this.tab !== 'experiments'}>
        <agentflow-experiments-panel .engines=${this.engines} .registry=${this.registry}></agentflow-experiments-panel>
      </section>
      <section role="tabpanel" id="panel-training" aria-labelledby="tab-training" ?hidden=${this.tab !== 'training'}>
        <agentflow-training-panel .engines=${this.engines} .registry=${this.registry}></agentflow-training-panel>
      </section>
      <section role="tabpanel" id="panel-models" aria-labelledby="tab-models" ?hidden=${this.tab !== 'models'}>
        <agentflow-models-panel .registry=${this.registry} current=${this.enginesLabel}></agentflow-models-panel>
      </section>
    `;
  }
}
if (!customElements.get('agentflow-app')) customElements.define('agentflow-app', AgentFlowApp);

// The user's tool switches, one state per tool that says whether the agent will call it: off, on, or (a
// tool whose card says it uses the network) on but waiting for the user's permission to use the network,
// given with its own button. Switching a network tool off also withdraws that permission. Saved in
// settings so consent survives a reload. Below them, the agent's one decoding switch: whether module replies
// are decoded under their JSON Schemas (AgentConfig.constrainReplies), saved in settings too.
import { LitElement, css, html, nothing } from 'lit';
import { readConstrainReplies, saveConstrainReplies, saveToolSwitches } from '../controllers/tools/tool-settings';
import type { ToolRegistry, ToolStatus } from '../tools/registry';

/** Whether the agent will call the tool, in words. */
export function toolState(t: Pick<ToolStatus, 'enabled' | 'available'>): 'off' | 'on' | 'on, waiting for network permission' {
  return !t.enabled ? 'off' : t.available ? 'on' : 'on, waiting for network permission';
}

// Every switch element on the page (the chat's and the Models tab's) shows the same choice.
const constrainListeners = new Set<(on: boolean) => void>();

export class AgentflowToolSwitches extends LitElement {
  static override properties = { registry: { attribute: false }, dbName: { type: String, attribute: 'db-name' }, list: { state: true }, constrainReplies: { state: true } };
  declare registry: ToolRegistry | undefined;
  declare dbName: string | undefined;
  declare list: ToolStatus[];
  declare constrainReplies: boolean;
  private unsubscribe: (() => void) | null = null;
  private readonly onConstrain = (on: boolean) => (this.constrainReplies = on);

  constructor() {
    super();
    this.list = [];
    this.constrainReplies = true;
  }

  override connectedCallback(): void {
    super.connectedCallback();
    constrainListeners.add(this.onConstrain);
    void readConstrainReplies(this.dbName).then((on) => (this.constrainReplies = on));
  }

  private setConstrainReplies(on: boolean): void {
    saveConstrainReplies(on, this.dbName);
    for (const l of constrainListeners) l(on);
  }

  static override styles = css`
    :host { display: block; }
    ul { list-style: none; padding: 0; margin: 0.25rem 0; }
    li { margin: 0.2rem 0; }
    .net { font-size: 0.75em; border: 1px solid currentColor; border-radius: 4px; padding: 0 0.25rem; margin-left: 0.35rem; }
    .state { font-size: 0.85em; margin-left: 0.35rem; }
    .state.waiting { color: #92400e; }
    /* Under its tool, not after the state: on a phone the state and the button wrapped into each other. */
    .allow { display: block; margin: 0.2rem 0 0 1.5rem; font: inherit; font-size: 0.85em; padding: 0.05rem 0.4rem; cursor: pointer; }
    .desc { font-size: 0.8em; opacity: 0.75; margin-left: 1.5rem; }
    .constrain { margin: 0.5rem 0 0.25rem; }
    input:focus-visible, button:focus-visible { outline: 2px solid var(--agentflow-accent, #2563eb); outline-offset: 2px; }
  `;

  override willUpdate(changed: Map<string, unknown>): void {
    if (changed.has('registry')) {
      this.unsubscribe?.();
      this.unsubscribe = this.registry?.subscribe(() => (this.list = this.registry!.list())) ?? null;
      this.list = this.registry?.list() ?? [];
    }
  }

  override disconnectedCallback(): void {
    super.disconnectedCallback();
    constrainListeners.delete(this.onConstrain);
    this.unsubscribe?.();
    this.unsubscribe = null;
  }

  private save(): void {
    if (this.registry) saveToolSwitches(this.registry, this.dbName);
  }

  override render() {
    const reg = this.registry;
    if (!reg) return nothing;
    return html`<ul part="list" data-testid="tool-switches">
      ${this.list.map((t) => {
        const state = toolState(t);
        const waiting = state === 'on, waiting for network permission';
        return html`<li data-tool=${t.name}>
          <label>
            <input type="checkbox" .checked=${t.enabled} aria-describedby=${`state-${t.name}`} @change=${(e: Event) => {
              const on = (e.target as HTMLInputElement).checked;
              reg.setEnabled(t.name, on);
              // Off withdraws consent too: switching a network tool back on asks again.
              if (!on && t.usesNetwork) reg.revokeNetwork(t.name);
              this.save();
            }} />
            ${t.name}${t.usesNetwork ? html`<span class="net" data-testid="network-mark" title="Sends data over the network">network</span>` : nothing}
          </label>
          <span id=${`state-${t.name}`} class="state ${waiting ? 'waiting' : ''}" data-testid="tool-state">${state}</span>
          ${waiting
            ? html`<button type="button" class="allow" @click=${() => {
                reg.allowNetwork(t.name);
                this.save();
              }}>Allow ${t.name} to use the network</button>`
            : nothing}
          ${t.usesNetwork && t.available ? html`<div class="desc">Sends the agent's queries off this device; switch it off to stop.</div>` : nothing}
        </li>`;
      })}
    </ul>
    <div class="constrain">
      <label>
        <input type="checkbox" data-testid="constrain-replies" .checked=${this.constrainReplies} aria-describedby="constrain-desc" @change=${(e: Event) => this.setConstrainReplies((e.target as HTMLInputElement).checked)} />
        Constrain replies to their JSON shape
      </label>
      <div id="constrain-desc" class="desc">The planner can only name an enabled tool, the executor only write the tool's inputs, the verifier only say STOP or CONTINUE. Off: replies are free text and read as well as they can be.</div>
    </div>`;
  }
}
if (!customElements.get('agentflow-tool-switches')) customElements.define('agentflow-tool-switches', AgentflowToolSwitches);

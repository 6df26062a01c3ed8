// The user's tool switches: on/off per tool and, for tools whose card says they use the network, a
// separate permission that stays off until the user gives it. Saved in settings so consent survives a
// reload.
import { LitElement, css, html, nothing } from 'lit';
import { getSetting, putSetting } from '../store/settings';
import type { ToolRegistry, ToolStatus, ToolSwitches } from '../tools/registry';

export const TOOL_SWITCHES_KEY = 'toolSwitches';

export async function restoreToolSwitches(registry: ToolRegistry, dbName?: string): Promise<void> {
  const saved = await getSetting<Record<string, ToolSwitches>>(TOOL_SWITCHES_KEY, dbName).catch(() => undefined);
  if (saved) registry.applySwitches(saved);
}

export class AgentflowToolSwitches extends LitElement {
  static override properties = { registry: { attribute: false }, dbName: { type: String, attribute: 'db-name' }, list: { state: true } };
  declare registry: ToolRegistry | undefined;
  declare dbName: string | undefined;
  declare list: ToolStatus[];
  private unsubscribe: (() => void) | null = null;

  constructor() {
    super();
    this.list = [];
  }

  static override styles = css`
    :host { display: block; }
    ul { list-style: none; padding: 0; margin: 0.25rem 0; }
    li { margin: 0.2rem 0; }
    .net { font-size: 0.75em; border: 1px solid currentColor; border-radius: 4px; padding: 0 0.25rem; margin-left: 0.35rem; }
    .allow { margin-left: 1.5rem; display: block; }
    .desc { font-size: 0.8em; opacity: 0.75; margin-left: 1.5rem; }
    input:focus-visible { outline: 2px solid var(--agentflow-accent, #2563eb); outline-offset: 2px; }
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
    this.unsubscribe?.();
    this.unsubscribe = null;
  }

  private save(): void {
    if (this.registry) void putSetting(TOOL_SWITCHES_KEY, this.registry.exportSwitches(), this.dbName).catch(() => undefined);
  }

  override render() {
    const reg = this.registry;
    if (!reg) return nothing;
    return html`<ul part="list" data-testid="tool-switches">
      ${this.list.map(
        (t) => html`<li data-tool=${t.name}>
          <label>
            <input type="checkbox" .checked=${t.enabled} @change=${(e: Event) => {
              reg.setEnabled(t.name, (e.target as HTMLInputElement).checked);
              this.save();
            }} />
            ${t.name}${t.usesNetwork ? html`<span class="net" data-testid="network-mark" title="Sends data over the network">network</span>` : nothing}
          </label>
          ${t.usesNetwork
            ? html`<label class="allow">
                <input type="checkbox" .checked=${t.networkAllowed} @change=${(e: Event) => {
                  if ((e.target as HTMLInputElement).checked) reg.allowNetwork(t.name);
                  else reg.revokeNetwork(t.name);
                  this.save();
                }} />
                Allow ${t.name} to send data over the network
              </label>`
            : nothing}
          ${t.enabled && !t.available ? html`<div class="desc">Off until you allow network use.</div>` : nothing}
        </li>`,
      )}
    </ul>`;
  }
}
if (!customElements.get('agentflow-tool-switches')) customElements.define('agentflow-tool-switches', AgentflowToolSwitches);

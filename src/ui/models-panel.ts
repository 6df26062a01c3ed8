// Models & GPU: the WebGPU report, the choice of models, download progress (bytes, percent, time left),
// the models cached in this browser with their sizes and a delete button, and plain warnings when WebGPU
// is missing or memory looks too small. Also the privacy switches for network tools.
import './training-storage-panel';
import { servesAllModules } from '../engine/base-model-view';
import { LitElement, css, html, nothing } from 'lit';
import type { AgentEngines } from '../agent/loop';
import type { GpuCapabilities } from '../gpu/device';
import type { LoadProgress } from '../engine/types';
import type { ToolRegistry } from '../tools/registry';
import { scriptedDemoEngines } from './demo-engines';
import { deleteCachedModel, listCachedModels, type CachedModel } from './model-cache';
import { ProgressTracker, formatBytes, formatSeconds, type ProgressSummary } from './progress-tracker';
import { resourceWarnings } from './resource-warnings';
import './gpu-capabilities';
import './tool-switches';

export const DEFAULT_PLANNER_MODEL = 'Qwen/Qwen2.5-0.5B-Instruct';
export const SHARED_MODEL_CHOICES = ['Qwen2.5-0.5B-Instruct-q4f16_1-MLC', 'Qwen2.5-1.5B-Instruct-q4f16_1-MLC', 'Qwen2.5-3B-Instruct-q4f16_1-MLC'];
export interface EnginesChosenDetail {
  engines: AgentEngines;
  label: string;
  /** The planner worker's client when real models were loaded (to activate adapters). */
  plannerClient?: unknown;
}

export class AgentflowModelsPanel extends LitElement {
  static override properties = {
    registry: { attribute: false },
    dbName: { type: String, attribute: 'db-name' },
    current: { type: String },
    caps: { state: true },
    gpuError: { state: true },
    storage: { state: true },
    cached: { state: true },
    progress: { state: true },
    busy: { state: true },
    error: { state: true },
    plannerFromShared: { state: true },
  };
  declare registry: ToolRegistry | undefined;
  declare dbName: string | undefined;
  /** Label of the engines in use (set by the app). */
  declare current: string;
  declare caps: GpuCapabilities | undefined;
  declare gpuError: string | undefined;
  declare storage: { quota?: number; usage?: number } | null;
  declare cached: CachedModel[] | null;
  declare progress: Record<string, ProgressSummary>;
  declare busy: boolean;
  declare error: string | null;
  /** The planner reads the shared model's web-llm download (one download for both engines). */
  declare plannerFromShared: boolean;

  constructor() {
    super();
    this.current = 'none';
    this.storage = null;
    this.cached = null;
    this.progress = {};
    this.busy = false;
    this.error = null;
    this.plannerFromShared = false;
  }

  static override styles = css`
    :host { display: block; }
    section { margin-bottom: 1.5rem; }
    h3 { font-size: 1.05rem; margin: 0.5rem 0; }
    label.field { display: grid; gap: 0.2rem; margin: 0.4rem 0; max-width: 32rem; }
    input[type='text'], input:not([type]) { font: inherit; padding: 0.3rem; }
    button { font: inherit; padding: 0.25rem 0.6rem; cursor: pointer; }
    button:focus-visible, input:focus-visible { outline: 2px solid var(--agentflow-accent, #2563eb); outline-offset: 2px; }
    .warn { color: var(--agentflow-error-color, #b00020); }
    table { border-collapse: collapse; }
    td, th { padding: 0.2rem 0.6rem; text-align: left; border-bottom: 1px solid color-mix(in srgb, currentColor 15%, transparent); }
    td.num { text-align: right; font-variant-numeric: tabular-nums; }
    progress { width: min(32rem, 100%); }
    .row { display: flex; gap: 0.5rem; flex-wrap: wrap; align-items: center; }
    label.check { display: flex; gap: 0.4rem; align-items: baseline; margin: 0.4rem 0; max-width: 32rem; }
  `;

  override connectedCallback(): void {
    super.connectedCallback();
    void this.refreshCache();
    void navigator.storage?.estimate?.().then((e) => (this.storage = e)).catch(() => undefined);
    this.addEventListener('gpu-capabilities', this.onCaps as EventListener);
  }

  override disconnectedCallback(): void {
    super.disconnectedCallback();
    this.removeEventListener('gpu-capabilities', this.onCaps as EventListener);
  }

  private onCaps = (e: CustomEvent<{ caps?: GpuCapabilities; error?: string }>) => {
    this.caps = e.detail.caps;
    this.gpuError = e.detail.error;
  };

  async refreshCache(): Promise<void> {
    try {
      this.cached = await listCachedModels();
    } catch (e) {
      this.cached = [];
      this.error = `Could not read the model cache: ${(e as Error).message}`;
    }
  }

  private async deleteModel(m: CachedModel): Promise<void> {
    await deleteCachedModel(m.key);
    await this.refreshCache();
  }

  private choose(detail: EnginesChosenDetail): void {
    this.dispatchEvent(new CustomEvent<EnginesChosenDetail>('agentflow-engines', { detail, bubbles: true, composed: true }));
  }

  private async load(): Promise<void> {
    const root = this.renderRoot;
    const planner = (root.querySelector('#planner-model') as HTMLInputElement).value.trim() || DEFAULT_PLANNER_MODEL;
    const shared = (root.querySelector('#shared-model') as HTMLInputElement).value.trim();
    const adapter = (root.querySelector('#adapter-id') as HTMLInputElement | null)?.value.trim() || null;
    this.busy = true;
    this.error = null;
    const trackers: Record<string, ProgressTracker> = { planner: new ProgressTracker(), shared: new ProgressTracker() };
    try {
      const { loadEngines } = await import('./model-loader');
      const engines = await loadEngines({
        plannerModel: planner,
        plannerFromShared: this.plannerFromShared,
        ...(shared ? { sharedModel: shared } : {}),
        adapterId: adapter,
        dbName: this.dbName,
        onProgress: (which: 'planner' | 'shared', p: LoadProgress) => {
          trackers[which].update(p);
          this.progress = { ...this.progress, [which]: trackers[which].summary() };
        },
      });
      // The bars stay, marked finished, so the user sees what was loaded.
      this.progress = Object.fromEntries(Object.entries(this.progress).map(([k, s]) => [k, { ...s, secondsLeft: null, status: 'loaded' }]));
      const label = servesAllModules(engines) ? `${engines.planner.id} (all modules)` : `${engines.planner.id} + ${engines.shared.id}`;
      this.choose({ engines, label: engines.notes.length ? `${label}; ${engines.notes.join('; ')}` : label });
    } catch (e) {
      this.error = (e as Error).message ?? String(e);
    } finally {
      this.busy = false;
      void this.refreshCache();
    }
  }

  private renderProgress(which: string, s: ProgressSummary) {
    const pct = s.percent === null ? null : Math.round(s.percent);
    return html`<div class="progress" data-testid=${`progress-${which}`}>
      <label>
        ${which === 'planner' ? 'Planner' : 'Shared model'}: ${formatBytes(s.bytesDone)} of ${formatBytes(s.bytesTotal)}${pct === null ? '' : ` (${pct}%)`}${s.secondsLeft !== null && (pct ?? 0) < 100 ? `, about ${formatSeconds(s.secondsLeft)} left` : ''}
        <br /><progress max="100" .value=${pct ?? 0}></progress>
      </label>
      <div><small>${s.status}</small></div>
    </div>`;
  }

  override render() {
    const warnings = resourceWarnings(this.caps, this.gpuError, this.storage);
    return html`
      <section aria-labelledby="gpu-h">
        <h3 id="gpu-h">WebGPU</h3>
        <gpu-capabilities></gpu-capabilities>
        ${warnings.length ? html`<ul class="warn" data-testid="resource-warnings">${warnings.map((w) => html`<li>${w}</li>`)}</ul>` : nothing}
      </section>
      <section aria-labelledby="models-h">
        <h3 id="models-h">Models</h3>
        <p>In use: <strong data-testid="engines-in-use">${this.current}</strong></p>
        <label class="field">Planner model (Hugging Face repo id or URL of a folder with config.json, model.safetensors, tokenizer.json; or of a web-llm build such as mlc-ai/Qwen2.5-0.5B-Instruct-q4f16_1-MLC, read 4-bit)
          <input id="planner-model" type="text" value=${DEFAULT_PLANNER_MODEL} autocomplete="off" ?disabled=${this.plannerFromShared} />
        </label>
        <label class="check">
          <input id="planner-from-shared" type="checkbox" .checked=${this.plannerFromShared} @change=${(e: Event) => (this.plannerFromShared = (e.target as HTMLInputElement).checked)} />
          Planner uses the shared model's download (its 4-bit web-llm build; one download for both engines, the adapter trains on the 4-bit weights)
        </label>
        <label class="field">Shared model for executor, verifier and generator (web-llm id; empty: the planner does everything)
          <input id="shared-model" type="text" list="shared-models" value=${SHARED_MODEL_CHOICES[1]} autocomplete="off" />
          <datalist id="shared-models">${SHARED_MODEL_CHOICES.map((m) => html`<option value=${m}></option>`)}</datalist>
        </label>
        <label class="field">LoRA adapter to activate (optional; see Training)
          <input id="adapter-id" type="text" autocomplete="off" />
        </label>
        <div class="row">
          <button type="button" ?disabled=${this.busy || !!this.gpuError} @click=${() => this.load()}>Download and load models</button>
          <button type="button" ?disabled=${this.busy} @click=${() => this.choose({ engines: scriptedDemoEngines(), label: 'scripted demo (no model)' })}>Use the scripted demo</button>
        </div>
        ${Object.entries(this.progress).map(([k, s]) => this.renderProgress(k, s))}
        ${this.error ? html`<p class="warn" role="alert">${this.error}</p>` : nothing}
      </section>
      <section aria-labelledby="cache-h">
        <h3 id="cache-h">Cached models</h3>
        ${this.cached === null
          ? html`<p aria-busy="true">Reading the cache…</p>`
          : this.cached.length === 0
            ? html`<p data-testid="cache-empty">No models are stored in this browser yet.</p>`
            : html`<table data-testid="cached-models">
                <thead><tr><th scope="col">Model</th><th scope="col">Files</th><th scope="col">Size</th><th scope="col"><span class="sr">Actions</span></th></tr></thead>
                <tbody>
                  ${this.cached.map(
                    (m) => html`<tr>
                      <td>${m.label}</td><td class="num">${m.files}</td><td class="num">${formatBytes(m.bytes)}</td>
                      <td><button type="button" aria-label=${`Delete cached model ${m.label}`} @click=${() => this.deleteModel(m)}>Delete</button></td>
                    </tr>`,
                  )}
                </tbody>
              </table>`}
        <button type="button" @click=${() => this.refreshCache()}>Refresh</button>
      </section>
      <section aria-labelledby="training-storage-h">
        <h3 id="training-storage-h">Training storage</h3>
        <agentflow-training-storage db-name=${this.dbName ?? nothing}></agentflow-training-storage>
      </section>
      <section aria-labelledby="privacy-h">
        <h3 id="privacy-h">Privacy and tools</h3>
        <p>Models, conversations, memory and adapters stay in this browser. Tools marked <em>network</em> send the agent's queries off this device (to Wikipedia or your search endpoint); they are off until you allow them here.</p>
        <agentflow-tool-switches .registry=${this.registry} db-name=${this.dbName ?? nothing}></agentflow-tool-switches>
      </section>
    `;
  }
}
if (!customElements.get('agentflow-models-panel')) customElements.define('agentflow-models-panel', AgentflowModelsPanel);

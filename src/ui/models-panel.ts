// Models & GPU: the WebGPU report, the choice of models, download progress (bytes, percent, time left),
// the models cached in this browser with their sizes and a delete button, and plain warnings when WebGPU
// is missing or memory looks too small. Also the privacy switches for network tools. While something runs on
// the loaded models (the app says what: `enginesInUse`), loading others or the demo asks first.
//
// The panel holds the form; its controllers load (ModelLoad), size (DownloadSizes), list the cache
// (CachedModels) and ask before a swap (SwapQuestion).
import './training-storage-panel';
import { LitElement, html, nothing } from 'lit';
import type { GpuCapabilities } from '../gpu/device';
import type { ToolRegistry } from '../tools/registry';
import { CachedModels } from '../controllers/engines/cached-models';
import { scriptedDemoEngines } from '../controllers/engines/demo-engines';
import { DownloadSizes } from '../controllers/engines/download-sizes';
import type { EngineUse } from '../controllers/engines/engine-use';
import { hubIdNote } from '../controllers/engines/load-failure';
import type { CachedModel } from '../controllers/engines/model-cache';
import { loadModelChoice, saveModelChoice, type ModelChoice } from '../controllers/engines/model-choice';
import { DEMO_BUTTON, LOAD_BUTTON, ModelLoad } from '../controllers/engines/model-load';
import { SwapQuestion } from '../controllers/engines/swap-question';
import { modelsPanelStyles } from './models-panel-styles';
import { renderCachedModels, renderConfirmSwap, renderPartial, renderProgress, renderSizes } from './models-panel-views';
import { resourceWarnings } from './resource-warnings';
import './gpu-capabilities';
import './tool-switches';

export const DEFAULT_PLANNER_MODEL = 'Qwen/Qwen2.5-0.5B-Instruct';
export const SHARED_MODEL_CHOICES = ['Qwen2.5-0.5B-Instruct-q4f16_1-MLC', 'Qwen2.5-1.5B-Instruct-q4f16_1-MLC', 'Qwen2.5-3B-Instruct-q4f16_1-MLC'];

export class AgentflowModelsPanel extends LitElement {
  static override properties = {
    registry: { attribute: false },
    dbName: { type: String, attribute: 'db-name' },
    current: { type: String },
    caps: { state: true },
    gpuError: { state: true },
    storage: { state: true },
    plannerFromShared: { state: true },
    restore: { type: Boolean },
    plannerModel: { state: true },
    sharedModel: { state: true },
    adapterId: { state: true },
    plannerFieldError: { state: true },
    enginesInUse: { attribute: false },
    deleting: { state: true },
    plannerFieldNote: { state: true },
  };
  declare registry: ToolRegistry | undefined;
  declare dbName: string | undefined;
  /** Label of the engines in use (set by the app). */
  declare current: string;
  declare caps: GpuCapabilities | undefined;
  declare gpuError: string | undefined;
  declare storage: { quota?: number; usage?: number } | null;
  /** The planner reads the shared model's web-llm download (one download for both engines). */
  declare plannerFromShared: boolean;
  /** Reload the last models from the cache when the panel starts (the app sets it; the cache only, no download). */
  declare restore: boolean;
  declare plannerModel: string;
  declare sharedModel: string;
  declare adapterId: string;
  /** Why the planner field cannot be loaded as typed, checked as the user types. */
  declare plannerFieldError: string | null;
  /** What runs on the engines in use (set by the app, which owns them); a swap stops it. */
  declare enginesInUse: () => readonly EngineUse[];
  /** What the planner field names, when that may not be what the user meant (a repo id typed for a folder). */
  declare plannerFieldNote: string | null;
  /** The cached model (its key) whose Delete button asks first (see deleteQuestion). */
  declare deleting: string | null;

  private readonly models = new ModelLoad(this);
  private readonly sizes = new DownloadSizes(this);
  private readonly cached = new CachedModels(this, (error) => this.models.set({ error }));
  private readonly swap = new SwapQuestion(this, () => this.enginesInUse(), (notice) => this.models.set({ notice }));

  constructor() {
    super();
    this.current = 'none';
    this.storage = null;
    this.plannerFromShared = false;
    this.restore = false;
    this.plannerModel = DEFAULT_PLANNER_MODEL;
    this.sharedModel = SHARED_MODEL_CHOICES[1];
    this.adapterId = '';
    this.plannerFieldError = null;
    this.enginesInUse = () => [];
    this.deleting = null;
    this.plannerFieldNote = null;
  }

  static override styles = modelsPanelStyles;

  override connectedCallback(): void {
    super.connectedCallback();
    void this.start();
    void navigator.storage?.estimate?.().then((e) => (this.storage = e)).catch(() => undefined);
    this.addEventListener('gpu-capabilities', this.onCaps as EventListener);
  }

  override disconnectedCallback(): void {
    super.disconnectedCallback();
    this.removeEventListener('gpu-capabilities', this.onCaps as EventListener);
    this.models.dropPartial();
  }

  private onCaps = (e: CustomEvent<{ caps?: GpuCapabilities; error?: string }>) => {
    this.caps = e.detail.caps;
    this.gpuError = e.detail.error;
  };

  /** Fills the form with the last models loaded and, when the app asks (restore), loads them from the cache. */
  private async start(): Promise<void> {
    await this.refreshCache();
    const last = await loadModelChoice(this.dbName);
    if (last) {
      this.plannerModel = last.plannerModel;
      this.sharedModel = last.sharedModel;
      this.plannerFromShared = last.plannerFromShared;
      this.adapterId = last.adapterId ?? '';
    }
    this.checkPlannerField();
    void this.estimateSizes(false);
    if (last?.restore && this.restore && !this.models.busy) await this.load({ restoring: true });
  }

  refreshCache(): Promise<void> {
    return this.cached.refresh();
  }

  private async deleteModel(m: CachedModel): Promise<void> {
    this.deleting = null;
    await this.cached.delete(m);
    void this.estimateSizes(this.sizes.report?.checked ?? false);
  }

  private choice(restore: boolean): ModelChoice {
    return { plannerModel: this.plannerModel.trim() || DEFAULT_PLANNER_MODEL, plannerFromShared: this.plannerFromShared, sharedModel: this.sharedModel.trim(), adapterId: this.adapterId.trim() || null, restore };
  }

  private checkPlannerField(): void {
    if (this.plannerFromShared) {
      this.plannerFieldError = null;
      this.plannerFieldNote = null;
      return;
    }
    void import('../controllers/engines/model-loader').then(({ plannerModelUrl, isHubRepoId }) => {
      const field = this.plannerModel.trim() || DEFAULT_PLANNER_MODEL;
      try {
        plannerModelUrl(field);
        this.plannerFieldError = null;
        this.plannerFieldNote = hubIdNote(field, isHubRepoId(field));
      } catch (e) {
        this.plannerFieldError = (e as Error).message;
        this.plannerFieldNote = null;
      }
    });
  }

  /**
   * An edited form no longer says what the last error or the last load's finished bars were about: both go,
   * so a stale "could not be downloaded" or "100%" is never read as the answer to what the form says now.
   */
  private formChanged(): void {
    this.models.set({ error: null });
    if (!this.models.busy) this.models.set({ progress: {} });
  }

  private onField(which: 'plannerModel' | 'sharedModel' | 'adapterId', e: Event): void {
    this[which] = (e.target as HTMLInputElement).value;
    this.formChanged();
    if (which === 'plannerModel') this.checkPlannerField();
    if (which !== 'adapterId') void this.estimateSizes(false);
  }

  /** The user goes on with the planner alone: it serves every module, and the form says so (no shared model). */
  private usePartial(): void {
    if (!this.models.partial) return;
    this.sharedModel = '';
    this.models.usePartial();
    void this.estimateSizes(false);
  }

  /** The form's models' download size: from this browser's caches, or with `network` from their servers. */
  estimateSizes(network: boolean): Promise<void> {
    return this.sizes.estimate(this.choice(false), network);
  }

  /** Stops the load in progress (both workers end); the engines in use stay as they were. */
  cancelLoad(): void {
    this.models.cancel();
  }

  /**
   * Loads the form's models. `restoring`: the page is starting and reloads the last models from the cache
   * only; what is not cached any more is left for the user to download.
   */
  async load(o: { restoring?: boolean; confirmed?: boolean } = {}): Promise<void> {
    if (this.models.busy) return;
    this.models.dropPartial();
    if (this.plannerFieldError && !this.plannerFromShared) {
      this.models.set({ error: this.plannerFieldError, progress: {} });
      return;
    }
    if (!o.restoring && !o.confirmed && this.swap.askFirst('Loading other models', ' once they are ready (until then nothing changes)', LOAD_BUTTON, () => void this.load({ ...o, confirmed: true }))) return;
    await this.models.load(this.choice(true), !!o.restoring, async () => {
      await this.refreshCache();
      await this.estimateSizes(this.sizes.report?.checked ?? false);
      this.models.finishBars(this.sizes.report?.planner);
    });
  }

  private useDemo(confirmed = false): void {
    if (!confirmed && this.swap.askFirst('Switching to the scripted demo', '', DEMO_BUTTON, () => this.useDemo(true))) return;
    this.models.dropPartial();
    this.models.set({ error: null });
    // The ids stay in the form; the next start no longer loads them on its own.
    void saveModelChoice(this.choice(false), this.dbName).catch(() => undefined);
    this.models.choose({ engines: scriptedDemoEngines(), label: 'scripted demo (no model)' });
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
          <input id="planner-model" type="text" .value=${this.plannerModel} autocomplete="off" ?disabled=${this.plannerFromShared}
            aria-invalid=${this.plannerFieldError ? 'true' : 'false'} aria-describedby="planner-model-error" @input=${(e: Event) => this.onField('plannerModel', e)} />
        </label>
        <div id="planner-model-error" class="field-error" data-testid="planner-model-error">${this.plannerFieldError ?? ''}</div>
        ${this.plannerFieldNote ? html`<div class="field-note" data-testid="planner-model-note">${this.plannerFieldNote}</div>` : nothing}
        <label class="check">
          <input id="planner-from-shared" type="checkbox" .checked=${this.plannerFromShared} @change=${(e: Event) => {
            this.plannerFromShared = (e.target as HTMLInputElement).checked;
            this.formChanged();
            this.checkPlannerField();
            void this.estimateSizes(false);
          }} />
          Planner uses the shared model's download (its 4-bit web-llm build; one download for both engines, the adapter trains on the 4-bit weights)
        </label>
        <label class="field">Shared model for executor, verifier and generator (web-llm id; empty: the planner does everything)
          <input id="shared-model" type="text" list="shared-models" .value=${this.sharedModel} autocomplete="off" @input=${(e: Event) => this.onField('sharedModel', e)} />
          <datalist id="shared-models">${SHARED_MODEL_CHOICES.map((m) => html`<option value=${m}></option>`)}</datalist>
        </label>
        <label class="field">LoRA adapter to activate (optional; see Training)
          <input id="adapter-id" type="text" autocomplete="off" .value=${this.adapterId} @input=${(e: Event) => this.onField('adapterId', e)} />
        </label>
        ${renderSizes({ sizes: this.sizes.report, plannerFieldError: this.plannerFieldError, plannerFromShared: this.plannerFromShared, busy: this.models.busy, check: () => void this.estimateSizes(true) })}
        <div class="row">
          <button type="button" ?disabled=${this.models.busy || !!this.gpuError} @click=${() => this.load()}>${LOAD_BUTTON}</button>
          ${this.models.busy ? html`<button type="button" @click=${() => this.cancelLoad()}>Cancel loading</button>` : nothing}
          <button type="button" ?disabled=${this.models.busy} @click=${() => this.useDemo()}>${DEMO_BUTTON}</button>
        </div>
        ${renderConfirmSwap(this.swap)}
        ${this.models.notice ? html`<p role="status" class="note" data-testid="models-notice">${this.models.notice}</p>` : nothing}
        ${this.models.error ? html`<p class="warn" role="alert">${this.models.error}</p>` : nothing}
        ${renderPartial(this.models, () => this.usePartial())}
        ${Object.entries(this.models.progress).map(([k, s]) => renderProgress(k, s))}
      </section>
      <section aria-labelledby="cache-h">
        <h3 id="cache-h">Cached models</h3>
        ${renderCachedModels({ host: this, cached: this.cached, deleting: this.deleting, setDeleting: (key) => (this.deleting = key), deleteModel: (m) => void this.deleteModel(m) })}
      </section>
      <section aria-labelledby="training-storage-h">
        <h3 id="training-storage-h">Training storage</h3>
        <agentflow-training-storage db-name=${this.dbName ?? nothing}></agentflow-training-storage>
      </section>
      <section aria-labelledby="privacy-h">
        <h3 id="privacy-h">Privacy and tools</h3>
        <p>Models, conversations, memory and adapters stay in this browser. Tools marked <em>network</em> send the agent's queries off this device (to Wikipedia or your search endpoint); each says whether it will run, and a network tool waits for your permission before it does.</p>
        <agentflow-tool-switches .registry=${this.registry} db-name=${this.dbName ?? nothing}></agentflow-tool-switches>
      </section>
    `;
  }
}

if (!customElements.get('agentflow-models-panel')) customElements.define('agentflow-models-panel', AgentflowModelsPanel);

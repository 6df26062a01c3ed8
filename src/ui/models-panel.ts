// Models & GPU: the WebGPU report, the choice of models, download progress (bytes, percent, time left),
// the models cached in this browser with their sizes and a delete button, and plain warnings when WebGPU
// is missing or memory looks too small. Also the privacy switches for network tools. While something runs on
// the loaded models (the app says what: `enginesInUse`), loading others or the demo asks first.
import './training-storage-panel';
import { servesAllModules } from '../engine/base-model-view';
import { LitElement, css, html, nothing } from 'lit';
import type { AgentEngines } from '../agent/loop';
import type { GpuCapabilities } from '../gpu/device';
import type { PlannerTrainer } from '../planner/planner-client';
import type { LoadProgress } from '../engine/types';
import type { ToolRegistry } from '../tools/registry';
import { scriptedDemoEngines } from '../controllers/engines/demo-engines';
import { deleteQuestion, deleteQuestionStyles, focusDeleteQuestion } from './delete-question';
import { describeUses, enginesLabel, manyUses, type EngineUse } from '../controllers/engines/engine-use';
import { hostsInWords, hubIdNote } from '../controllers/engines/load-failure';
import { deleteCachedModel, listCachedModels, type CachedModel } from '../controllers/engines/model-cache';
import { loadModelChoice, saveModelChoice, type ModelChoice } from '../controllers/engines/model-choice';
import type { SizeReport } from '../controllers/engines/model-files';
import type { LoadedEngines } from '../controllers/engines/model-loader';
import { ProgressTracker, formatBytes, formatSeconds, type ProgressSummary } from '../controllers/progress-tracker';
import { resourceWarnings } from './resource-warnings';
import './gpu-capabilities';
import './tool-switches';

export const DEFAULT_PLANNER_MODEL = 'Qwen/Qwen2.5-0.5B-Instruct';
export const SHARED_MODEL_CHOICES = ['Qwen2.5-0.5B-Instruct-q4f16_1-MLC', 'Qwen2.5-1.5B-Instruct-q4f16_1-MLC', 'Qwen2.5-3B-Instruct-q4f16_1-MLC'];
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

/** The download size of the models in the form, per engine and together (see model-files.ts). */
interface Sizes {
  planner: SizeReport | null;
  shared: SizeReport | null;
  both: SizeReport | null;
  /** Sizes came from the servers (Check download size), not only from the cache. */
  checked: boolean;
  error?: string;
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
    restore: { type: Boolean },
    plannerModel: { state: true },
    sharedModel: { state: true },
    adapterId: { state: true },
    plannerFieldError: { state: true },
    sizes: { state: true },
    notice: { state: true },
    enginesInUse: { attribute: false },
    confirmSwap: { state: true },
    deleting: { state: true },
    plannerFieldNote: { state: true },
    partial: { state: true },
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
  /** Reload the last models from the cache when the panel starts (the app sets it; the cache only, no download). */
  declare restore: boolean;
  declare plannerModel: string;
  declare sharedModel: string;
  declare adapterId: string;
  /** Why the planner field cannot be loaded as typed, checked as the user types. */
  declare plannerFieldError: string | null;
  declare sizes: Sizes | null;
  /** A note that is not an error (a cancelled load, last models no longer cached). */
  declare notice: string | null;
  /** What runs on the engines in use (set by the app, which owns them); a swap stops it. */
  declare enginesInUse: () => readonly EngineUse[];
  /** A load or the demo waits for the user to accept stopping what runs on the engines in use. */
  declare confirmSwap: { uses: readonly EngineUse[]; action: string; when: string; button: string; go: () => void } | null;
  /** What the planner field names, when that may not be what the user meant (a repo id typed for a folder). */
  declare plannerFieldNote: string | null;
  /**
   * The planner loaded but the shared model did not: the planner alone, offered to go on with (it serves
   * every module), disposed when the user declines or starts anything else.
   */
  declare partial: { engines: LoadedEngines; choice: ModelChoice; message: string; detail: string } | null;
  /** The cached model (its key) whose Delete button asks first (see deleteQuestion). */
  declare deleting: string | null;
  /** Re-reads what runs on the engines while the swap question is open (see watchSwap). */
  private swapWatch: ReturnType<typeof setInterval> | null = null;
  private controller: AbortController | null = null;
  private sizeRun = 0;

  constructor() {
    super();
    this.current = 'none';
    this.storage = null;
    this.cached = null;
    this.progress = {};
    this.busy = false;
    this.error = null;
    this.plannerFromShared = false;
    this.restore = false;
    this.plannerModel = DEFAULT_PLANNER_MODEL;
    this.sharedModel = SHARED_MODEL_CHOICES[1];
    this.adapterId = '';
    this.plannerFieldError = null;
    this.sizes = null;
    this.notice = null;
    this.enginesInUse = () => [];
    this.confirmSwap = null;
    this.deleting = null;
    this.plannerFieldNote = null;
    this.partial = null;
  }

  static override styles = [
    deleteQuestionStyles,
    css`
    :host { display: block; }
    section { margin-bottom: 1.5rem; }
    h3 { font-size: 1.05rem; margin: 0.5rem 0; }
    label.field { display: grid; gap: 0.2rem; margin: 0.4rem 0; max-width: 32rem; }
    input[type='text'], input:not([type]) { font: inherit; padding: 0.3rem; }
    button { font: inherit; padding: 0.25rem 0.6rem; cursor: pointer; }
    button:focus-visible, input:focus-visible { outline: 2px solid var(--agentflow-accent, #2563eb); outline-offset: 2px; }
    .warn { color: var(--agentflow-error-color, #b00020); }
    /* Notes that report, not warn (a cancelled load, what a field is read as): the text colour, on a faint box. */
    .note { color: inherit; background: color-mix(in srgb, currentColor 6%, transparent); border-left: 3px solid color-mix(in srgb, currentColor 35%, transparent); padding: 0.3rem 0.6rem; max-width: 40rem; }
    .field-note { font-size: 0.85rem; opacity: 0.85; max-width: 32rem; overflow-wrap: anywhere; }
    [role='alert'], [role='status'] { overflow-wrap: anywhere; }
    table { border-collapse: collapse; }
    td, th { padding: 0.2rem 0.6rem; text-align: left; border-bottom: 1px solid color-mix(in srgb, currentColor 15%, transparent); }
    td.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
    /* A model's URL has no spaces: it may break anywhere, so the table fits a phone instead of running off it. */
    td.model { overflow-wrap: anywhere; }
    .sr { position: absolute; width: 1px; height: 1px; overflow: hidden; clip-path: inset(50%); white-space: nowrap; }
    progress { width: min(32rem, 100%); }
    .row { display: flex; gap: 0.5rem; flex-wrap: wrap; align-items: center; }
    .field-error { color: var(--agentflow-error-color, #b00020); font-size: 0.85rem; }
    .size { font-size: 0.9rem; margin: 0.4rem 0; }
    label.check { display: flex; gap: 0.4rem; align-items: baseline; margin: 0.4rem 0; max-width: 32rem; }
  `,
  ];

  override connectedCallback(): void {
    super.connectedCallback();
    void this.start();
    void navigator.storage?.estimate?.().then((e) => (this.storage = e)).catch(() => undefined);
    this.addEventListener('gpu-capabilities', this.onCaps as EventListener);
  }

  override disconnectedCallback(): void {
    super.disconnectedCallback();
    this.removeEventListener('gpu-capabilities', this.onCaps as EventListener);
    this.watchSwap(false);
    this.dropPartial();
  }

  protected override updated(): void {
    this.watchSwap(this.confirmSwap !== null);
  }

  /**
   * While the swap question is open, what it asks about may end by itself (a run finishes, the user pauses it
   * in its tab) or change (one of two ends, an experiment moves on). An EngineUse says nothing when it ends, so
   * the question re-reads the uses a few times a second, which costs nothing next to what it waits on.
   */
  private watchSwap(on: boolean): void {
    if (on && !this.swapWatch) this.swapWatch = setInterval(() => this.recheckSwap(), 250);
    if (!on && this.swapWatch) {
      clearInterval(this.swapWatch);
      this.swapWatch = null;
    }
  }

  /**
   * Nothing in use any more: the question no longer applies, so it closes and says so, and the load (or the
   * demo) is not started for the user. The click it answers may be long past (a training run can take an hour)
   * and the user may have been about to keep the run; a download or a swap the user did not confirm must not
   * start then by itself. Pressing the button again goes ahead without a question.
   */
  private recheckSwap(): void {
    const c = this.confirmSwap;
    if (!c) return;
    const uses = this.enginesInUse();
    if (!uses.length) {
      this.confirmSwap = null;
      this.notice = `Nothing uses the loaded models any more (${describeUses(c.uses)} ended), so there is nothing to stop. ${c.action} did not start: press “${c.button}” again to go ahead.`;
    } else if (describeUses(uses) !== describeUses(c.uses) || uses.map((u) => u.kept).join() !== c.uses.map((u) => u.kept).join()) {
      this.confirmSwap = { ...c, uses };
    }
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
    if (last?.restore && this.restore && !this.busy) await this.load({ restoring: true });
  }

  async refreshCache(): Promise<void> {
    try {
      this.cached = await listCachedModels();
    } catch (e) {
      this.cached = [];
      this.error = `Could not read the model cache: ${(e as Error).message}`;
    }
  }

  private async deleteModel(m: CachedModel): Promise<void> {
    this.deleting = null;
    await deleteCachedModel(m.key);
    await this.refreshCache();
    void this.estimateSizes(this.sizes?.checked ?? false);
  }

  private choose(detail: EnginesChosenDetail): void {
    this.dispatchEvent(new CustomEvent<EnginesChosenDetail>('agentflow-engines', { detail, bubbles: true, composed: true }));
  }

  private choice(restore: boolean): ModelChoice {
    return { plannerModel: this.plannerModel.trim() || DEFAULT_PLANNER_MODEL, plannerFromShared: this.plannerFromShared, sharedModel: this.sharedModel.trim(), adapterId: this.adapterId.trim() || null, restore };
  }

  /** What the form would load, in words. */
  private describeChoice(c: ModelChoice): string {
    const planner = c.plannerFromShared ? `the planner from ${c.sharedModel}` : c.plannerModel;
    return c.sharedModel && !c.plannerFromShared ? `${planner} + ${c.sharedModel}` : planner;
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
    this.error = null;
    if (!this.busy) this.progress = {};
  }

  private onField(which: 'plannerModel' | 'sharedModel' | 'adapterId', e: Event): void {
    this[which] = (e.target as HTMLInputElement).value;
    this.formChanged();
    if (which === 'plannerModel') this.checkPlannerField();
    if (which !== 'adapterId') void this.estimateSizes(false);
  }

  /** Lets go of a planner kept for "go on with the planner alone" that the user did not take. */
  private dropPartial(): void {
    this.partial?.engines.dispose();
    this.partial = null;
  }

  /** The user goes on with the planner alone: it serves every module, and the form says so (no shared model). */
  private usePartial(): void {
    const p = this.partial;
    if (!p) return;
    this.partial = null;
    this.error = null;
    this.sharedModel = '';
    const choice = { ...p.choice, sharedModel: '' };
    void saveModelChoice(choice, this.dbName).catch(() => undefined);
    this.progress = Object.fromEntries(Object.entries(this.progress).filter(([k]) => k === 'planner'));
    const label = enginesLabel(p.engines.planner.id, null);
    this.choose({ engines: p.engines, trainer: p.engines.trainer, label: p.engines.notes.length ? `${label}; ${p.engines.notes.join('; ')}` : label });
    void this.estimateSizes(false);
  }

  /**
   * The form's models' download size. Without `network` only this browser's caches are read (what is
   * already here, and web-llm shard sizes from a cached tensor-cache.json); with it the servers are asked
   * (HEAD requests, the small JSON indexes), which the user asks for with "Check download size".
   */
  async estimateSizes(network: boolean): Promise<void> {
    const run = ++this.sizeRun;
    const c = this.choice(false);
    try {
      const [{ plannerFiles, webllmFiles, combine }, { plannerModelUrl, sharedModelRecord }, { webllmModelUrl }] = await Promise.all([
        import('../controllers/engines/model-files'),
        import('../controllers/engines/model-loader'),
        import('../io/webllm-cache'),
      ]);
      const record = c.sharedModel ? await sharedModelRecord(c.sharedModel) : null;
      const shared = record ? await webllmFiles(record, { network }) : null;
      let planner: SizeReport | null;
      if (c.plannerFromShared) planner = record ? await plannerFiles(webllmModelUrl(record.model), { network, mlc: true }) : null;
      else planner = await plannerFiles(plannerModelUrl(c.plannerModel), { network });
      const both = planner && shared ? combine(planner, shared) : (planner ?? shared);
      if (run === this.sizeRun) this.sizes = { planner, shared, both, checked: network };
    } catch (e) {
      if (run === this.sizeRun) this.sizes = { planner: null, shared: null, both: null, checked: network, error: (e as Error).message };
    }
  }

  /** Stops the load in progress (both workers end); the engines in use stay as they were. */
  cancelLoad(): void {
    this.controller?.abort(new DOMException('Cancelled by the user', 'AbortError'));
  }

  private loading(detail: ModelsLoadingDetail | null): void {
    this.dispatchEvent(new CustomEvent<ModelsLoadingDetail | null>('agentflow-models-loading', { detail, bubbles: true, composed: true }));
  }

  /**
   * Loads the form's models. `restoring`: the page is starting and reloads the last models from the cache
   * only; what is not cached any more is left for the user to download.
   */
  async load(o: { restoring?: boolean; confirmed?: boolean } = {}): Promise<void> {
    if (this.busy) return;
    this.dropPartial();
    if (this.plannerFieldError && !this.plannerFromShared) {
      this.error = this.plannerFieldError;
      this.progress = {};
      return;
    }
    if (!o.restoring && !o.confirmed && this.askFirst('Loading other models', ' once they are ready (until then nothing changes)', LOAD_BUTTON, () => void this.load({ ...o, confirmed: true }))) return;
    const c = this.choice(true);
    const what = this.describeChoice(c);
    const controller = new AbortController();
    this.controller = controller;
    this.busy = true;
    this.error = null;
    this.notice = null;
    this.progress = {};
    const trackers: Record<string, ProgressTracker> = { planner: new ProgressTracker(), shared: new ProgressTracker() };
    this.loading({ what, restoring: !!o.restoring, percent: null });
    try {
      const { loadEngines } = await import('../controllers/engines/model-loader');
      const engines = await loadEngines({
        plannerModel: c.plannerModel,
        plannerFromShared: c.plannerFromShared,
        ...(c.sharedModel ? { sharedModel: c.sharedModel } : {}),
        adapterId: c.adapterId,
        dbName: this.dbName,
        signal: controller.signal,
        cacheOnly: !!o.restoring,
        onProgress: (which: 'planner' | 'shared', p: LoadProgress) => {
          trackers[which].update(p);
          this.progress = { ...this.progress, [which]: trackers[which].summary() };
          this.loading({ what, restoring: !!o.restoring, percent: trackers[which].summary().percent });
        },
      });
      // The bars stay, marked finished, so the user sees what was loaded.
      this.progress = Object.fromEntries(Object.entries(this.progress).map(([k, s]) => [k, { ...s, secondsLeft: null, status: 'loaded' }]));
      const label = enginesLabel(engines.planner.id, servesAllModules(engines) ? null : engines.shared.id);
      await saveModelChoice(c, this.dbName).catch(() => undefined);
      this.choose({ engines, trainer: engines.trainer, label: engines.notes.length ? `${label}; ${engines.notes.join('; ')}` : label });
    } catch (e) {
      const err = e as Error;
      const { SharedModelUnavailableError } = await import('../controllers/engines/model-loader');
      const partial = e instanceof SharedModelUnavailableError ? e : null;
      // A planner that loaded while the shared model did not stays on offer (renderPartial), its bar with it.
      if (partial && !controller.signal.aborted) {
        this.partial = { engines: partial.plannerAlone, choice: c, message: partial.message, detail: partial.detail };
        this.progress = this.progress.planner ? { planner: { ...this.progress.planner, secondsLeft: null, status: 'loaded' } } : {};
      } else {
        partial?.plannerAlone.dispose();
        this.progress = {};
      }
      if (this.partial) {
        // Said by the offer itself.
      } else if (controller.signal.aborted) this.notice = `Loading ${what} was cancelled; nothing changed.`;
      else if (o.restoring && err?.name === 'ModelNotCachedError') {
        this.notice = `Your last models (${what}) were not reloaded: ${err.message}. Press “${LOAD_BUTTON}” to download them again.`;
      } else {
        const msg = err?.message ?? String(e);
        // The page knows best whether the browser is offline (a worker's fetch only says it failed).
        this.error = navigator.onLine === false && !/offline/i.test(msg) ? `You appear to be offline: ${msg}` : msg;
      }
    } finally {
      this.busy = false;
      this.controller = null;
      this.loading(null);
      await this.refreshCache();
      await this.estimateSizes(this.sizes?.checked ?? false);
      this.finishBars();
    }
  }

  /**
   * The planner's worker reports progress for its weight files only (config and tokenizer files are read
   * whole), so its bar ended a few KiB short of the size line, which counts every file a load reads. Once the
   * planner is all in this browser, its finished bar shows the size line's total: the two agree.
   */
  private finishBars(): void {
    const bar = this.progress.planner;
    const planner = this.sizes?.planner;
    if (!bar || bar.status !== 'loaded' || !planner?.complete) return;
    this.progress = { ...this.progress, planner: { ...bar, bytesDone: planner.total, bytesTotal: planner.total, percent: 100 } };
  }

  /**
   * Whether `action` (which replaces the engines in use) must wait for the user: when something runs on the
   * engines in use, the panel asks, and `go` runs once they accept stopping it.
   */
  private askFirst(action: string, when: string, button: string, go: () => void): boolean {
    const uses = this.enginesInUse();
    this.confirmSwap = uses.length ? { uses, action, when, button, go } : null;
    return uses.length > 0;
  }

  private useDemo(confirmed = false): void {
    if (!confirmed && this.askFirst('Switching to the scripted demo', '', DEMO_BUTTON, () => this.useDemo(true))) return;
    this.dropPartial();
    this.error = null;
    // The ids stay in the form; the next start no longer loads them on its own.
    void saveModelChoice(this.choice(false), this.dbName).catch(() => undefined);
    this.choose({ engines: scriptedDemoEngines(), label: 'scripted demo (no model)' });
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

  private renderConfirmSwap() {
    const c = this.confirmSwap;
    if (!c) return nothing;
    const what = describeUses(c.uses);
    const many = manyUses(c.uses);
    return html`<div role="alertdialog" aria-labelledby="swap-question" data-testid="swap-confirm">
      <p id="swap-question">${what[0].toUpperCase()}${what.slice(1)} ${many ? 'are' : 'is'} using the loaded models. ${c.action} stops ${many ? 'them' : 'it'}${c.when}: ${c.uses.map((u) => u.kept).join('; ')}.</p>
      <div class="row">
        <button type="button" @click=${() => {
          this.confirmSwap = null;
          c.go();
        }}>Stop ${many ? 'them' : 'it'} and continue</button>
        <button type="button" @click=${() => (this.confirmSwap = null)}>Keep ${many ? 'them' : 'it'} running</button>
      </div>
    </div>`;
  }

  private renderPartial() {
    const p = this.partial;
    if (!p) return nothing;
    return html`<div role="alert" class="warn" data-testid="partial-load">
      <p>${p.message} The planner, ${p.engines.planner.id.replace(/^[\w-]+:/, '')}, can do every step on its own (plan, run tools, check and answer), until the shared model can be downloaded.</p>
      <div class="row">
        <button type="button" @click=${() => this.usePartial()}>Go on with the planner alone</button>
        <button type="button" @click=${() => this.dropPartial()}>Keep the models in use</button>
      </div>
      ${p.detail !== p.message ? html`<details class="detail"><summary>What web-llm said</summary><p>${p.detail}</p></details>` : nothing}
    </div>`;
  }

  private renderSizes() {
    const z = this.sizes;
    if (!z || (z.error && this.plannerFieldError)) return nothing;
    if (z.error) return html`<p class="size" data-testid="download-size">Download size: unknown (${z.error})</p>`;
    const line = (label: string, r: SizeReport | null) => {
      if (!r) return null;
      if (r.complete) return `${label}: ${formatBytes(r.total)}, all in this browser already`;
      const left = r.total - r.cached;
      if (z.checked && r.unknown > 0 && r.unreachable.length) {
        const offline = globalThis.navigator?.onLine === false ? ' (you appear to be offline)' : '';
        return `${label}: size unknown, ${hostsInWords(r.unreachable)} could not be reached${offline}${r.cached ? `; ${formatBytes(r.cached)} already in this browser` : ''}`;
      }
      if (r.unknown === 0) return `${label}: ${formatBytes(left)} to download${r.cached ? ` (${formatBytes(r.cached)} of ${formatBytes(r.total)} already in this browser)` : ''}`;
      if (z.checked) return `${label}: at least ${formatBytes(left)} to download (the server did not give every file's size)`;
      return `${label}: ${r.cached ? `${formatBytes(r.cached)} already in this browser, the rest` : 'not in this browser;'} size not checked yet`;
    };
    const parts = [line('Planner', z.planner), this.plannerFromShared ? null : line('shared model', z.shared)].filter(Boolean);
    const both = z.both && z.planner && z.shared && !this.plannerFromShared && z.both.unknown === 0 && !z.both.complete ? `; in all ${formatBytes(z.both.total - z.both.cached)}` : '';
    const anyUnknown = [z.planner, z.shared].some((r) => r && r.unknown > 0 && !r.complete);
    return html`<div class="size row">
      <span data-testid="download-size">Download size: ${parts.join('; ')}${both}.</span>
      ${anyUnknown && !z.checked
        ? html`<button type="button" ?disabled=${this.busy} title="Asks the models' servers for the file sizes; downloads no model file" @click=${() => this.estimateSizes(true)}>Check download size</button>`
        : nothing}
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
        ${this.renderSizes()}
        <div class="row">
          <button type="button" ?disabled=${this.busy || !!this.gpuError} @click=${() => this.load()}>${LOAD_BUTTON}</button>
          ${this.busy ? html`<button type="button" @click=${() => this.cancelLoad()}>Cancel loading</button>` : nothing}
          <button type="button" ?disabled=${this.busy} @click=${() => this.useDemo()}>${DEMO_BUTTON}</button>
        </div>
        ${this.renderConfirmSwap()}
        ${this.notice ? html`<p role="status" class="note" data-testid="models-notice">${this.notice}</p>` : nothing}
        ${this.error ? html`<p class="warn" role="alert">${this.error}</p>` : nothing}
        ${this.renderPartial()}
        ${Object.entries(this.progress).map(([k, s]) => this.renderProgress(k, s))}
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
                      <td class="model">${m.label}</td><td class="num">${m.files}</td><td class="num">${formatBytes(m.bytes)}</td>
                      <td>${this.deleting === m.key
                        ? deleteQuestion(`cached model ${m.label}`, 'this model’s files', () => void this.deleteModel(m), () => (this.deleting = null), `Loading it again downloads ${formatBytes(m.bytes)}.`)
                        : html`<button type="button" aria-label=${`Delete cached model ${m.label}`} @click=${() => {
                            this.deleting = m.key;
                            void focusDeleteQuestion(this);
                          }}>Delete</button>`}</td>
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
        <p>Models, conversations, memory and adapters stay in this browser. Tools marked <em>network</em> send the agent's queries off this device (to Wikipedia or your search endpoint); each says whether it will run, and a network tool waits for your permission before it does.</p>
        <agentflow-tool-switches .registry=${this.registry} db-name=${this.dbName ?? nothing}></agentflow-tool-switches>
      </section>
    `;
  }
}
const LOAD_BUTTON = 'Download and load models';
const DEMO_BUTTON = 'Use the scripted demo';

if (!customElements.get('agentflow-models-panel')) customElements.define('agentflow-models-panel', AgentflowModelsPanel);

// <agentflow-chat>: the embeddable chat element. One module script and this tag give a page the agent:
// a message list with streamed output, each answer expandable into its stored trajectory, a stop button,
// and the stored conversations (list, reopen, resume, delete, export as JSON).
//
// Engines: the `engines` property ({planner, shared} ChatEngines) wins; otherwise the element loads the
// real ones from `planner-model` (URL or Hugging Face repo id) and `shared-model` (web-llm id; without it the planner runs every module) on the
// first question; `planner-from-shared` loads the planner from the shared model's web-llm build instead (one download). Tools: the built-in ones plus `extraTools`; the `tools` attribute lists those switched
// on. Network tools stay off until the user allows them here, and are marked. Without any engines the
// element says no model is loaded and offers the scripted demo; answers no model wrote are labelled so.
import { LitElement, css, html, nothing, type PropertyValues } from 'lit';
import { unsafeHTML } from 'lit/directives/unsafe-html.js';
import { EngineMismatchError, isScripted, storedEngines } from '../agent/engines-used';
import type { AgentEngines } from '../agent/loop';
import type { ModuleName } from '../agent/prompts';
import { checkQueryFits } from '../agent/query-fit';
import { resumeConversation, startConversation, type SessionResult } from '../agent/session';
import { toolsFromRegistry } from '../agent/registry-tools';
import type { LoadProgress } from '../engine/types';
import {
  deleteConversation as deleteStoredConversation,
  exportAllConversations,
  exportConversation,
  getSteps,
  listConversations,
  markStaleRunsInterrupted,
} from '../store/conversations';
import { onStorageNotice, openAgentDb, storageNotice, storageOpenError, type StorageNotice } from '../store/db';
import { untilAborted } from '../util/abort';
import { describeUses, type EngineUse, type EngineUser } from '../controllers/engines/engine-use';
import { deleteQuestion, deleteQuestionStyles, focusDeleteQuestion } from './delete-question';
import type { ConversationRecord, PlannerStepData, StepRecord } from '../store/records';
import { DB_NAME } from '../store/schema';
import { ToolRegistry } from '../tools/registry';
import { registerBuiltinTools } from '../tools/builtin';
import type { Tool } from '../tools/types';
import { scriptedDemoEngines } from '../controllers/engines/demo-engines';
import { downloadText } from './download';
import { markdownOrText } from './markdown';
import { readConstrainReplies, restoreToolSwitches } from './tool-switches';
import { ProgressTracker, formatBytes } from './progress-tracker';
import { renderTrajectory, trajectoryFromSteps } from './trajectory';
import { callOfStep, callStat, conversationGroup, formatCall, formatLiveCall, liveHeading, livePreview, startCall, tokenArrived, upcomingCall, type CallClock, type CallStat, type ConversationGroup } from './chat-view';
import { driveTraining, resumeElementTraining, startElementTraining, type ElementTrainOptions, type TrainableEngines } from '../controllers/training/element-training';
import type { LoadedEngines } from '../controllers/engines/model-loader';
import type { PolicyTrainer } from '../trainer/training-host';
import type { StepMetrics } from '../trainer/run/metrics';
import type { RunSummary, TrainingRun } from '../trainer/run/training-run';

export interface AgentflowTurnDetail {
  conversationId: string;
  turn: number;
  kind: StepRecord['kind'];
  step: StepRecord;
}

export interface AgentflowTrainStepDetail {
  runId: string;
  metrics: StepMetrics;
}

export interface AgentflowTrainDoneDetail {
  summary: RunSummary;
}

/** A training run the element stopped by itself: the page replaced the engines it ran on. */
export interface AgentflowTrainStoppedDetail {
  runId: string;
  reason: 'engines-replaced';
  message: string;
}

/** The element's training run (train() / resumeTraining()), from its start until it no longer uses its engines. */
interface TrainingOn {
  /** Null while the element still loads its own engines. */
  engines: AgentEngines | null;
  /** Null while it is being set up (stored, checked). */
  run: TrainingRun | null;
  /** A pause was asked for (pauseTraining, the app's engine swap, or the engines replaced under it). */
  pauseWanted: boolean;
  enginesReplaced: boolean;
  ended: Promise<void>;
}

export interface AgentflowAnswerDetail {
  conversationId: string;
  query: string;
  answer: string | null;
  finalAnswer: string | null;
  status: SessionResult['status'];
  stopReason: SessionResult['stopReason'];
}

interface Live {
  id: string;
  module: ModuleName | null;
  turn: number;
  text: string;
  answer: string;
  controller: AbortController;
  /** The module call in progress, timed here (performance.now() ms): a wait shows what it is waiting for. */
  call: CallClock;
  /** The run's finished module calls, newest last. */
  calls: CallStat[];
  /** Not started yet: the database is still opening (another tab may hold it at an older version). */
  waitingForStorage: boolean;
  /** What the running tool says it is doing (ToolContext.note), e.g. starting Python; null for none. */
  toolNote: string | null;
  /** A resumed run before its first call ends: the heading says where it picks up. */
  resuming: boolean;
}

export class AgentFlowChat extends LitElement implements EngineUser {
  static override properties = {
    plannerModel: { type: String, attribute: 'planner-model' },
    sharedModel: { type: String, attribute: 'shared-model' },
    plannerFromShared: { type: Boolean, attribute: 'planner-from-shared' },
    tools: { type: String },
    adapter: { type: String },
    maxTurns: { type: Number, attribute: 'max-turns' },
    dbName: { type: String, attribute: 'db-name' },
    renderAs: { type: String, attribute: 'render' },
    // Its own accessor (noAccessor): replacing the engines pauses a training run on the old ones at once.
    engines: { attribute: false, noAccessor: true },
    trainer: { attribute: false },
    extraTools: { attribute: false },
    registry: { attribute: false },
    conversations: { state: true },
    thread: { state: true },
    stepsById: { state: true },
    expanded: { state: true },
    live: { state: true },
    error: { state: true },
    loading: { state: true },
    toolStatus: { state: true },
    modelsLoading: { attribute: false },
    loadModelAction: { attribute: false },
    trainToyAction: { attribute: false },
    confirmResume: { state: true },
    enginesLost: { state: true },
    failed: { state: true },
    trainingNotice: { state: true },
    storageNotice: { state: true },
    hideStorageNotices: { attribute: false },
    openGroups: { state: true },
    listOpen: { state: true },
    deleting: { state: true },
  };

  /** Planner model: a URL of a folder with config.json, model.safetensors and tokenizer.json, or a repo id. */
  declare plannerModel: string | undefined;
  /** web-llm model id for the executor, verifier and generator. */
  declare sharedModel: string | undefined;
  /** The planner reads the shared model's web-llm build (4-bit; both engines share one download). */
  declare plannerFromShared: boolean | undefined;
  /** Comma-separated names of the tools switched on; unset keeps the stored or default switches. */
  declare tools: string | undefined;
  /** Stored LoRA adapter id to make active in the planner. */
  declare adapter: string | undefined;
  declare maxTurns: number;
  /** IndexedDB database name (default 'agentflow'); separate names keep embedded instances apart. */
  declare dbName: string | undefined;
  /** 'markdown' (default; sanitized) or 'text'. */
  declare renderAs: 'markdown' | 'text';
  /**
   * Injected engines (tests, demos, or engines the host page loaded itself). Replacing them while the
   * element's training run uses them pauses that run at once (see `set engines`).
   */
  get engines(): AgentEngines | undefined {
    return this.pageEngines;
  }

  set engines(next: AgentEngines | undefined) {
    const old = this.pageEngines;
    if (next === old) return;
    this.pageEngines = next;
    this.requestUpdate('engines', old);
    // Synchronously: a page that disposes the old engines right after this line must find the run's calls
    // already aborted, or the step dies mid-call ("planner worker stopped") instead of being dropped cleanly.
    const t = this.trainingOn;
    if (t && old && t.engines === old) {
      t.enginesReplaced = true;
      this.pauseRun(t);
    }
  }

  private pageEngines: AgentEngines | undefined;
  /** The optimizer next to injected engines' planner, for train(); engines the element loads bring their own. */
  declare trainer: PolicyTrainer | undefined;
  /** Tools supplied by the embedding page, registered before the built-in ones. */
  declare extraTools: Tool[];
  /** A registry shared with the host (the app shell's settings); the element makes its own if unset. */
  declare registry: ToolRegistry | undefined;
  /** Set by a host that is loading models for this chat: what it loads, shown instead of "no model". */
  declare modelsLoading: string | null;
  /** A host that can load models gives the "Load a model" action here (the app opens Models & GPU). */
  declare loadModelAction: (() => void) | undefined;
  /** A host with a Training tab gives "Train the toy" here: the first screen's third way in, no download. */
  declare trainToyAction: (() => void) | undefined;
  /** A resume that would switch engines, waiting for the user to say yes or no. */
  declare confirmResume: { id: string; message: string } | null;
  /** A worker behind the engines died: the chat offers to reload the models. */
  declare enginesLost: boolean;
  /** A host that shows storage notices itself (the app's banner) sets this; otherwise the chat shows them. */
  declare hideStorageNotices: boolean;
  /** Runs that threw (storage would not open, a step could not be saved): their question and the error. */
  declare failed: Record<string, { query: string; error: string }>;
  /** Said when the element paused its training run by itself (the page replaced its engines). */
  declare trainingNotice: string | null;
  /** What another tab or the browser did to this chat's database (storageNotice in store/db.ts). */
  declare storageNotice: StorageNotice | null;
  /** Sidebar groups (experiment items, training rollouts) the user has unfolded. */
  declare openGroups: Set<ConversationGroup>;
  /** The conversation list is unfolded (it folds only where the element is narrow, as on a phone). */
  declare listOpen: boolean;
  /** The conversation whose delete button asks first (see deleteQuestion). */
  declare deleting: string | null;

  declare conversations: ConversationRecord[];
  declare thread: string[];
  declare stepsById: Record<string, StepRecord[]>;
  declare expanded: Set<string>;
  declare live: Live | null;
  declare error: string | null;
  declare loading: { tracker: ProgressTracker; which: string } | null;
  declare toolStatus: ReturnType<ToolRegistry['list']>;

  private ownRegistry: ToolRegistry | null = null;
  private unsubscribe: (() => void) | null = null;
  private unsubscribeStorage: (() => void) | null = null;
  private loadedEngines: LoadedEngines | null = null;
  private builtinsFor: ToolRegistry | null = null;
  /** Queries of runs whose conversation record is not listed yet. */
  private readonly pending = new Map<string, string>();

  /**
   * The conversation last run in this view: its answer region is the one live region (busy while the run
   * works), so its answer is read out once, whole; a stored conversation opened later is not announced.
   */
  private lastRunId: string | null = null;
  /** The training run in progress (train() / resumeTraining()), if any. */
  private trainingOn: TrainingOn | null = null;
  /** The engines the answer in progress runs on, and its end, so the page can stop it before replacing them. */
  private liveOn: { engines: AgentEngines; ended: Promise<void> } | null = null;
  /**
   * A question ask() is still checking (engines, fit) on the page's engines, before run() makes it `liveOn`:
   * a swap in that window would otherwise find nothing in use and dispose the engines it is about to run on.
   */
  private asking: { engines: AgentEngines; stopped: boolean; checked: Promise<void>; done: () => void } | null = null;

  constructor() {
    super();
    this.maxTurns = 5;
    this.renderAs = 'markdown';
    this.extraTools = [];
    this.conversations = [];
    this.thread = [];
    this.stepsById = {};
    this.expanded = new Set();
    this.live = null;
    this.error = null;
    this.loading = null;
    this.toolStatus = [];
    this.modelsLoading = null;
    this.confirmResume = null;
    this.enginesLost = false;
    this.hideStorageNotices = false;
    this.failed = {};
    this.trainingNotice = null;
    this.storageNotice = null;
    this.openGroups = new Set();
    this.listOpen = false;
    this.deleting = null;
  }

  static override styles = [
    deleteQuestionStyles,
    css`
    :host {
      display: block;
      /* The element's own width, not the window's, decides its layout: a page may embed it in a narrow column. */
      container-type: inline-size;
      font: var(--agentflow-font, 14px/1.45 system-ui, sans-serif);
      color: var(--agentflow-fg, inherit);
      background: var(--agentflow-bg, transparent);
      --_accent: var(--agentflow-accent, #2563eb);
      --_radius: var(--agentflow-radius, 8px);
      --_muted: var(--agentflow-muted, color-mix(in srgb, currentColor 60%, transparent));
    }
    .layout { display: grid; grid-template-columns: minmax(11rem, 15rem) minmax(0, 1fr); gap: 1rem; }
    aside { border-right: 1px solid color-mix(in srgb, currentColor 15%, transparent); padding-right: 0.75rem; }
    .aside-head { display: flex; justify-content: space-between; align-items: center; gap: 0.25rem; }
    button.fold { display: none; }
    /*
     * Stacked on a phone: the list sits above the chat, so its divider goes below it, not down its side, and
     * it folds into one line naming the conversation shown (unfolded, a long list pushed the chat off screen).
     */
    @container (max-width: 40rem) {
      .layout { grid-template-columns: minmax(0, 1fr); }
      aside { border-right: none; padding-right: 0; border-bottom: 1px solid color-mix(in srgb, currentColor 15%, transparent); padding-bottom: 0.5rem; }
      button.fold { display: block; flex: 1; min-width: 0; text-align: left; border: none; padding: 0.2rem 0; white-space: nowrap; overflow: hidden; text-overflow: ellipsis; }
      button.fold::before { content: '▸ '; }
      button.fold[aria-expanded='true']::before { content: '▾ '; }
      #conv-h { display: none; }
      aside:not(.open) .conv-body { display: none; }
    }
    aside ul { list-style: none; margin: 0; padding: 0; }
    /* The question gets the sidebar's whole width, up to two lines (all of it on hover); status and actions below. */
    aside li { display: grid; grid-template-columns: 1fr auto auto; gap: 0.1rem 0.25rem; align-items: center; margin: 0.35rem 0; }
    aside li button.open { grid-column: 1 / -1; min-width: 0; text-align: left; overflow: hidden; overflow-wrap: anywhere; display: -webkit-box; -webkit-box-orient: vertical; -webkit-line-clamp: 2; line-clamp: 2; }
    aside li button:not(.open) { font-size: 0.8rem; padding: 0 0.4rem; }
    .status { font-size: 0.75rem; color: var(--_muted); }
    button { font: inherit; border-radius: calc(var(--_radius) / 2); border: 1px solid color-mix(in srgb, currentColor 30%, transparent); background: transparent; color: inherit; padding: 0.2rem 0.5rem; cursor: pointer; }
    button.primary { background: var(--_accent); border-color: var(--_accent); color: white; }
    button:focus-visible, textarea:focus-visible, input:focus-visible, summary:focus-visible { outline: 2px solid var(--_accent); outline-offset: 2px; }
    button:disabled { opacity: 0.5; cursor: default; }
    .messages { display: flex; flex-direction: column; gap: 0.75rem; min-height: 6rem; }
    .message { padding: 0.5rem 0.75rem; border-radius: var(--_radius); max-width: 100%; overflow-wrap: anywhere; }
    .user { align-self: flex-end; background: color-mix(in srgb, var(--_accent) 15%, transparent); white-space: pre-wrap; }
    .answer { align-self: stretch; background: color-mix(in srgb, currentColor 6%, transparent); }
    .answer .text.plain { white-space: pre-wrap; }
    .answer pre, .trajectory pre { white-space: pre-wrap; overflow-wrap: anywhere; margin: 0; font-size: 0.85em; }
    /* A wide table or image in an answer scrolls or shrinks inside the answer, never past the element's border. */
    .answer table { display: block; max-width: 100%; overflow-x: auto; }
    .answer img { max-width: 100%; }
    .calls { margin: 0 0 0.25rem; padding-left: 1.2rem; font-size: 0.8rem; color: var(--_muted); }
    .live-stats { font-variant-numeric: tabular-nums; }
    details.group { margin-top: 0.5rem; font-size: 0.85rem; }
    details.group summary { cursor: pointer; color: var(--_muted); }
    .hint { margin: 0.5rem 0 0; }
    .live { font-size: 0.85rem; color: var(--_muted); white-space: pre-wrap; }
    .visually-hidden { position: absolute; width: 1px; height: 1px; margin: -1px; padding: 0; overflow: hidden; clip: rect(0 0 0 0); white-space: nowrap; border: 0; }
    .trajectory dl { display: grid; grid-template-columns: max-content minmax(0, 1fr); gap: 0.15rem 0.75rem; margin: 0.25rem 0; }
    .trajectory dt { font-weight: 600; }
    .trajectory dd { margin: 0; }
    .trajectory .bad { color: var(--agentflow-error-color, #b00020); }
    .turns { padding-left: 1rem; }
    form { display: flex; gap: 0.5rem; margin-top: 0.75rem; align-items: flex-end; }
    textarea { flex: 1; font: inherit; min-height: 2.6rem; resize: vertical; border-radius: var(--_radius); padding: 0.4rem; color: inherit; background: transparent; border: 1px solid color-mix(in srgb, currentColor 30%, transparent); }
    .error { color: var(--agentflow-error-color, #b00020); white-space: pre-wrap; }
    progress { width: 100%; }
    details.tools { margin-top: 0.5rem; font-size: 0.85rem; }
    .empty { color: var(--_muted); }
    .no-model { border: 1px solid color-mix(in srgb, currentColor 20%, transparent); border-radius: var(--_radius); padding: 0.6rem 0.75rem; }
    .no-model p { margin: 0 0 0.5rem; }
    .confirm .row { display: flex; gap: 0.5rem; flex-wrap: wrap; }
    .start { list-style: none; margin: 0; padding: 0; display: grid; gap: 0.4rem; }
    .start li { display: flex; gap: 0.5rem; align-items: baseline; flex-wrap: wrap; }
    .start li button { flex: none; min-width: 8.5rem; }
    .start li span { flex: 1 1 12rem; color: var(--_muted); }
    .scripted { font-size: 0.75rem; color: #92400e; margin: 0 0 0.25rem; }
    .confirm { margin-top: 0.4rem; }
    aside li .delete-question { grid-column: 1 / -1; }
  `,
  ];

  override connectedCallback(): void {
    super.connectedCallback();
    this.unsubscribeStorage = onStorageNotice((n) => {
      if (n.dbName === (this.dbName ?? DB_NAME)) this.storageNotice = n.kind === 'resolved' ? null : n;
    });
    this.storageNotice = storageNotice(this.dbName ?? DB_NAME);
    void this.init();
  }

  override disconnectedCallback(): void {
    super.disconnectedCallback();
    this.unsubscribe?.();
    this.unsubscribe = null;
    this.unsubscribeStorage?.();
    this.unsubscribeStorage = null;
    this.live?.controller.abort();
  }

  private async init(): Promise<void> {
    try {
      const cut = await markStaleRunsInterrupted(new Set(this.live ? [this.live.id] : []), this.dbName);
      await this.refreshList();
      await this.reopenInterrupted(cut);
      await this.setUpTools();
    } catch (e) {
      this.error = storageOpenError(e);
    }
  }

  protected override willUpdate(changed: PropertyValues<this>): void {
    if ((changed.has('tools') || changed.has('extraTools') || changed.has('registry')) && this.hasUpdated) void this.setUpTools();
  }

  /** The registry in use: the host's, or the element's own with the built-in and extra tools. */
  get toolRegistry(): ToolRegistry {
    if (this.registry) return this.registry;
    this.ownRegistry ??= new ToolRegistry();
    return this.ownRegistry;
  }

  private async setUpTools(): Promise<void> {
    const reg = this.toolRegistry;
    for (const t of this.extraTools) if (!reg.has(t.card.name)) reg.register(t);
    if (reg === this.ownRegistry && this.builtinsFor !== reg) {
      this.builtinsFor = reg;
      registerBuiltinTools(reg, { engine: () => this.currentEngines().then((e) => e.shared) });
    }
    await restoreToolSwitches(reg, this.dbName);
    if (this.tools !== undefined) {
      const on = new Set(this.tools.split(',').map((s) => s.trim()).filter(Boolean));
      for (const s of reg.list()) reg.setEnabled(s.name, on.has(s.name));
    }
    this.unsubscribe?.();
    this.unsubscribe = reg.subscribe(() => (this.toolStatus = reg.list()));
    this.toolStatus = reg.list();
  }

  private async currentEngines(): Promise<AgentEngines> {
    if (this.engines) return this.engines;
    if (this.loadedEngines) return this.loadedEngines;
    if (!this.plannerModel && !this.plannerFromShared) {
      throw new Error('No models are loaded. Load them in the Models & GPU tab, or give this element a planner-model attribute (a URL or Hugging Face repo id), or shared-model with planner-from-shared.');
    }
    const tracker = new ProgressTracker();
    this.loading = { tracker, which: 'models' };
    try {
      const { loadEngines } = await import('../controllers/engines/model-loader');
      this.loadedEngines = await loadEngines({
        plannerModel: this.plannerModel ?? '',
        plannerFromShared: !!this.plannerFromShared,
        ...(this.sharedModel ? { sharedModel: this.sharedModel } : {}),
        adapterId: this.adapter ?? null,
        dbName: this.dbName,
        onProgress: (which: string, p: LoadProgress) => {
          tracker.update(p);
          this.loading = { tracker, which };
        },
      });
      return this.loadedEngines;
    } finally {
      this.loading = null;
    }
  }

  /**
   * After a reload cut an answer off, its conversation comes back on screen (with Resume) rather than an
   * empty chat: the newest of the user's own questions among `cut`, unless something is shown already.
   */
  private async reopenInterrupted(cut: string[]): Promise<void> {
    const ids = new Set(cut);
    const newest = this.conversations.filter((c) => ids.has(c.id) && conversationGroup(c) === 'chat').sort((a, b) => b.updatedAt - a.updatedAt)[0];
    if (!newest || this.thread.length || this.live) return;
    await this.loadSteps(newest.id);
    if (!this.thread.length && !this.live) this.thread = [newest.id];
  }

  async refreshList(): Promise<void> {
    this.conversations = await listConversations(this.dbName);
  }

  private async loadSteps(id: string): Promise<void> {
    this.stepsById = { ...this.stepsById, [id]: await getSteps(id, this.dbName) };
  }

  /** A question chosen in the list: shown, and a folded list (a phone's) folds again so the chat is in view. */
  private openFromList(id: string): void {
    this.listOpen = false;
    void this.open(id);
  }

  /** Shows a stored conversation (reopen). */
  async open(id: string): Promise<void> {
    await this.loadSteps(id);
    this.thread = [id];
  }

  /**
   * When a worker behind `engines` has died, says so with a way back and returns true: engines this element
   * loaded are dropped (the next load starts fresh workers); the host is told with `agentflow-engines-lost`
   * so it can drop its own. Every later question would fail the same way, so none is started on them.
   */
  private noteLostEngine(engines: AgentEngines): boolean {
    const lost = engines.planner.gone ?? engines.shared.gone ?? null;
    if (!lost) return false;
    this.error = `${lost.message}.`;
    this.enginesLost = true;
    if (engines === this.loadedEngines) {
      this.loadedEngines.dispose();
      this.loadedEngines = null;
    }
    this.dispatchEvent(new CustomEvent('agentflow-engines-lost', { detail: { engines, error: lost }, bubbles: true, composed: true }));
    return true;
  }

  /** The "Reload the models" action after a worker died: this element's own models, or the host's. */
  async reloadModels(): Promise<void> {
    this.enginesLost = false;
    this.error = null;
    if (!this.engines && (this.plannerModel || this.plannerFromShared)) {
      try {
        await this.currentEngines();
      } catch (e) {
        this.error = message(e);
      }
    } else this.loadModelAction?.();
  }

  /** True when no engines are set nor can be loaded from attributes: the chat says so and offers the demo. */
  get noModel(): boolean {
    return !this.engines && !this.loadedEngines && !this.plannerModel && !this.plannerFromShared;
  }

  /** "Try the demo": the scripted engines, announced to the host like models loaded elsewhere. */
  useDemo(): void {
    const engines = scriptedDemoEngines();
    this.engines = engines;
    // Scripted engines give no token ids to train on.
    this.trainer = undefined;
    this.error = null;
    this.dispatchEvent(new CustomEvent('agentflow-engines', { detail: { engines, label: 'scripted demo (no model)' }, bubbles: true, composed: true }));
  }

  /**
   * Asks the agent `query`; resolves when the run ends (answered, stopped or failed), or with null when it
   * did not start: no model, or a question too long for the models (the question then stays in the input).
   */
  async ask(query: string): Promise<SessionResult | null> {
    const q = query.trim();
    if (!q || this.live || this.asking) return null;
    this.error = null;
    if (this.noModel) {
      this.error = this.modelsLoading ? `${this.modelsLoading} Ask again when they are ready.` : 'No model is loaded, so nothing can answer yet: load a model, or try the scripted demo.';
      return null;
    }
    let done!: () => void;
    const asking = this.engines ? { engines: this.engines, stopped: false, checked: new Promise<void>((r) => (done = r)), done: () => done() } : null;
    this.asking = asking;
    let engines: AgentEngines;
    try {
      engines = await this.currentEngines();
      if (this.noteLostEngine(engines)) return null;
      await checkQueryFits(q, engines, this.toolRegistry.cards(), { maxTurns: this.maxTurns });
    } catch (e) {
      this.error = message(e);
      return null;
    } finally {
      if (this.asking === asking) this.asking = null;
      asking?.done();
    }
    // The page is replacing the engines it was checked on: it does not start (the question stays in the input).
    if (asking?.stopped) {
      this.error = 'Not asked: the models were being replaced while the question was checked. Ask again.';
      return null;
    }
    const ta = this.renderRoot.querySelector('textarea');
    if (ta && ta.value.trim() === q) ta.value = '';
    const id = globalThis.crypto?.randomUUID?.() ?? `c-${Date.now().toString(36)}-${Math.random().toString(36).slice(2)}`;
    return this.run(id, engines, q, (opts) => startConversation(q, { ...opts, id }));
  }

  /**
   * Continues an interrupted conversation from its stored steps. When the engines are not those it started
   * with, it asks first (confirmResume) unless `allowEngineChange`.
   */
  async resume(id: string, allowEngineChange = false): Promise<SessionResult | null> {
    if (this.live) return null;
    this.confirmResume = null;
    const conv = this.conversations.find((c) => c.id === id);
    if (this.noModel) {
      this.error = 'No model is loaded to resume this run with: load a model, or try the scripted demo.';
      return null;
    }
    let engines: AgentEngines;
    try {
      engines = await this.currentEngines();
    } catch (e) {
      this.error = message(e);
      return null;
    }
    if (!this.thread.includes(id)) this.thread = [id];
    return this.run(id, engines, conv?.query ?? '', (opts) => resumeConversation(id, { ...opts, allowEngineChange }), true);
  }

  private async run(
    id: string,
    engines: AgentEngines,
    query: string,
    go: (opts: Parameters<typeof startConversation>[1]) => Promise<SessionResult>,
    /** A stored run continued: the live line says where it picks up (read from its steps once storage opens). */
    resuming = false,
  ): Promise<SessionResult | null> {
    const controller = new AbortController();
    let ended!: () => void;
    this.liveOn = { engines, ended: new Promise<void>((r) => (ended = r)) };
    this.lastRunId = id;
    this.pending.set(id, query);
    this.live = {
      id,
      module: null,
      turn: 0,
      text: '',
      answer: '',
      controller,
      call: startCall(performance.now()),
      calls: [],
      waitingForStorage: true,
      toolNote: null,
      resuming,
    };
    // Each question is its own conversation (the agent sees none of the earlier ones), so it gets a view of
    // its own; the earlier ones stay in the sidebar.
    this.thread = [id];
    // The elapsed time of a call that streams nothing (a long prefill, a tool) still moves.
    const tick = setInterval(() => this.requestUpdate(), 250);
    if (this.failed[id]) {
      const { [id]: _retried, ...rest } = this.failed;
      this.failed = rest;
    }
    this.stepsById = { ...this.stepsById, [id]: this.stepsById[id] ?? [] };
    let result: SessionResult | null = null;
    // Stopped before storage opened: there is nothing stored to read back (and reading would wait on it too).
    let opened = false;
    try {
      opened = await this.storageOpened(id, query, controller.signal);
      if (!opened) return null;
      if (resuming) {
        // Its stored steps say where it picks up ("Resuming at turn 3"), and the calls after them follow on.
        await this.loadSteps(id);
        const at = upcomingCall(this.stepsById[id] ?? [], this.maxTurns);
        const l = this.live;
        if (at && l?.id === id) this.live = { ...l, module: at.module, turn: at.turn };
      }
      const listed = this.refreshList();
      listed.catch(() => undefined); // awaited below; a run that throws first must not leave it unhandled
      result = await go({
        tools: toolsFromRegistry(this.toolRegistry, (note) => {
          // Only the executor's call runs a tool; a note arriving after its step (a late one) is dropped.
          const l = this.live;
          if (l?.id === id && l.module === 'executor') this.live = { ...l, toolNote: note };
        }),
        engines,
        // The Tools settings' "Constrain replies" switch (on unless turned off): read per question, so a change applies at once.
        config: { maxTurns: this.maxTurns, constrainReplies: await readConstrainReplies(this.dbName) },
        signal: controller.signal,
        dbName: this.dbName,
        onToken: (module, turn, piece) => {
          const l = this.live;
          if (!l || l.id !== id) return;
          const fresh = l.module !== module || l.turn !== turn;
          const t = performance.now();
          // Every call ends with a step, and onStep restarts the clock: these tokens are the current call's.
          const call = tokenArrived(l.call, t);
          this.live = { ...l, module, turn, call, text: fresh ? piece : l.text + piece, answer: module === 'generator' ? (fresh ? piece : l.answer + piece) : l.answer };
        },
        onCallStart: (_module, _turn, engine, messages) => {
          const l = this.live;
          if (!engine.countPromptTokens || l?.id !== id) return;
          const startedAt = l.call.startedAt;
          engine.countPromptTokens(messages).then(
            (n) => {
              const now = this.live;
              // Counted for this call only: by now a later call may have its own clock.
              if (now?.id === id && now.call.startedAt === startedAt) this.live = { ...now, call: { ...now.call, promptTokens: n } };
            },
            () => undefined, // only a hint; the call itself reports what failed
          );
        },
        onStep: (step) => {
          const steps = [...(this.stepsById[id] ?? []), step];
          this.stepsById = { ...this.stepsById, [id]: steps };
          // Say what runs next before its first token arrives (a slow prefill would otherwise show the last module).
          const l = this.live;
          if (l && l.id === id) {
            const t = performance.now();
            const ended = callOfStep(step);
            const calls = ended ? [...l.calls, callStat(ended.module, step.turn, l.call, t, step, ended.outcome)] : l.calls;
            const next = upcomingCall(steps, this.maxTurns);
            this.live = next
              ? { ...l, calls, call: startCall(t), module: next.module, turn: next.turn, text: '', toolNote: null, resuming: false }
              : { ...l, calls, call: startCall(t), toolNote: null, resuming: false };
          }
          if (step.kind === 'analysis') void this.refreshList();
          this.dispatchEvent(new CustomEvent<AgentflowTurnDetail>('agentflow-turn', { detail: { conversationId: id, turn: step.turn, kind: step.kind, step }, bubbles: true, composed: true }));
        },
      });
      await listed;
      if (result.status === 'error' && result.error) this.error = result.error;
      this.noteLostEngine(engines);
      this.dispatchEvent(
        new CustomEvent<AgentflowAnswerDetail>('agentflow-answer', {
          detail: { conversationId: id, query, answer: result.answer, finalAnswer: result.finalAnswer, status: result.status, stopReason: result.stopReason },
          bubbles: true,
          composed: true,
        }),
      );
    } catch (e) {
      if (e instanceof EngineMismatchError) this.confirmResume = { id, message: e.message };
      // Storage that would not open (or closed), a step that could not be saved: the question stays in the
      // thread with the reason where its answer would be.
      else if (!this.noteLostEngine(engines)) this.failed = { ...this.failed, [id]: { query, error: message(e) } };
    } finally {
      clearInterval(tick);
      this.live = null;
      this.liveOn = null;
      ended();
      this.pending.delete(id);
      if (opened) {
        await this.loadSteps(id).catch(() => undefined);
        await this.refreshList().catch(() => undefined);
      }
    }
    return result;
  }

  /**
   * Waits for the database before a run starts: while another tab holds it at an older version (a `blocked`
   * open, which can last until that tab is closed) the live line says so, and the run starts by itself once it
   * opens. False when Stop ended the wait: nothing was stored, so the question goes back to the input and is
   * shown as not answered. An open that fails for good rejects, as the run itself would.
   */
  private async storageOpened(id: string, query: string, signal: AbortSignal): Promise<boolean> {
    try {
      await untilAborted(openAgentDb(this.dbName), signal);
    } catch (e) {
      if (!signal.aborted) throw e;
      const blocked = this.storageNotice?.kind === 'blocked';
      const why = blocked ? ' (another AgentFlow tab holds it open at an older version)' : '';
      this.failed = { ...this.failed, [id]: { query, error: `stopped while waiting for this browser’s storage${why}; nothing was saved.` } };
      const ta = this.renderRoot.querySelector('textarea');
      if (ta && !ta.value.trim() && !this.conversations.some((c) => c.id === id)) ta.value = query;
      return false;
    }
    const l = this.live;
    // The clock times module calls: it starts now, not while storage was opening.
    if (l?.id === id) this.live = { ...l, waitingForStorage: false, call: startCall(performance.now()) };
    return true;
  }

  stop(): void {
    this.live?.controller.abort(new DOMException('Stopped by the user', 'AbortError'));
  }

  /**
   * What runs on the page's engines (`engines`), for the page to stop before it replaces them: the answer in
   * progress (stopped as Stop does: stored as interrupted, resumable) and the training run (paused as
   * pauseTraining() does: checkpoints kept). Both at once are one use that stops both.
   */
  engineUse(): EngineUse | null {
    const uses = [this.answerUse(), this.trainingUse()].filter((u): u is EngineUse => u !== null);
    if (uses.length <= 1) return uses[0] ?? null;
    return {
      what: describeUses(uses),
      kept: uses.map((u) => u.kept).join('; '),
      plural: true,
      stop: async () => {
        await Promise.all(uses.map((u) => u.stop()));
      },
    };
  }

  private answerUse(): EngineUse | null {
    const a = this.asking;
    if (a && this.engines && a.engines === this.engines) {
      return {
        what: 'a chat answer',
        kept: 'it did not start; the question stays in the input',
        stop: async () => {
          a.stopped = true;
          await a.checked;
        },
      };
    }
    const on = this.liveOn;
    if (!on || !this.engines || on.engines !== this.engines) return null;
    return {
      what: 'a chat answer',
      kept: 'it is interrupted with its steps kept; resume it in Chat',
      stop: async () => {
        this.stop();
        await on.ended;
      },
    };
  }

  /** The training run started through train() / resumeTraining() on the page's engines: stopping pauses it. */
  private trainingUse(): EngineUse | null {
    const t = this.trainingOn;
    if (!t || !this.engines || t.engines !== this.engines) return null;
    return {
      what: `a training run${t.run ? ` (${t.run.id})` : ''} started through the chat element`,
      kept: 'it is paused with its checkpoints kept; resumeTraining() or the Training tab continues it',
      stop: async () => {
        this.pauseRun(t);
        await t.ended;
      },
    };
  }

  /**
   * Fine-tunes the planner's LoRA adapter with Flow-GRPO on `o.items` (questions with reference answers), with
   * this element's engines, tools and database; resolves when the run ends or is paused. Each step fires
   * `agentflow-train-step`, the end `agentflow-train-done`. The planner must run on this page's runtime. The
   * run is one of engineUse()'s uses; setting other `engines` while it runs on the page's pauses it.
   */
  async train(o: ElementTrainOptions): Promise<RunSummary> {
    return this.drive((on) => startElementTraining(o, on, toolsFromRegistry(this.toolRegistry), this.dbName));
  }

  /** Continues a stored training run (paused, or cut off by a reload) from its newest intact checkpoint. */
  async resumeTraining(runId: string): Promise<RunSummary> {
    return this.drive((on) => resumeElementTraining(runId, on, toolsFromRegistry(this.toolRegistry), this.dbName));
  }

  /** The models this element loads itself (loading them if need be), with the optimizer their planner brings. */
  private async ownTrainableEngines(): Promise<TrainableEngines> {
    const engines = await this.currentEngines();
    return { engines, trainer: (engines === this.loadedEngines ? this.loadedEngines.trainer : this.trainer) ?? null };
  }

  /** Stops the training run after a checkpoint; resumeTraining(runId) continues it. */
  pauseTraining(): void {
    if (this.trainingOn) this.pauseRun(this.trainingOn);
  }

  /** Pauses `t`: the step in progress is dropped, its checkpoints stay; one still being set up stops before its first step. */
  private pauseRun(t: TrainingOn): void {
    t.pauseWanted = true;
    t.run?.pause();
  }

  /** Sets up a run with `start` on the element's engines and runs it, as `trainingOn` from start to end. */
  private async drive(start: (on: TrainableEngines) => Promise<TrainingRun>): Promise<RunSummary> {
    if (this.trainingOn) throw new Error(`training run${this.trainingOn.run ? ` '${this.trainingOn.run.id}'` : ''} is already running; pauseTraining() first`);
    // The page's engines and their optimizer are taken here, before the first await, and the run is set up on
    // them alone: a page that sets other `engines` and `trainer` right after calling train() pauses this run
    // (the setter), and read after an await the new trainer would be paired with the old engines.
    const given: TrainableEngines | null = this.engines ? { engines: this.engines, trainer: this.trainer ?? null } : null;
    let ended!: () => void;
    const t: TrainingOn = { engines: given?.engines ?? null, run: null, pauseWanted: false, enginesReplaced: false, ended: new Promise<void>((r) => (ended = r)) };
    this.trainingOn = t;
    this.trainingNotice = null;
    try {
      const on = given ?? (await this.ownTrainableEngines());
      t.engines = on.engines;
      const run = await start(on);
      t.run = run;
      const going = driveTraining(run, {
        onStep: (runId, metrics) => this.dispatchEvent(new CustomEvent<AgentflowTrainStepDetail>('agentflow-train-step', { detail: { runId, metrics }, bubbles: true, composed: true })),
        onProgress: () => undefined,
      });
      // run() marks itself running before its first await, so this pauses a run asked to stop while it was set
      // up before its first step (its record is stored, at its start, and resumes like any paused run).
      if (t.pauseWanted) run.pause();
      const summary = await going;
      if (t.enginesReplaced) this.saySwapPaused(summary);
      this.dispatchEvent(new CustomEvent<AgentflowTrainDoneDetail>('agentflow-train-done', { detail: { summary }, bubbles: true, composed: true }));
      return summary;
    } finally {
      this.trainingOn = null;
      ended();
    }
  }

  private saySwapPaused(summary: RunSummary): void {
    const id = summary.runId;
    const message = `Training run '${id}' was paused after ${summary.steps} step${summary.steps === 1 ? '' : 's'}: the page replaced the engines it ran on. Its checkpoints are kept; resumeTraining('${id}') continues it on the new engines.`;
    this.trainingNotice = message;
    this.dispatchEvent(new CustomEvent<AgentflowTrainStoppedDetail>('agentflow-train-stopped', { detail: { runId: id, reason: 'engines-replaced', message }, bubbles: true, composed: true }));
  }

  /** Deletes a stored conversation and its steps (the list's delete button asks first). */
  async deleteConversation(id: string): Promise<void> {
    if (this.deleting === id) this.deleting = null;
    if (this.live?.id === id) return;
    await deleteStoredConversation(id, this.dbName);
    this.thread = this.thread.filter((t) => t !== id);
    const { [id]: _gone, ...rest } = this.stepsById;
    this.stepsById = rest;
    await this.refreshList();
  }

  async exportOne(id: string): Promise<void> {
    downloadText(await exportConversation(id, this.dbName), `agentflow-conversation-${id}.json`, 'application/json');
  }

  async exportAll(): Promise<void> {
    downloadText(await exportAllConversations(this.dbName), 'agentflow-conversations.json', 'application/json');
  }

  private toggle(id: string): void {
    const next = new Set(this.expanded);
    if (next.has(id)) next.delete(id);
    else next.add(id);
    this.expanded = next;
  }

  private onSubmit(e: Event): void {
    e.preventDefault();
    const q = this.renderRoot.querySelector('textarea')!.value;
    // ask() empties the input once the run starts; a refused question stays there to edit.
    if (q.trim()) void this.ask(q);
  }

  private onKey(e: KeyboardEvent): void {
    // Enter sends, Shift+Enter is a new line (as in most chat apps).
    if (e.key === 'Enter' && !e.shiftKey && !e.isComposing) this.onSubmit(e);
  }

  /** The tool the conversation's latest planner step chose (what its executor call is for), if any. */
  private plannedTool(id: string): string | null {
    const planner = (this.stepsById[id] ?? []).findLast((s) => s.kind === 'planner');
    if (!planner) return null;
    const d = planner.data as Partial<PlannerStepData>;
    return d.resolvedTool ?? d.action?.toolName ?? null;
  }

  private renderText(text: string) {
    if (this.renderAs === 'text') return html`<div class="text plain">${text}</div>`;
    // Text the Markdown parser must not see (too deeply nested, too long) or fails on is shown as it is.
    const r = markdownOrText(text);
    if ('html' in r) return html`<div class="text md">${unsafeHTML(r.html)}</div>`;
    return html`<div class="text plain">${r.text}</div><p class="status" data-testid="plain-why">${r.why}</p>`;
  }

  private renderConversation(id: string) {
    const conv = this.conversations.find((c) => c.id === id);
    const steps = this.stepsById[id] ?? [];
    const live = this.live?.id === id ? this.live : null;
    const traj = trajectoryFromSteps(steps);
    const answer = live ? live.answer : (traj.answer ?? conv?.answer);
    const failed = live ? undefined : this.failed[id];
    const open = this.expanded.has(id);
    const scripted = live ? isScripted(this.engines ?? this.loadedEngines) : !!storedEngines(conv?.settings)?.scripted;
    const confirm = this.confirmResume?.id === id ? this.confirmResume : null;
    return html`
      <div class="message user" part="message user" data-testid="query">${conv?.query ?? failed?.query ?? this.pendingQuery(id)}</div>
      ${live
        ? // What a screen reader hears while the run works: the call in progress, once per change (the clock
          // and the streamed text below change several times a second, which a live region would read out).
          html`<p class="visually-hidden" role="status" data-testid="live-phase">${live.waitingForStorage && this.storageNotice?.kind === 'blocked' ? WAITING_FOR_BLOCKED_STORAGE : liveHeading(live.module, live.turn, live.toolNote, live.resuming)}</p>`
        : nothing}
      <div class="message answer" part="message answer" data-testid="answer" data-conversation=${id} aria-live=${id === this.lastRunId ? 'polite' : 'off'} aria-busy=${live ? 'true' : 'false'}>
        ${scripted ? html`<p class="scripted" part="scripted" data-testid="scripted-label">Scripted demo: no model wrote this answer.</p>` : nothing}
        ${live
          ? html`${live.calls.length
                ? html`<ol class="calls" data-testid="live-calls" aria-label="Module calls so far">${live.calls.map((c) => html`<li>${formatCall(c)}</li>`)}</ol>`
                : nothing}
              ${live.waitingForStorage && this.storageNotice?.kind === 'blocked'
                ? html`<div class="live" data-testid="live">${WAITING_FOR_BLOCKED_STORAGE}</div>`
                : html`<div class="live" data-testid="live">${liveHeading(live.module, live.turn, live.toolNote, live.resuming)}
<span class="live-stats" data-testid="live-stats">${formatLiveCall(live.call, performance.now())}</span>
${livePreview(live.module, live.text, live.module === 'executor' ? this.plannedTool(id) : null)}</div>`}`
          : nothing}
        ${answer ? (live ? html`<div class="text plain">${answer}</div>` : this.renderText(answer)) : !live && !failed ? html`<p class="status">${conv?.status === 'interrupted' ? 'Interrupted before an answer.' : conv?.status === 'error' ? 'The run failed.' : ''}</p>` : nothing}
        ${failed ? html`<p class="error" role="alert" part="error" data-testid="answer-error">${answer ? '' : 'Not answered: '}${failed.error}</p>` : nothing}
        <div class="actions">
          <button type="button" part="button trajectory-toggle" aria-expanded=${open ? 'true' : 'false'} aria-controls=${`traj-${id}`} @click=${() => this.toggle(id)}>
            ${open ? 'Hide' : 'Show'} trajectory (${traj.turns.length} turn${traj.turns.length === 1 ? '' : 's'})
          </button>
          ${conv?.status === 'interrupted' && !this.live && !confirm ? html`<button type="button" part="button" @click=${() => this.resume(id)}>Resume</button>` : nothing}
        </div>
        ${confirm
          ? html`<div class="confirm" role="alertdialog" aria-label="Resume on other engines?" data-testid="resume-confirm">
              <p>${confirm.message}</p>
              <div class="row">
                <button type="button" part="button" @click=${() => this.resume(id, true)}>Resume on the current engines</button>
                <button type="button" part="button" @click=${() => (this.confirmResume = null)}>Keep it interrupted</button>
              </div>
            </div>`
          : nothing}
        <div id=${`traj-${id}`} ?hidden=${!open}>${open ? renderTrajectory(traj) : nothing}</div>
      </div>
    `;
  }

  private pendingQuery(id: string): string {
    return this.pending.get(id) ?? '';
  }

  /** A run this view is executing reads 'running', whatever the list last read (a resumed one was 'interrupted'). */
  private statusOf(c: ConversationRecord): string {
    if (this.live?.id === c.id) return 'running';
    return c.status === 'done' ? '' : c.status;
  }

  private renderListItem(c: ConversationRecord) {
    return html`<li>
      <button type="button" class="open" part="button conversation" title=${c.query || c.title} aria-current=${this.thread.includes(c.id) ? 'true' : 'false'} @click=${() => this.openFromList(c.id)}>
        ${c.title}
      </button>
      <span class="status" data-testid="conversation-status">${this.statusOf(c)}</span>
      <button type="button" part="button" aria-label=${`Export conversation “${c.title}” as JSON`} title="Export as JSON" @click=${() => this.exportOne(c.id)}>⤓</button>
      ${this.deleting === c.id
        ? deleteQuestion(`conversation “${c.title}”`, 'this conversation', () => void this.deleteConversation(c.id), () => (this.deleting = null))
        : html`<button type="button" part="button" aria-label=${`Delete conversation “${c.title}”`} title="Delete" ?disabled=${this.live?.id === c.id} @click=${() => {
            this.deleting = c.id;
            void focusDeleteQuestion(this);
          }}>✕</button>`}
    </li>`;
  }

  /** The folded list's one line: how many questions, and the one on screen ("Conversations (4): What is 2+2?"). */
  private foldLabel(questions: number): string {
    const id = this.live?.id ?? this.thread[0];
    const shown = id ? (this.conversations.find((c) => c.id === id)?.title ?? this.pending.get(id)) : undefined;
    return `Conversations (${questions})${shown ? `: ${shown}` : ': new question'}`;
  }

  /** Runs the Experiments and Training tabs made: kept apart from the user's questions, folded until opened. */
  private renderGroup(group: ConversationGroup, label: string, list: ConversationRecord[]) {
    if (!list.length) return nothing;
    const open = this.openGroups.has(group);
    return html`<details class="group" data-group=${group} ?open=${open} @toggle=${(e: Event) => this.toggleGroup(group, (e.target as HTMLDetailsElement).open)}>
      <summary>${label} (${list.length})</summary>
      ${open ? html`<ul data-testid=${`${group}-list`} aria-label=${label}>${list.map((c) => this.renderListItem(c))}</ul>` : nothing}
    </details>`;
  }

  private toggleGroup(group: ConversationGroup, open: boolean): void {
    if (open === this.openGroups.has(group)) return;
    const next = new Set(this.openGroups);
    if (open) next.add(group);
    else next.delete(group);
    this.openGroups = next;
  }

  override render() {
    const loading = this.loading?.tracker.summary();
    const groups: Record<ConversationGroup, ConversationRecord[]> = { chat: [], experiment: [], training: [] };
    for (const c of this.conversations) groups[conversationGroup(c)].push(c);
    return html`<div class="layout">
      <aside part="sidebar" aria-label="Conversations" class=${this.listOpen ? 'open' : ''}>
        <div class="aside-head">
          <strong id="conv-h">Conversations</strong>
          <button type="button" class="fold" part="button conversations-fold" data-testid="conversations-fold" aria-expanded=${this.listOpen ? 'true' : 'false'} aria-controls="conv-body" @click=${() => (this.listOpen = !this.listOpen)}>
            ${this.foldLabel(groups.chat.length)}
          </button>
          <button type="button" part="button" @click=${() => (this.thread = [])} ?disabled=${!!this.live}>New</button>
        </div>
        <div class="conv-body" id="conv-body">
        ${groups.chat.length === 0 ? html`<p class="empty">None yet.</p>` : nothing}
        <ul aria-labelledby="conv-h" data-testid="conversation-list">
          ${groups.chat.map((c) => this.renderListItem(c))}
        </ul>
        ${this.renderGroup('experiment', 'Experiment items', groups.experiment)}
        ${this.renderGroup('training', 'Training rollouts', groups.training)}
        ${this.conversations.length ? html`<button type="button" part="button" @click=${() => this.exportAll()}>Export all</button>` : nothing}
        ${this.renderToolSwitches()}
        </div>
      </aside>
      <section aria-label="Chat">
        <div class="messages" part="messages" role="log" aria-label="Messages">
          ${this.noModel ? this.renderNoModel() : nothing}
          ${this.thread.length === 0 && !this.live && !this.noModel ? html`<p class="empty">Ask a question. The agent plans, calls tools, checks its work and answers; open an answer to see each step.</p>` : nothing}
          ${this.thread.map((id) => this.renderConversation(id))}
        </div>
        ${loading
          ? html`<div role="status">
              <label>Loading ${this.loading!.which}: ${loading.status}
                <progress max="100" .value=${loading.percent ?? 0} aria-valuetext=${`${formatBytes(loading.bytesDone)} of ${formatBytes(loading.bytesTotal)}`}></progress>
              </label>
            </div>`
          : nothing}
        ${this.storageNotice && !this.hideStorageNotices ? html`<p class="error" role="alert" part="error storage" data-testid="storage-notice">${this.storageNotice.message}</p>` : nothing}
        ${this.error ? html`<p class="error" role="alert" part="error">${this.error}</p>` : nothing}
        ${this.trainingNotice ? html`<p class="status" role="status" part="training-notice" data-testid="training-notice">${this.trainingNotice}</p>` : nothing}
        ${this.enginesLost && (this.loadModelAction || this.plannerModel || this.plannerFromShared)
          ? html`<button type="button" class="primary" part="button" data-testid="reload-models" @click=${() => void this.reloadModels()}>Reload the models</button>`
          : nothing}
        <p class="status hint" data-testid="independent-hint">Each question starts a new conversation: the agent does not see earlier questions, which stay in the list.</p>
        <form part="form" @submit=${this.onSubmit}>
          <textarea part="input" aria-label="Your question" placeholder="Ask the agent…" @keydown=${this.onKey}></textarea>
          ${this.live
            ? html`<button type="button" part="button stop" @click=${() => this.stop()}>Stop</button>`
            : html`<button type="submit" class="primary" part="button send">Send</button>`}
        </form>
      </section>
    </div>`;
  }

  private renderNoModel() {
    if (this.modelsLoading) return html`<div class="no-model" role="status" data-testid="no-model"><p>${this.modelsLoading}</p></div>`;
    const host = !!this.loadModelAction;
    // The first screen: three ways in, each a button to the place it names.
    return html`<div class="no-model" part="no-model" data-testid="no-model">
      <p><strong>No model is loaded</strong>, so the agent cannot answer yet.${host ? ' To start:' : ' This page has given the chat no model (planner-model attribute or engines property); the scripted demo shows how it works.'}</p>
      <ul class="start" data-testid="start">
        <li>
          <button type="button" part="button" @click=${() => this.useDemo()}>Try the demo</button>
          <span>a scripted agent answers at once, with no download; its answers are made up by a script, not written by a model.</span>
        </li>
        ${host
          ? html`<li>
              <button type="button" class="primary" part="button" @click=${() => this.loadModelAction?.()}>Load a model</button>
              <span>for real answers: it downloads once and stays in this browser.</span>
            </li>`
          : nothing}
        ${this.trainToyAction
          ? html`<li>
              <button type="button" part="button" @click=${() => this.trainToyAction?.()}>Train the toy</button>
              <span>watch the planner's training (Flow-GRPO) on a tiny built-in task, in seconds and with no download.</span>
            </li>`
          : nothing}
      </ul>
    </div>`;
  }

  private renderToolSwitches() {
    if (!this.toolStatus.length) return nothing;
    return html`<details class="tools" part="tools">
      <summary>Tools</summary>
      <p class="status">Tools marked “network” send data off this device; they wait for your permission before they run.</p>
      <agentflow-tool-switches .registry=${this.toolRegistry} db-name=${this.dbName ?? nothing}></agentflow-tool-switches>
    </details>`;
  }
}

/** The live line of a question waiting for a database another tab holds open (a `blocked` upgrade). */
const WAITING_FOR_BLOCKED_STORAGE = 'Waiting for this browser’s storage: another AgentFlow tab holds it open at an older version. Close or reload that tab; the question then starts by itself. Stop cancels it.';

function message(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}

if (!customElements.get('agentflow-chat')) customElements.define('agentflow-chat', AgentFlowChat);

declare global {
  interface HTMLElementTagNameMap {
    'agentflow-chat': AgentFlowChat;
  }
  interface HTMLElementEventMap {
    'agentflow-turn': CustomEvent<AgentflowTurnDetail>;
    'agentflow-answer': CustomEvent<AgentflowAnswerDetail>;
    'agentflow-train-stopped': CustomEvent<AgentflowTrainStoppedDetail>;
  }
}

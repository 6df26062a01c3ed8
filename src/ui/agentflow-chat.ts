// <agentflow-chat>: the embeddable chat element. One module script and this tag give a page the agent:
// a message list with streamed output, each answer expandable into its stored trajectory, a stop button,
// and the stored conversations (list, reopen, resume, delete, export as JSON).
//
// Engines: the `engines` property ({planner, shared} ChatEngines) wins; otherwise the element loads the
// real ones from `planner-model` (URL or Hugging Face repo id) and `shared-model` (web-llm id; without it the planner runs every module) on the
// first question; `planner-from-shared` loads the planner from the shared model's web-llm build instead (one download). Tools: the built-in ones plus `extraTools`; the `tools` attribute lists those switched
// on. Network tools stay off until the user allows them here, and are marked. Without any engines the
// element says no model is loaded and offers the scripted demo; answers no model wrote are labelled so.
//
// The element holds its attributes and what is only on screen (folds, the delete question); its controllers
// hold the rest: the engines (ElementEngines), the tools (ElementTools), the conversations and the run in
// progress (ConversationController) and the training run (ElementTrainingController).
import { LitElement, html, nothing, type PropertyValues } from 'lit';
import { isScripted } from '../agent/engines-used';
import type { AgentEngines } from '../agent/loop';
import { toolsFromRegistry } from '../agent/registry-tools';
import type { SessionResult } from '../agent/session';
import { ConversationController } from '../controllers/conversation/conversation-controller';
import type { AgentflowAnswerDetail, AgentflowTurnDetail, ConversationState, Live } from '../controllers/conversation/conversation-state';
import { scriptedDemoEngines } from '../controllers/engines/demo-engines';
import { ElementEngines } from '../controllers/engines/element-engines';
import { describeUses, type EngineUse, type EngineUser } from '../controllers/engines/engine-use';
import { formatBytes, type ProgressTracker } from '../controllers/progress-tracker';
import { ElementTools } from '../controllers/tools/element-tools';
import type { ElementTrainOptions } from '../controllers/training/element-training';
import { ElementTrainingController, type AgentflowTrainStoppedDetail } from '../controllers/training/element-training-controller';
import { StorageNotices, storageOpenError } from '../controllers/storage-notices';
import type { ConversationRecord, StepRecord } from '../store/records';
import type { ToolRegistry } from '../tools/registry';
import type { Tool } from '../tools/tool';
import type { RunSummary } from '../trainer/run/training-run';
import type { PolicyTrainer } from '../trainer/training-host';
import { agentflowChatStyles } from './agentflow-chat-styles';
import { renderConversation } from './chat-conversation-view';
import { renderSidebar } from './chat-sidebar-view';
import { renderNoModel } from './chat-start-view';
import type { ConversationGroup } from '../controllers/conversation/module-calls';
import { downloadText } from './download';

export type { AgentflowAnswerDetail, AgentflowTurnDetail } from '../controllers/conversation/conversation-state';
export type { AgentflowTrainDoneDetail, AgentflowTrainStepDetail, AgentflowTrainStoppedDetail } from '../controllers/training/element-training-controller';

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
    expanded: { state: true },
    modelsLoading: { attribute: false },
    loadModelAction: { attribute: false },
    trainToyAction: { attribute: false },
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
  /** A host that shows storage notices itself (the app's banner) sets this; otherwise the chat shows them. */
  declare hideStorageNotices: boolean;
  /** Sidebar groups (experiment items, training rollouts) the user has unfolded. */
  declare openGroups: Set<ConversationGroup>;
  /** The conversation list is unfolded (it folds only where the element is narrow, as on a phone). */
  declare listOpen: boolean;
  /** The conversation whose delete button asks first (see deleteQuestion). */
  declare deleting: string | null;
  /** Conversations whose trajectory is unfolded. */
  declare expanded: Set<string>;

  private pageEngines: AgentEngines | undefined;
  private readonly own = new ElementEngines(this);
  private readonly toolSet = new ElementTools(this, () => this.own.get().then((e) => e.shared));
  /** What another tab or the browser did to this chat's database. */
  private readonly storage = new StorageNotices(this, () => this.dbName);
  private readonly chat = new ConversationController(this, this.own, () => this.toolSet.registry, () => this.engines);
  private readonly training = new ElementTrainingController(this, () => toolsFromRegistry(this.toolSet.registry), () => this.own.trainable());

  constructor() {
    super();
    this.maxTurns = 5;
    this.renderAs = 'markdown';
    this.extraTools = [];
    this.expanded = new Set();
    this.modelsLoading = null;
    this.hideStorageNotices = false;
    this.openGroups = new Set();
    this.listOpen = false;
    this.deleting = null;
  }

  static override styles = agentflowChatStyles;

  /**
   * Injected engines (tests, demos, or engines the host page loaded itself). Replacing them while the
   * element's training run uses them pauses that run at once.
   */
  get engines(): AgentEngines | undefined {
    return this.pageEngines;
  }

  set engines(next: AgentEngines | undefined) {
    const old = this.pageEngines;
    if (next === old) return;
    this.pageEngines = next;
    this.requestUpdate('engines', old);
    this.training.enginesReplaced(old);
  }

  // The chat's state, read by pages and tests; the controllers own it.
  get conversations(): ConversationRecord[] { return this.chat.state.conversations; }
  get thread(): string[] { return this.chat.state.thread; }
  get stepsById(): Record<string, StepRecord[]> { return this.chat.state.stepsById; }
  get live(): Live | null { return this.chat.state.live; }
  get error(): string | null { return this.chat.state.error; }
  get failed(): ConversationState['failed'] { return this.chat.state.failed; }
  /** A resume that would switch engines, waiting for the user to say yes or no. */
  get confirmResume(): ConversationState['confirmResume'] { return this.chat.state.confirmResume; }
  /** A worker behind the engines died: the chat offers to reload the models. */
  get enginesLost(): boolean { return this.own.lost; }
  get loading(): { tracker: ProgressTracker; which: string } | null { return this.own.loading; }
  /** Said when the element paused its training run by itself (the page replaced its engines). */
  get trainingNotice(): string | null { return this.training.notice; }
  /** What another tab or the browser did to this chat's database (StorageNotices). */
  get storageNotice(): StorageNotices['notice'] { return this.storage.notice; }
  get toolStatus(): ElementTools['status'] { return this.toolSet.status; }
  /** The registry in use: the host's, or the element's own with the built-in and extra tools. */
  get toolRegistry(): ToolRegistry { return this.toolSet.registry; }
  /** True when no engines are set nor can be loaded from attributes: the chat says so and offers the demo. */
  get noModel(): boolean { return this.own.none; }

  override connectedCallback(): void {
    super.connectedCallback();
    this.storage.watch();
    void this.init();
  }

  override disconnectedCallback(): void {
    super.disconnectedCallback();
    this.toolSet.dispose();
    this.storage.stop();
    this.chat.state.live?.controller.abort();
  }

  private async init(): Promise<void> {
    try {
      await this.chat.restore();
      await this.toolSet.setUp();
    } catch (e) {
      this.chat.set({ error: storageOpenError(e) });
    }
  }

  protected override willUpdate(changed: PropertyValues<this>): void {
    if ((changed.has('tools') || changed.has('extraTools') || changed.has('registry')) && this.hasUpdated) void this.toolSet.setUp();
  }

  refreshList(): Promise<void> {
    return this.chat.refreshList();
  }

  /** Shows a stored conversation (reopen). */
  open(id: string): Promise<void> {
    return this.chat.open(id);
  }

  /** The "Reload the models" action after a worker died: this element's own models, or the host's. */
  async reloadModels(): Promise<void> {
    if (!(await this.chat.reloadOwnModels())) this.loadModelAction?.();
  }

  /** "Try the demo": the scripted engines, announced to the host like models loaded elsewhere. */
  useDemo(): void {
    const engines = scriptedDemoEngines();
    this.engines = engines;
    // Scripted engines give no token ids to train on.
    this.trainer = undefined;
    this.chat.set({ error: null });
    this.dispatchEvent(new CustomEvent('agentflow-engines', { detail: { engines, label: 'scripted demo (no model)' }, bubbles: true, composed: true }));
  }

  /**
   * Asks the agent `query`; resolves when the run ends (answered, stopped or failed), or with null when it
   * did not start: no model, or a question too long for the models (the question then stays in the input).
   */
  ask(query: string): Promise<SessionResult | null> {
    return this.chat.ask(query);
  }

  /**
   * Continues an interrupted conversation from its stored steps. When the engines are not those it started
   * with, it asks first (confirmResume) unless `allowEngineChange`.
   */
  resume(id: string, allowEngineChange = false): Promise<SessionResult | null> {
    return this.chat.resume(id, allowEngineChange);
  }

  stop(): void {
    this.chat.stop();
  }

  /** The run started: its question leaves the input. */
  questionTaken(query: string): void {
    const ta = this.renderRoot.querySelector('textarea');
    if (ta && ta.value.trim() === query) ta.value = '';
  }

  /** Stopped before anything was stored: the question goes back to an empty input. */
  questionReturned(query: string, id: string): void {
    const ta = this.renderRoot.querySelector('textarea');
    if (ta && !ta.value.trim() && !this.conversations.some((c) => c.id === id)) ta.value = query;
  }

  /**
   * What runs on the page's engines (`engines`), for the page to stop before it replaces them: the answer in
   * progress (stopped as Stop does: stored as interrupted, resumable) and the training run (paused as
   * pauseTraining() does: checkpoints kept). Both at once are one use that stops both.
   */
  engineUse(): EngineUse | null {
    const uses = [this.chat.use(this.engines), this.training.use(this.engines)].filter((u): u is EngineUse => u !== null);
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

  /**
   * Fine-tunes the planner's LoRA adapter with Flow-GRPO on `o.items` (questions with reference answers), with
   * this element's engines, tools and database; resolves when the run ends or is paused. Each step fires
   * `agentflow-train-step`, the end `agentflow-train-done`. The planner must run on this page's runtime. The
   * run is one of engineUse()'s uses; setting other `engines` while it runs on the page's pauses it.
   */
  train(o: ElementTrainOptions): Promise<RunSummary> {
    return this.training.train(o);
  }

  /** Continues a stored training run (paused, or cut off by a reload) from its newest intact checkpoint. */
  resumeTraining(runId: string): Promise<RunSummary> {
    return this.training.resume(runId);
  }

  /** Stops the training run after a checkpoint; resumeTraining(runId) continues it. */
  pauseTraining(): void {
    this.training.pause();
  }

  /** Deletes a stored conversation and its steps (the list's delete button asks first). */
  async deleteConversation(id: string): Promise<void> {
    if (this.deleting === id) this.deleting = null;
    await this.chat.deleteConversation(id);
  }

  async exportOne(id: string): Promise<void> {
    downloadText(await this.chat.exportOne(id), `agentflow-conversation-${id}.json`, 'application/json');
  }

  async exportAll(): Promise<void> {
    downloadText(await this.chat.exportAll(), 'agentflow-conversations.json', 'application/json');
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

  override render() {
    const s = this.chat.state;
    const loading = this.own.loading;
    const bar = loading?.tracker.summary();
    const view = { chat: this.chat, expanded: this.expanded, toggle: (id: string) => this.toggle(id), renderAs: this.renderAs, storageNotice: this.storageNotice, liveScripted: !!s.live && isScripted(this.own.current) };
    return html`<div class="layout">
      ${renderSidebar({
        host: this,
        chat: this.chat,
        listOpen: this.listOpen,
        setListOpen: (open) => (this.listOpen = open),
        openGroups: this.openGroups,
        setOpenGroups: (groups) => (this.openGroups = groups),
        deleting: this.deleting,
        setDeleting: (id) => (this.deleting = id),
        deleteConversation: (id) => void this.deleteConversation(id),
        exportOne: (id) => void this.exportOne(id),
        exportAll: () => void this.exportAll(),
        registry: this.toolRegistry,
        showTools: this.toolSet.status.length > 0,
        dbName: this.dbName,
      })}
      <section aria-label="Chat">
        <div class="messages" part="messages" role="log" aria-label="Messages">
          ${this.noModel ? renderNoModel(this) : nothing}
          ${s.thread.length === 0 && !s.live && !this.noModel ? html`<p class="empty">Ask a question. The agent plans, calls tools, checks its work and answers; open an answer to see each step.</p>` : nothing}
          ${s.thread.map((id) => renderConversation(view, id))}
        </div>
        ${bar
          ? html`<div role="status">
              <label>Loading ${loading!.which}: ${bar.status}
                <progress max="100" .value=${bar.percent ?? 0} aria-valuetext=${`${formatBytes(bar.bytesDone)} of ${formatBytes(bar.bytesTotal)}`}></progress>
              </label>
            </div>`
          : nothing}
        ${this.storageNotice && !this.hideStorageNotices ? html`<p class="error" role="alert" part="error storage" data-testid="storage-notice">${this.storageNotice.message}</p>` : nothing}
        ${s.error ? html`<p class="error" role="alert" part="error">${s.error}</p>` : nothing}
        ${this.trainingNotice ? html`<p class="status" role="status" part="training-notice" data-testid="training-notice">${this.trainingNotice}</p>` : nothing}
        ${this.own.lost && (this.loadModelAction || this.own.canLoad)
          ? html`<button type="button" class="primary" part="button" data-testid="reload-models" @click=${() => void this.reloadModels()}>Reload the models</button>`
          : nothing}
        <p class="status hint" data-testid="independent-hint">Each question starts a new conversation: the agent does not see earlier questions, which stay in the list.</p>
        <form part="form" @submit=${this.onSubmit}>
          <textarea part="input" aria-label="Your question" placeholder="Ask the agent…" @keydown=${this.onKey}></textarea>
          ${s.live
            ? html`<button type="button" part="button stop" @click=${() => this.stop()}>Stop</button>`
            : html`<button type="submit" class="primary" part="button send">Send</button>`}
        </form>
      </section>
    </div>`;
  }
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

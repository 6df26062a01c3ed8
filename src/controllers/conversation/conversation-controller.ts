// The chat's conversations: the stored list, the one shown, and the run in progress (asked, resumed, stopped),
// streamed into `live` as its module calls come in. The element renders `state`; everything that reads or
// writes storage or runs the agent is here, so a view never holds a run. The shapes of the state and the events
// are in conversation-state.ts, how each event of a run moves the live line in live-line.ts, and which of the
// page's engines an answer is on (for the page to stop it before a swap) in answer-engine-use.ts.
import { EngineMismatchError } from '../../agent/engines-used';
import type { AgentEngines } from '../../agent/loop';
import { checkQueryFits } from '../../agent/query-fit';
import { toolsFromRegistry } from '../../agent/registry-tools';
import { resumeConversation, startConversation, type SessionResult } from '../../agent/session';
import {
  deleteConversation as deleteStoredConversation,
  exportAllConversations,
  exportConversation,
  getSteps,
  listConversations,
  markStaleRunsInterrupted,
} from '../../store/conversations';
import { openAgentDb } from '../../store/db';
import type { ToolRegistry } from '../../tools/registry';
import { untilAborted } from '../../util/abort';
import type { AgentflowAnswerDetail, AgentflowTurnDetail, ConversationHost, ConversationState, Live } from './conversation-state';
import { afterStep, startLive, withToken } from './live-line';
import { AnswerEngineUse } from './answer-engine-use';
import { conversationGroup, startCall, upcomingCall } from './module-calls';
import type { EngineUse } from '../engines/engine-use';
import type { ElementEngines } from '../engines/element-engines';
import { readConstrainReplies } from '../tools/tool-settings';

export class ConversationController {
  readonly state: ConversationState = { conversations: [], thread: [], stepsById: {}, live: null, error: null, failed: {}, confirmResume: null };
  /**
   * The conversation last run in this view: its answer region is the one live region (busy while the run
   * works), so its answer is read out once, whole; a stored conversation opened later is not announced.
   */
  lastRunId: string | null = null;
  /** Queries of runs whose conversation record is not listed yet. */
  private readonly pending = new Map<string, string>();
  /** Which of the page's engines the answer being checked or run is on, for the page to stop it before a swap. */
  private readonly onEngines = new AnswerEngineUse();

  constructor(
    private readonly host: ConversationHost,
    private readonly engines: ElementEngines,
    private readonly registry: () => ToolRegistry,
    /** The page's own engines (the element's `engines` property), read when a question starts. */
    private readonly pageEngines: () => AgentEngines | undefined,
  ) {}

  set(patch: Partial<ConversationState>): void {
    Object.assign(this.state, patch);
    this.host.requestUpdate();
  }

  /** Runs a reload cut off are marked interrupted, and the newest of the user's own comes back on screen. */
  async restore(): Promise<void> {
    const live = this.state.live;
    const cut = await markStaleRunsInterrupted(new Set(live ? [live.id] : []), this.host.dbName);
    await this.refreshList();
    await this.reopenInterrupted(cut);
  }

  private async reopenInterrupted(cut: string[]): Promise<void> {
    const ids = new Set(cut);
    const newest = this.state.conversations.filter((c) => ids.has(c.id) && conversationGroup(c) === 'chat').sort((a, b) => b.updatedAt - a.updatedAt)[0];
    if (!newest || this.state.thread.length || this.state.live) return;
    await this.loadSteps(newest.id);
    if (!this.state.thread.length && !this.state.live) this.set({ thread: [newest.id] });
  }

  async refreshList(): Promise<void> {
    this.set({ conversations: await listConversations(this.host.dbName) });
  }

  private async loadSteps(id: string): Promise<void> {
    const steps = await getSteps(id, this.host.dbName);
    this.set({ stepsById: { ...this.state.stepsById, [id]: steps } });
  }

  /** Shows a stored conversation (reopen). */
  async open(id: string): Promise<void> {
    await this.loadSteps(id);
    this.set({ thread: [id] });
  }

  /** The question of a run whose conversation is not listed yet. */
  pendingQuery(id: string): string | undefined {
    return this.pending.get(id);
  }

  private noteLost(engines: AgentEngines): boolean {
    return this.engines.noteLost(engines, (error) => this.set({ error }));
  }

  /** The "Reload the models" action after a worker died: true when this element reloads its own models. */
  async reloadOwnModels(): Promise<boolean> {
    this.engines.clearLost();
    this.set({ error: null });
    if (this.pageEngines() || !this.engines.canLoad) return false;
    try {
      await this.engines.get();
    } catch (e) {
      this.set({ error: message(e) });
    }
    return true;
  }

  /**
   * Asks the agent `query`; resolves when the run ends (answered, stopped or failed), or with null when it
   * did not start: no model, or a question too long for the models (the question then stays in the input).
   */
  async ask(query: string): Promise<SessionResult | null> {
    const q = query.trim();
    if (!q || this.state.live || this.onEngines.busy) return null;
    this.set({ error: null });
    if (this.engines.none) {
      const loading = this.host.modelsLoading;
      this.set({ error: loading ? `${loading} Ask again when they are ready.` : 'No model is loaded, so nothing can answer yet: load a model, or try the scripted demo.' });
      return null;
    }
    const checking = this.onEngines.check(this.pageEngines());
    let engines: AgentEngines;
    try {
      engines = await this.engines.get();
      if (this.noteLost(engines)) return null;
      await checkQueryFits(q, engines, this.registry().cards(), { maxTurns: this.host.maxTurns });
    } catch (e) {
      this.set({ error: message(e) });
      return null;
    } finally {
      checking.end();
    }
    // The page is replacing the engines it was checked on: it does not start (the question stays in the input).
    if (checking.stopped()) {
      this.set({ error: 'Not asked: the models were being replaced while the question was checked. Ask again.' });
      return null;
    }
    this.host.questionTaken(q);
    const id = globalThis.crypto?.randomUUID?.() ?? `c-${Date.now().toString(36)}-${Math.random().toString(36).slice(2)}`;
    return this.run(id, engines, q, (opts) => startConversation(q, { ...opts, id }));
  }

  /**
   * Continues an interrupted conversation from its stored steps. When the engines are not those it started
   * with, it asks first (confirmResume) unless `allowEngineChange`.
   */
  async resume(id: string, allowEngineChange = false): Promise<SessionResult | null> {
    if (this.state.live) return null;
    this.set({ confirmResume: null });
    const conv = this.state.conversations.find((c) => c.id === id);
    if (this.engines.none) {
      this.set({ error: 'No model is loaded to resume this run with: load a model, or try the scripted demo.' });
      return null;
    }
    let engines: AgentEngines;
    try {
      engines = await this.engines.get();
    } catch (e) {
      this.set({ error: message(e) });
      return null;
    }
    if (!this.state.thread.includes(id)) this.set({ thread: [id] });
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
    const host = this.host;
    const s = this.state;
    const controller = new AbortController();
    const ended = this.onEngines.run(engines);
    this.lastRunId = id;
    this.pending.set(id, query);
    // Each question is its own conversation (the agent sees none of the earlier ones), so it gets a view of
    // its own; the earlier ones stay in the sidebar.
    this.set({
      live: startLive(id, controller, resuming, performance.now()),
      thread: [id],
    });
    // The elapsed time of a call that streams nothing (a long prefill, a tool) still moves.
    const tick = setInterval(() => host.requestUpdate(), 250);
    if (s.failed[id]) {
      const { [id]: _retried, ...rest } = s.failed;
      this.set({ failed: rest });
    }
    this.set({ stepsById: { ...s.stepsById, [id]: s.stepsById[id] ?? [] } });
    let result: SessionResult | null = null;
    // Stopped before storage opened: there is nothing stored to read back (and reading would wait on it too).
    let opened = false;
    /** The live line of this run, when it is still the one in progress. */
    const mine = (): Live | null => (s.live?.id === id ? s.live : null);
    try {
      opened = await this.storageOpened(id, query, controller.signal);
      if (!opened) return null;
      if (resuming) {
        // Its stored steps say where it picks up ("Resuming at turn 3"), and the calls after them follow on.
        await this.loadSteps(id);
        const at = upcomingCall(s.stepsById[id] ?? [], host.maxTurns);
        const l = mine();
        if (at && l) this.set({ live: { ...l, module: at.module, turn: at.turn } });
      }
      const listed = this.refreshList();
      listed.catch(() => undefined); // awaited below; a run that throws first must not leave it unhandled
      result = await go({
        tools: toolsFromRegistry(this.registry(), (note) => {
          // Only the executor's call runs a tool; a note arriving after its step (a late one) is dropped.
          const l = mine();
          if (l?.module === 'executor') this.set({ live: { ...l, toolNote: note } });
        }),
        engines,
        // The Tools settings' "Constrain replies" switch (on unless turned off): read per question, so a change applies at once.
        config: { maxTurns: host.maxTurns, constrainReplies: await readConstrainReplies(host.dbName) },
        signal: controller.signal,
        dbName: host.dbName,
        onToken: (module, turn, piece) => {
          const l = mine();
          if (l) this.set({ live: withToken(l, module, turn, piece, performance.now()) });
        },
        onCallStart: (_module, _turn, engine, messages) => {
          const l = mine();
          if (!engine.countPromptTokens || !l) return;
          const startedAt = l.call.startedAt;
          engine.countPromptTokens(messages).then(
            (n) => {
              const now = mine();
              // Counted for this call only: by now a later call may have its own clock.
              if (now && now.call.startedAt === startedAt) this.set({ live: { ...now, call: { ...now.call, promptTokens: n } } });
            },
            () => undefined, // only a hint; the call itself reports what failed
          );
        },
        onStep: (step) => {
          const steps = [...(s.stepsById[id] ?? []), step];
          this.set({ stepsById: { ...s.stepsById, [id]: steps } });
          const l = mine();
          if (l) this.set({ live: afterStep(l, steps, host.maxTurns, performance.now()) });
          if (step.kind === 'analysis') void this.refreshList();
          host.dispatchEvent(new CustomEvent<AgentflowTurnDetail>('agentflow-turn', { detail: { conversationId: id, turn: step.turn, kind: step.kind, step }, bubbles: true, composed: true }));
        },
      });
      await listed;
      if (result.status === 'error' && result.error) this.set({ error: result.error });
      this.noteLost(engines);
      host.dispatchEvent(
        new CustomEvent<AgentflowAnswerDetail>('agentflow-answer', {
          detail: { conversationId: id, query, answer: result.answer, finalAnswer: result.finalAnswer, status: result.status, stopReason: result.stopReason },
          bubbles: true,
          composed: true,
        }),
      );
    } catch (e) {
      if (e instanceof EngineMismatchError) this.set({ confirmResume: { id, message: e.message } });
      // Storage that would not open (or closed), a step that could not be saved: the question stays in the
      // thread with the reason where its answer would be.
      else if (!this.noteLost(engines)) this.set({ failed: { ...s.failed, [id]: { query, error: message(e) } } });
    } finally {
      clearInterval(tick);
      this.set({ live: null });
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
      await untilAborted(openAgentDb(this.host.dbName), signal);
    } catch (e) {
      if (!signal.aborted) throw e;
      const blocked = this.host.storageNotice?.kind === 'blocked';
      const why = blocked ? ' (another AgentFlow tab holds it open at an older version)' : '';
      this.set({ failed: { ...this.state.failed, [id]: { query, error: `stopped while waiting for this browser’s storage${why}; nothing was saved.` } } });
      this.host.questionReturned(query, id);
      return false;
    }
    const l = this.state.live;
    // The clock times module calls: it starts now, not while storage was opening.
    if (l?.id === id) this.set({ live: { ...l, waitingForStorage: false, call: startCall(performance.now()) } });
    return true;
  }

  stop(): void {
    this.state.live?.controller.abort(new DOMException('Stopped by the user', 'AbortError'));
  }

  /** The answer being checked or run on the page's engines `page`: the page stops it before replacing them. */
  use(page: AgentEngines | undefined): EngineUse | null {
    return this.onEngines.use(page, () => this.stop());
  }

  /** Deletes a stored conversation and its steps (the list's delete button asks first). */
  async deleteConversation(id: string): Promise<void> {
    if (this.state.live?.id === id) return;
    await deleteStoredConversation(id, this.host.dbName);
    const { [id]: _gone, ...rest } = this.state.stepsById;
    this.set({ thread: this.state.thread.filter((t) => t !== id), stepsById: rest });
    await this.refreshList();
  }

  exportOne(id: string): Promise<string> {
    return exportConversation(id, this.host.dbName);
  }

  exportAll(): Promise<string> {
    return exportAllConversations(this.host.dbName);
  }
}

function message(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}

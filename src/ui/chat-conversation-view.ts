// One conversation as <agentflow-chat> shows it: the question, the answer (streamed while the run works, with
// its module calls so far), why it failed, the Resume offer and the stored trajectory behind a toggle. Model
// output is rendered as sanitized Markdown or as text, never as raw HTML.
import { html, nothing } from 'lit';
import { unsafeHTML } from 'lit/directives/unsafe-html.js';
import { storedEngines } from '../agent/engines-used';
import type { ConversationController } from '../controllers/conversation/conversation-controller';
import type { PlannerStepData, StepRecord } from '../store/records';
import type { StorageNotice } from '../store/db';
import { formatCall, formatLiveCall, liveHeading, livePreview } from './chat-view';
import { markdownOrText } from './markdown';
import { renderTrajectory, trajectoryFromSteps } from './trajectory';

export interface ConversationView {
  chat: ConversationController;
  /** Conversations whose trajectory is unfolded. */
  expanded: Set<string>;
  toggle(id: string): void;
  renderAs: 'markdown' | 'text';
  storageNotice: StorageNotice | null;
  /** The engines the answer in progress runs on are scripted (no model writes it). */
  liveScripted: boolean;
}

/** The live line of a question waiting for a database another tab holds open (a `blocked` upgrade). */
const WAITING_FOR_BLOCKED_STORAGE = 'Waiting for this browser’s storage: another AgentFlow tab holds it open at an older version. Close or reload that tab; the question then starts by itself. Stop cancels it.';

/** The tool the conversation's latest planner step chose (what its executor call is for), if any. */
function plannedTool(steps: StepRecord[]): string | null {
  const planner = steps.findLast((s) => s.kind === 'planner');
  if (!planner) return null;
  const d = planner.data as Partial<PlannerStepData>;
  return d.resolvedTool ?? d.action?.toolName ?? null;
}

function renderText(text: string, renderAs: ConversationView['renderAs']) {
  if (renderAs === 'text') return html`<div class="text plain">${text}</div>`;
  // Text the Markdown parser must not see (too deeply nested, too long) or fails on is shown as it is.
  const r = markdownOrText(text);
  if ('html' in r) return html`<div class="text md">${unsafeHTML(r.html)}</div>`;
  return html`<div class="text plain">${r.text}</div><p class="status" data-testid="plain-why">${r.why}</p>`;
}

export function renderConversation(v: ConversationView, id: string) {
  const chat = v.chat;
  const s = chat.state;
  const conv = s.conversations.find((c) => c.id === id);
  const steps = s.stepsById[id] ?? [];
  const live = s.live?.id === id ? s.live : null;
  const traj = trajectoryFromSteps(steps);
  const answer = live ? live.answer : (traj.answer ?? conv?.answer);
  const failed = live ? undefined : s.failed[id];
  const open = v.expanded.has(id);
  const scripted = live ? v.liveScripted : !!storedEngines(conv?.settings)?.scripted;
  const confirm = s.confirmResume?.id === id ? s.confirmResume : null;
  const waiting = !!live?.waitingForStorage && v.storageNotice?.kind === 'blocked';
  return html`
    <div class="message user" part="message user" data-testid="query">${conv?.query ?? failed?.query ?? chat.pendingQuery(id) ?? ''}</div>
    ${live
      ? // What a screen reader hears while the run works: the call in progress, once per change (the clock
        // and the streamed text below change several times a second, which a live region would read out).
        html`<p class="visually-hidden" role="status" data-testid="live-phase">${waiting ? WAITING_FOR_BLOCKED_STORAGE : liveHeading(live.module, live.turn, live.toolNote, live.resuming)}</p>`
      : nothing}
    <div class="message answer" part="message answer" data-testid="answer" data-conversation=${id} aria-live=${id === chat.lastRunId ? 'polite' : 'off'} aria-busy=${live ? 'true' : 'false'}>
      ${scripted ? html`<p class="scripted" part="scripted" data-testid="scripted-label">Scripted demo: no model wrote this answer.</p>` : nothing}
      ${live
        ? html`${live.calls.length
              ? html`<ol class="calls" data-testid="live-calls" aria-label="Module calls so far">${live.calls.map((c) => html`<li>${formatCall(c)}</li>`)}</ol>`
              : nothing}
            ${waiting
              ? html`<div class="live" data-testid="live">${WAITING_FOR_BLOCKED_STORAGE}</div>`
              : html`<div class="live" data-testid="live">${liveHeading(live.module, live.turn, live.toolNote, live.resuming)}
<span class="live-stats" data-testid="live-stats">${formatLiveCall(live.call, performance.now())}</span>
${livePreview(live.module, live.text, live.module === 'executor' ? plannedTool(steps) : null)}</div>`}`
        : nothing}
      ${answer ? (live ? html`<div class="text plain">${answer}</div>` : renderText(answer, v.renderAs)) : !live && !failed ? html`<p class="status">${conv?.status === 'interrupted' ? 'Interrupted before an answer.' : conv?.status === 'error' ? 'The run failed.' : ''}</p>` : nothing}
      ${failed ? html`<p class="error" role="alert" part="error" data-testid="answer-error">${answer ? '' : 'Not answered: '}${failed.error}</p>` : nothing}
      <div class="actions">
        <button type="button" part="button trajectory-toggle" aria-expanded=${open ? 'true' : 'false'} aria-controls=${`traj-${id}`} @click=${() => v.toggle(id)}>
          ${open ? 'Hide' : 'Show'} trajectory (${traj.turns.length} turn${traj.turns.length === 1 ? '' : 's'})
        </button>
        ${conv?.status === 'interrupted' && !s.live && !confirm ? html`<button type="button" part="button" @click=${() => chat.resume(id)}>Resume</button>` : nothing}
      </div>
      ${confirm
        ? html`<div class="confirm" role="alertdialog" aria-label="Resume on other engines?" data-testid="resume-confirm">
            <p>${confirm.message}</p>
            <div class="row">
              <button type="button" part="button" @click=${() => chat.resume(id, true)}>Resume on the current engines</button>
              <button type="button" part="button" @click=${() => chat.set({ confirmResume: null })}>Keep it interrupted</button>
            </div>
          </div>`
        : nothing}
      <div id=${`traj-${id}`} ?hidden=${!open}>${open ? renderTrajectory(traj) : nothing}</div>
    </div>
  `;
}

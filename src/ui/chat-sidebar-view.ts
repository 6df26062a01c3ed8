// <agentflow-chat>'s sidebar: the user's own questions, then the Experiments and Training tabs' runs folded
// apart, Export all and the tool switches. Where the element is narrow (a phone) the whole list folds into
// one line naming the conversation shown.
import { html, nothing } from 'lit';
import type { ConversationController } from '../controllers/conversation/conversation-controller';
import type { ConversationRecord } from '../store/records';
import type { ToolRegistry } from '../tools/registry';
import { conversationGroup, type ConversationGroup } from '../controllers/conversation/module-calls';
import { deleteQuestion, focusDeleteQuestion } from './delete-question';

export interface SidebarView {
  host: Parameters<typeof focusDeleteQuestion>[0];
  chat: ConversationController;
  /** The list is unfolded (it folds only where the element is narrow). */
  listOpen: boolean;
  setListOpen(open: boolean): void;
  /** Groups (experiment items, training rollouts) the user has unfolded. */
  openGroups: Set<ConversationGroup>;
  setOpenGroups(groups: Set<ConversationGroup>): void;
  /** The conversation whose delete button asks first. */
  deleting: string | null;
  setDeleting(id: string | null): void;
  deleteConversation(id: string): void;
  exportOne(id: string): void;
  exportAll(): void;
  registry: ToolRegistry;
  showTools: boolean;
  dbName: string | undefined;
}

/** A run this view is executing reads 'running', whatever the list last read (a resumed one was 'interrupted'). */
function statusOf(chat: ConversationController, c: ConversationRecord): string {
  if (chat.state.live?.id === c.id) return 'running';
  return c.status === 'done' ? '' : c.status;
}

function renderListItem(v: SidebarView, c: ConversationRecord) {
  const live = v.chat.state.live;
  return html`<li>
    <button type="button" class="open" part="button conversation" title=${c.query || c.title} aria-current=${v.chat.state.thread.includes(c.id) ? 'true' : 'false'} @click=${() => {
      // A question chosen in the list is shown, and a folded list (a phone's) folds again so the chat is in view.
      v.setListOpen(false);
      void v.chat.open(c.id);
    }}>
      ${c.title}
    </button>
    <span class="status" data-testid="conversation-status">${statusOf(v.chat, c)}</span>
    <button type="button" part="button" aria-label=${`Export conversation “${c.title}” as JSON`} title="Export as JSON" @click=${() => v.exportOne(c.id)}>⤓</button>
    ${v.deleting === c.id
      ? deleteQuestion(`conversation “${c.title}”`, 'this conversation', () => v.deleteConversation(c.id), () => v.setDeleting(null))
      : html`<button type="button" part="button" aria-label=${`Delete conversation “${c.title}”`} title="Delete" ?disabled=${live?.id === c.id} @click=${() => {
          v.setDeleting(c.id);
          void focusDeleteQuestion(v.host);
        }}>✕</button>`}
  </li>`;
}

/** The folded list's one line: how many questions, and the one on screen ("Conversations (4): What is 2+2?"). */
function foldLabel(chat: ConversationController, questions: number): string {
  const s = chat.state;
  const id = s.live?.id ?? s.thread[0];
  const shown = id ? (s.conversations.find((c) => c.id === id)?.title ?? chat.pendingQuery(id)) : undefined;
  return `Conversations (${questions})${shown ? `: ${shown}` : ': new question'}`;
}

/** Runs the Experiments and Training tabs made: kept apart from the user's questions, folded until opened. */
function renderGroup(v: SidebarView, group: ConversationGroup, label: string, list: ConversationRecord[]) {
  if (!list.length) return nothing;
  const open = v.openGroups.has(group);
  const toggle = (e: Event) => {
    const now = (e.target as HTMLDetailsElement).open;
    if (now === v.openGroups.has(group)) return;
    const next = new Set(v.openGroups);
    if (now) next.add(group);
    else next.delete(group);
    v.setOpenGroups(next);
  };
  return html`<details class="group" data-group=${group} ?open=${open} @toggle=${toggle}>
    <summary>${label} (${list.length})</summary>
    ${open ? html`<ul data-testid=${`${group}-list`} aria-label=${label}>${list.map((c) => renderListItem(v, c))}</ul>` : nothing}
  </details>`;
}

function renderToolSwitches(v: SidebarView) {
  if (!v.showTools) return nothing;
  return html`<details class="tools" part="tools">
    <summary>Tools</summary>
    <p class="status">Tools marked “network” send data off this device; they wait for your permission before they run.</p>
    <agentflow-tool-switches .registry=${v.registry} db-name=${v.dbName ?? nothing}></agentflow-tool-switches>
  </details>`;
}

export function renderSidebar(v: SidebarView) {
  const s = v.chat.state;
  const groups: Record<ConversationGroup, ConversationRecord[]> = { chat: [], experiment: [], training: [] };
  for (const c of s.conversations) groups[conversationGroup(c)].push(c);
  return html`<aside part="sidebar" aria-label="Conversations" class=${v.listOpen ? 'open' : ''}>
    <div class="aside-head">
      <strong id="conv-h">Conversations</strong>
      <button type="button" class="fold" part="button conversations-fold" data-testid="conversations-fold" aria-expanded=${v.listOpen ? 'true' : 'false'} aria-controls="conv-body" @click=${() => v.setListOpen(!v.listOpen)}>
        ${foldLabel(v.chat, groups.chat.length)}
      </button>
      <button type="button" part="button" @click=${() => v.chat.set({ thread: [] })} ?disabled=${!!s.live}>New</button>
    </div>
    <div class="conv-body" id="conv-body">
    ${groups.chat.length === 0 ? html`<p class="empty">None yet.</p>` : nothing}
    <ul aria-labelledby="conv-h" data-testid="conversation-list">
      ${groups.chat.map((c) => renderListItem(v, c))}
    </ul>
    ${renderGroup(v, 'experiment', 'Experiment items', groups.experiment)}
    ${renderGroup(v, 'training', 'Training rollouts', groups.training)}
    ${s.conversations.length ? html`<button type="button" part="button" @click=${() => v.exportAll()}>Export all</button>` : nothing}
    ${renderToolSwitches(v)}
    </div>
  </aside>`;
}

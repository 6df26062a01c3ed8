// The first screen and its words (issue 28 item 4), in Chromium: a first visit opens on Chat with a short start
// (try the demo, load a model, train the toy), each button going where it says; news is drawn in the page's
// colour (a successful swap was red, "No model is loaded" orange), failures in red; on a phone's width the
// conversation list folds into one line naming the conversation shown, in the element and in the app.
import { describe, expect, it } from 'vitest';
import type { AgentEngines } from '../agent/loop';
import type { ChatEngine, ChatMessage, GenerateOptions, GenerationResult } from '../engine/chat-engine';
import { chatStream } from '../engine/chat-stream';
import { createConversation, updateConversation } from '../store/conversations';
import './agentflow-chat';
import type { AgentFlowChat } from './agentflow-chat';
import './app-shell';
import type { AgentFlowApp } from './app-shell';

const text = (root: ParentNode | null | undefined, sel: string) => (root?.querySelector(sel)?.textContent ?? '').replace(/\s+/g, ' ').trim();
const button = (root: ParentNode, name: string) => [...root.querySelectorAll('button')].find((b) => b.textContent?.trim() === name);
const colour = (el: Element | null | undefined) => (el ? getComputedStyle(el).color : 'missing');

/** Engines whose every call waits until it is aborted: something in use that a swap has to stop. */
function heldEngines(): AgentEngines {
  const engine: ChatEngine = {
    id: 'planner:held',
    stream: (_m: ChatMessage[], o: GenerateOptions = {}) =>
      chatStream(() => new Promise<GenerationResult>((_resolve, reject) => o.signal?.addEventListener('abort', () => reject(o.signal!.reason), { once: true }))),
  };
  return { planner: engine, shared: engine };
}

async function mountApp(width?: string): Promise<{ app: AgentFlowApp; chat: AgentFlowChat; box: HTMLElement }> {
  // A first visit: no tab named in the address.
  history.replaceState(null, '', location.pathname + location.search);
  const box = document.createElement('div');
  if (width) box.style.width = width;
  const app = document.createElement('agentflow-app') as AgentFlowApp;
  app.setAttribute('db-name', `first-screen-${Math.random()}`);
  box.append(app);
  document.body.append(box);
  await app.updateComplete;
  const chat = app.renderRoot.querySelector('agentflow-chat')!;
  await chat.updateComplete;
  return { app, chat, box };
}

const selected = (app: AgentFlowApp) => app.renderRoot.querySelector('[role="tab"][aria-selected="true"]')?.textContent?.trim();

describe('the first screen', () => {
  it('opens on Chat with a short start whose buttons go where they say', async () => {
    const { app, chat, box } = await mountApp();
    try {
      expect(selected(app)).toBe('Chat');
      await expect.poll(() => text(chat.renderRoot, '[data-testid="no-model"]')).toMatch(/^No model is loaded, so the agent cannot answer yet\. To start:/);
      const start = chat.renderRoot.querySelector('[data-testid="start"]')!;
      expect([...start.querySelectorAll('button')].map((b) => b.textContent?.trim())).toEqual(['Try the demo', 'Load a model', 'Train the toy']);
      // "No model is loaded" is news, not a warning: the page's own colour, as the heading's.
      const heading = app.renderRoot.querySelector('h1');
      expect(colour(app.renderRoot.querySelector('[data-testid="engines"]'))).not.toBe('rgb(146, 64, 14)');
      expect(text(app.renderRoot, '[data-testid="engines"]')).toMatch(/^No model is loaded/);

      // Train the toy: the Training tab, at its start button (the toy is its default task).
      button(start, 'Train the toy')!.click();
      await expect.poll(() => selected(app)).toBe('Training');
      const training = app.renderRoot.querySelector('agentflow-training-panel')!;
      await expect.poll(() => (training.shadowRoot?.activeElement?.textContent ?? '').trim()).toMatch(/start training/i);

      // Load a model: Models & GPU.
      (app.renderRoot.querySelector('#tab-chat') as HTMLElement).click();
      await expect.poll(() => selected(app)).toBe('Chat');
      button(start, 'Load a model')!.click();
      await expect.poll(() => selected(app)).toBe('Models & GPU');

      // Try the demo: the app's engines are the scripted demo.
      (app.renderRoot.querySelector('#tab-chat') as HTMLElement).click();
      button(start, 'Try the demo')!.click();
      await expect.poll(() => text(app.renderRoot, '[data-testid="engines"]')).toMatch(/^Engines: scripted demo/);
      expect(colour(heading)).toBe(colour(app.renderRoot.querySelector('[data-testid="engines"]')));
    } finally {
      box.remove();
    }
  });

  it('draws a successful swap as news (the page’s colour, a status) and a failure in red (an alert)', async () => {
    const { app, chat, box } = await mountApp();
    try {
      const heading = app.renderRoot.querySelector('h1');
      const choose = (engines: AgentEngines, label: string) => chat.dispatchEvent(new CustomEvent('agentflow-engines', { detail: { engines, label }, bubbles: true, composed: true }));
      choose(heldEngines(), 'held models');
      await expect.poll(() => chat.engines?.planner.id).toBe('planner:held');
      const answer = chat.ask('A question the swap stops');
      await expect.poll(() => chat.renderRoot.querySelector('[data-testid="live"]')).not.toBeNull();
      choose(heldEngines(), 'new models');
      await expect.poll(() => text(app.renderRoot, '[data-testid="app-notice"]')).toMatch(/^Switched to new models\. Stopped first: a chat answer/);
      await answer;
      const notice = app.renderRoot.querySelector('[data-testid="app-notice"]')!;
      expect(notice.getAttribute('role')).toBe('status');
      expect(colour(notice)).toBe(colour(heading));
      // A failure stays red and interrupts (the worker behind the engines died).
      chat.dispatchEvent(new CustomEvent('agentflow-engines-lost', { detail: { engines: chat.engines, error: new Error('planner worker stopped') }, bubbles: true, composed: true }));
      await expect.poll(() => text(app.renderRoot, '[data-testid="app-notice"]')).toMatch(/^The models stopped/);
      const failure = app.renderRoot.querySelector('[data-testid="app-notice"]')!;
      expect(failure.getAttribute('role')).toBe('alert');
      expect(colour(failure)).toBe('rgb(176, 0, 32)');
    } finally {
      box.remove();
    }
  });
});

describe('the conversation list on a phone', () => {
  async function withConversations(dbName: string, n: number): Promise<void> {
    for (let i = 1; i <= n; i++) {
      const c = await createConversation({ query: `Question number ${i}, long enough to take two lines of a narrow sidebar` }, dbName);
      await updateConversation(c.id, { status: 'done', answer: `Answer ${i}` }, dbName);
    }
  }

  const visible = (el: Element | null | undefined) => !!el && el.getBoundingClientRect().height > 0;

  it('folds into one line naming the conversation shown, at 390 px, in the element and the app; wide, it is a sidebar', async () => {
    const dbName = `phone-list-${Math.random()}`;
    await withConversations(dbName, 8);
    const box = document.createElement('div');
    box.style.width = '390px';
    const el = document.createElement('agentflow-chat');
    el.dbName = dbName;
    box.append(el);
    document.body.append(box);
    try {
      await expect.poll(() => el.conversations.length).toBe(8);
      await el.updateComplete;
      const r = el.renderRoot;
      const fold = r.querySelector<HTMLButtonElement>('[data-testid="conversations-fold"]')!;
      const list = () => r.querySelector('[data-testid="conversation-list"]');
      // Folded by default: one line, and the chat right below it.
      expect(visible(fold)).toBe(true);
      expect(fold.getAttribute('aria-expanded')).toBe('false');
      expect(text(r, '[data-testid="conversations-fold"]')).toBe('Conversations (8): new question');
      expect(visible(list())).toBe(false);
      const form = r.querySelector('form')!;
      expect(form.getBoundingClientRect().top - el.getBoundingClientRect().top).toBeLessThan(400);
      // Unfolded: the list; choosing a question shows it and folds the list again, naming it.
      fold.click();
      await expect.poll(() => visible(list())).toBe(true);
      expect(fold.getAttribute('aria-expanded')).toBe('true');
      // By its title, not its place: conversations updated in the same millisecond list in their ids' order.
      list()!.querySelector<HTMLButtonElement>('button.open[title^="Question number 6,"]')!.click();
      await expect.poll(() => text(r, '[data-testid="query"]')).toBe('Question number 6, long enough to take two lines of a narrow sidebar');
      await expect.poll(() => visible(list())).toBe(false);
      expect(text(r, '[data-testid="conversations-fold"]')).toBe('Conversations (8): Question number 6, long enough to take two lines of a narrow sidebar');
      // Wide, the list is a sidebar again and the fold is gone.
      box.style.width = '900px';
      await expect.poll(() => visible(list())).toBe(true);
      expect(visible(fold)).toBe(false);
      expect(visible(r.querySelector('#conv-h'))).toBe(true);
    } finally {
      box.remove();
    }

    const { chat, box: appBox } = await mountApp('390px');
    try {
      const fold = chat.renderRoot.querySelector('[data-testid="conversations-fold"]');
      expect(visible(fold)).toBe(true);
      expect(fold?.getAttribute('aria-expanded')).toBe('false');
      expect(visible(chat.renderRoot.querySelector('[data-testid="conversation-list"]'))).toBe(false);
    } finally {
      appBox.remove();
    }
  });
});

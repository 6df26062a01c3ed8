// Deleting stored work asks first, in Chromium with real IndexedDB: a conversation in <agentflow-chat>, an
// experiment run in Experiments, an adapter in Training. The question takes the focus on its safe answer;
// Keep and Escape leave everything stored; only "Yes, delete" deletes, from the list and from storage.
import { describe, expect, it } from 'vitest';
import type { LitElement } from 'lit';
import { ScriptedEngine } from '../agent/scripted-engine';
import { createConversation, getConversation } from '../store/conversations';
import { openAgentDb } from '../store/db';
import './agentflow-chat';
import type { AgentFlowChat } from './agentflow-chat';
import { putExperiment, listExperiments } from '../controllers/experiments/experiment-store';
import './experiments-panel';
import type { AgentflowExperimentsPanel } from './experiments-panel';
import { listAdapters } from '../controllers/training/adapter-store';
import './training-panel';
import type { AgentflowTrainingPanel } from './training-panel';

const button = (el: LitElement, name: string) => [...el.renderRoot.querySelectorAll('button')].find((b) => (b.getAttribute('aria-label') ?? b.textContent?.trim()) === name) ?? null;
const question = (el: LitElement) => el.renderRoot.querySelector('[data-testid="delete-question"]');
const active = (el: LitElement) => el.renderRoot instanceof ShadowRoot ? el.renderRoot.activeElement : null;

/**
 * Walks one Delete button through the question (`what` its full name, `shown` its visible words): Keep,
 * Escape, then Yes. `stored` reads whether the thing is
 * still in storage; `listed` whether the element still shows it.
 */
async function askThenDelete(el: LitElement, what: string, shown: string, deleteLabel: string, stored: () => Promise<boolean>, listed: () => boolean): Promise<void> {
  button(el, deleteLabel)!.click();
  await expect.poll(() => question(el)?.textContent?.replace(/\s+/g, ' ').trim()).toBe(`Delete ${shown}? This cannot be undone. Delete Keep`);
  expect(question(el)!.getAttribute('role')).toBe('group');
  expect(question(el)!.getAttribute('aria-label')).toBe(`Delete ${what}?`);
  // The safe answer has the focus (the button that had it is gone).
  await expect.poll(() => active(el)?.getAttribute('aria-label')).toBe(`No, keep ${what}`);
  button(el, `No, keep ${what}`)!.click();
  await expect.poll(() => question(el)).toBeNull();
  expect(await stored()).toBe(true);

  button(el, deleteLabel)!.click();
  await expect.poll(() => question(el)).not.toBeNull();
  question(el)!.dispatchEvent(new KeyboardEvent('keydown', { key: 'Escape', bubbles: true, composed: true }));
  await expect.poll(() => question(el)).toBeNull();
  expect(await stored()).toBe(true);
  expect(listed()).toBe(true);

  button(el, deleteLabel)!.click();
  await expect.poll(() => button(el, `Yes, delete ${what}`)).not.toBeNull();
  button(el, `Yes, delete ${what}`)!.click();
  await expect.poll(stored).toBe(false);
  await expect.poll(listed).toBe(false);
}

describe('deleting stored work asks first', () => {
  it('a conversation in <agentflow-chat>', async () => {
    const dbName = `delete-chat-${Math.random()}`;
    const conv = await createConversation({ title: 'Keep me?', query: 'Keep me?' }, dbName);
    const el = document.createElement('agentflow-chat') as AgentFlowChat;
    el.dbName = dbName;
    el.engines = { planner: new ScriptedEngine({}, 'planner:x'), shared: new ScriptedEngine({}, 'shared:x') };
    document.body.append(el);
    try {
      const listed = () => [...el.renderRoot.querySelectorAll('[data-testid="conversation-list"] button.open')].some((b) => b.textContent?.includes('Keep me?'));
      await expect.poll(listed).toBe(true);
      // The test page is phone-wide (414 px): the list is folded there, and unfolded as a user would.
      await el.updateComplete;
      const fold = el.renderRoot.querySelector<HTMLButtonElement>('[data-testid="conversations-fold"]')!;
      if (fold.getBoundingClientRect().height > 0) fold.click();
      await askThenDelete(el, 'conversation “Keep me?”', 'this conversation', 'Delete conversation “Keep me?”', async () => !!(await getConversation(conv.id, dbName)), listed);
    } finally {
      el.remove();
    }
  });

  it('an experiment run in Experiments', async () => {
    const dbName = `delete-exp-${Math.random()}`;
    await putExperiment({ id: 'run-1', createdAt: 1, name: 'baseline', status: 'done', config: {}, total: 0 }, dbName);
    const el = document.createElement('agentflow-experiments-panel') as AgentflowExperimentsPanel;
    el.dbName = dbName;
    document.body.append(el);
    try {
      const listed = () => !!button(el, 'Delete run baseline') || !!question(el);
      await expect.poll(() => !!button(el, 'Delete run baseline')).toBe(true);
      await askThenDelete(el, 'run baseline', 'this run', 'Delete run baseline', async () => (await listExperiments(dbName)).some((r) => r.id === 'run-1'), listed);
    } finally {
      el.remove();
    }
  });

  it('an adapter in Training', async () => {
    const dbName = `delete-adapter-${Math.random()}`;
    const db = await openAgentDb(dbName);
    await db.put('adapters', { id: 'a1', name: 'my adapter', createdAt: 0, baseModel: 'toy', config: {}, tensors: { w: { shape: [4], data: new Float32Array(4) } } });
    const panel = document.createElement('agentflow-training-panel') as AgentflowTrainingPanel;
    panel.dbName = dbName;
    document.body.append(panel);
    try {
      await panel.refreshAdapters();
      await panel.updateComplete;
      // The adapters are listed by the panel's <agentflow-training-adapters>.
      const el = panel.renderRoot.querySelector('agentflow-training-adapters') as LitElement;
      const listed = () => !!el.renderRoot.querySelector('[data-testid="adapters"]');
      await expect.poll(listed).toBe(true);
      await askThenDelete(el, 'adapter my adapter', 'this adapter', 'Delete adapter my adapter', async () => (await listAdapters(dbName)).some((a) => a.id === 'a1'), listed);
    } finally {
      panel.remove();
    }
  });
});

// <agentflow-chat> when this browser's storage fails: a question asked while IndexedDB will not open shows
// the reason where its answer would be (not an empty answer), and a newer tab upgrading the database makes
// the chat let go of it and say "reload this tab", which a later question repeats.
import { describe, expect, it } from 'vitest';
import { scriptedDemoEngines } from '../controllers/engines/demo-engines';
import { STORAGE_MESSAGES } from '../store/db';
import './agentflow-chat';
import type { AgentFlowChat } from './agentflow-chat';

async function mount(dbName: string): Promise<AgentFlowChat> {
  const el = document.createElement('agentflow-chat');
  el.dbName = dbName;
  el.engines = scriptedDemoEngines();
  document.body.append(el);
  await el.updateComplete;
  return el;
}

const shown = (el: AgentFlowChat, id: string) => () => el.renderRoot.querySelector(`[data-testid="${id}"]`)?.textContent?.trim() ?? '';

describe('<agentflow-chat> and failing storage', () => {
  it('shows why a question was not answered when storage does not open', async () => {
    const real = IDBFactory.prototype.open;
    IDBFactory.prototype.open = function () {
      throw new DOMException('The user denied permission to access the database.', 'SecurityError');
    };
    try {
      const el = await mount(`chat-nodb-${Math.random()}`);
      await expect.poll(() => el.error).toMatch(/Could not open this browser's storage \(IndexedDB database 'chat-nodb-.*'\): The user denied permission/);
      const r = await el.ask('What is 2 + 3?');
      expect(r).toBeNull();
      await expect.poll(shown(el, 'answer-error')).toMatch(/^Not answered: Could not open this browser's storage .*The user denied permission to access the database\./);
      expect(shown(el, 'query')()).toBe('What is 2 + 3?');
      el.remove();
    } finally {
      IDBFactory.prototype.open = real;
    }
  });

  it('lets go of the database for a newer tab and says to reload, in the chat and when asked', async () => {
    const dbName = `chat-upgraded-${Math.random()}`;
    const el = await mount(dbName);
    await expect.poll(() => el.conversations).toEqual([]);
    // The newer tab: its upgrade goes through only if this page closes its connection.
    const newer = await new Promise<IDBDatabase>((res, rej) => {
      const req = indexedDB.open(dbName, 1000);
      req.onsuccess = () => res(req.result);
      req.onerror = () => rej(req.error);
    });
    expect(newer.version).toBe(1000);
    await expect.poll(shown(el, 'storage-notice')).toBe(STORAGE_MESSAGES.blocking);
    await el.ask('What is 2 + 3?');
    await expect.poll(shown(el, 'answer-error')).toBe(`Not answered: ${STORAGE_MESSAGES.blocking}`);
    newer.close();
    el.remove();
  });
});

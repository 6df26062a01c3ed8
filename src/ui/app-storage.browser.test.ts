// The app shell when another tab upgrades its database: the notice stands above every tab (the chat inside
// it says nothing of its own), as StorageNotices follows the app's db-name.
import { describe, expect, it } from 'vitest';
import { STORAGE_MESSAGES } from '../store/db';
import './app-shell';
import type { AgentFlowApp } from './app-shell';
import type { AgentFlowChat } from './agentflow-chat';

const banner = (app: AgentFlowApp) => app.renderRoot.querySelector('[data-testid="storage-banner"]')?.textContent?.trim() ?? '';

describe('<agentflow-app> and its storage', () => {
  it('says above every tab that a newer tab needs the database, for its own db-name', async () => {
    history.replaceState(null, '', location.pathname + location.search);
    const dbName = `app-storage-${Math.random()}`;
    const app = document.createElement('agentflow-app') as AgentFlowApp;
    app.setAttribute('db-name', dbName);
    document.body.append(app);
    await app.updateComplete;
    const chat = app.renderRoot.querySelector('agentflow-chat') as AgentFlowChat;
    // The chat has opened the database once it lists its conversations.
    await expect.poll(() => chat.conversations).toEqual([]);
    expect(banner(app)).toBe('');
    const newer = await new Promise<IDBDatabase>((res, rej) => {
      const req = indexedDB.open(dbName, 1000);
      req.onsuccess = () => res(req.result);
      req.onerror = () => rej(req.error);
    });
    await expect.poll(() => banner(app)).toContain(STORAGE_MESSAGES.blocking);
    await chat.updateComplete;
    expect(chat.renderRoot.querySelector('[data-testid="storage-notice"]')).toBeNull();
    newer.close();
    app.remove();
  });
});

// <agentflow-chat> while another tab holds its database open at an older version (the open is `blocked`): a
// question says it waits for storage and why, starts by itself once the other tab lets go, and Stop ends the
// wait with the question kept (in the input, and shown as not answered) and nothing stored.
import { openDB, type IDBPDatabase } from 'idb';
import { describe, expect, it, vi } from 'vitest';
import { scriptedDemoEngines } from '../controllers/engines/demo-engines';
import { STORAGE_MESSAGES } from '../store/db';
import type { AgentFlowDB } from '../store/schema';
import './agentflow-chat';
import type { AgentFlowChat } from './agentflow-chat';

// Version 2 (a no-op second migration), so that a version-1 connection can be the older tab's.
vi.mock('../store/schema', async (importOriginal) => {
  const real = await importOriginal<typeof import('../store/schema')>();
  return { ...real, MIGRATIONS: [...real.MIGRATIONS, () => undefined], DB_VERSION: real.MIGRATIONS.length + 1 };
});
const { MIGRATIONS } = await import('../store/schema');

/** The older tab: the version-1 schema, and no versionchange handler, so it never lets go by itself. */
function olderTab(name: string): Promise<IDBPDatabase<AgentFlowDB>> {
  return openDB<AgentFlowDB>(name, 1, { upgrade: (db, _o, _n, tx) => MIGRATIONS[0](db, tx) });
}

async function mountBlocked(): Promise<{ el: AgentFlowChat; older: IDBPDatabase<AgentFlowDB> }> {
  const dbName = `chat-blocked-${Math.random()}`;
  const older = await olderTab(dbName);
  const el = document.createElement('agentflow-chat');
  el.dbName = dbName;
  el.engines = scriptedDemoEngines();
  document.body.append(el);
  await el.updateComplete;
  await expect.poll(shown(el, 'storage-notice')).toBe(STORAGE_MESSAGES.blocked);
  return { el, older };
}

const shown = (el: AgentFlowChat, id: string) => () => el.renderRoot.querySelector(`[data-testid="${id}"]`)?.textContent?.trim() ?? '';
const WAITING = /^Waiting for this browser’s storage: another AgentFlow tab holds it open at an older version\. Close or reload that tab; the question then starts by itself\./;

describe('<agentflow-chat> while the database is blocked', () => {
  it('says it waits for storage and why, and answers once the other tab lets go', async () => {
    const { el, older } = await mountBlocked();
    const asked = el.ask('What is 2 + 3?');
    await expect.poll(shown(el, 'live')).toMatch(WAITING);
    older.close();
    const r = await asked;
    expect(r?.status).toBe('done');
    await expect.poll(() => el.conversations.map((c) => c.query)).toEqual(['What is 2 + 3?']);
    expect(shown(el, 'storage-notice')()).toBe('');
    el.remove();
  });

  it('lets Stop end the wait, keeping the question, and starts nothing once storage opens', async () => {
    const { el, older } = await mountBlocked();
    const ta = el.renderRoot.querySelector('textarea')!;
    ta.value = 'What is 2 + 3?';
    let settled: unknown = 'pending';
    void el.ask(ta.value).then((r) => (settled = r));
    await expect.poll(shown(el, 'live')).toMatch(WAITING);
    expect(ta.value).toBe('');
    el.stop();
    await expect.poll(() => settled).toBeNull();
    expect(el.live).toBeNull();
    expect(ta.value).toBe('What is 2 + 3?');
    expect(shown(el, 'query')()).toBe('What is 2 + 3?');
    expect(shown(el, 'answer-error')()).toMatch(/^Not answered: stopped while waiting for this browser’s storage/);
    older.close();
    await expect.poll(() => shown(el, 'storage-notice')()).toBe('');
    await el.refreshList();
    expect(el.conversations).toEqual([]);
    el.remove();
  });
});

// Training storage in Chromium with real IndexedDB: what it shows is read again each time it comes into
// view, so training done in another tab of the app (this element hidden meanwhile) is not shown as 0 B.
import { describe, expect, it } from 'vitest';
import { openAgentDb } from '../store/db';
import type { AgentflowTrainingStorage } from './training-storage-panel';
import './training-storage-panel';

const total = (el: AgentflowTrainingStorage) => el.renderRoot.querySelector('[data-testid="training-storage-total"]')?.textContent ?? '';

describe('<agentflow-training-storage>', () => {
  it('re-reads the storage when it is shown again', async () => {
    const dbName = `training-storage-view-${Math.random()}`;
    const tab = document.createElement('section');
    const el = document.createElement('agentflow-training-storage') as AgentflowTrainingStorage;
    el.dbName = dbName;
    tab.append(el);
    document.body.append(tab);
    await expect.poll(() => total(el), { timeout: 10_000 }).toContain('0 checkpoints of 0 runs, and 0 adapters kept');

    // The tab is hidden, and an adapter is stored meanwhile (as an import or a training run would).
    tab.hidden = true;
    // Two frames: the hidden layout is made and observed before anything changes.
    for (let i = 0; i < 2; i++) await new Promise((r) => requestAnimationFrame(r));
    const db = await openAgentDb(dbName);
    await db.put('adapters', { id: 'a1', name: 'mine', createdAt: 0, baseModel: 'toy', config: {}, tensors: { w: { shape: [4], data: new Float32Array(4) } }, keep: true });
    tab.hidden = false;
    await expect.poll(() => total(el), { timeout: 10_000 }).toContain('0 checkpoints of 0 runs, and 1 adapter kept');
    tab.remove();
  });
});

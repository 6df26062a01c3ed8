// Planner calls recorded for training. The agent loop writes one record per planner call as it happens;
// the reward is filled in when the run's answer is scored; the trainer reads them by run or group.
import { describeStorageError, openAgentDb } from './db';
import type { RolloutRecord } from './records';

export async function putRollout(r: RolloutRecord, dbName?: string): Promise<void> {
  const db = await openAgentDb(dbName);
  try {
    await db.put('rollouts', r);
  } catch (e) {
    throw describeStorageError(e, `rollout '${r.id}'`);
  }
}

function byCreated(a: RolloutRecord, b: RolloutRecord): number {
  return a.createdAt - b.createdAt || a.conversationId.localeCompare(b.conversationId) || a.turn - b.turn;
}

export async function getRolloutsByRun(runId: string, dbName?: string): Promise<RolloutRecord[]> {
  return (await (await openAgentDb(dbName)).getAllFromIndex('rollouts', 'byRun', runId)).sort(byCreated);
}

export async function getRolloutsByGroup(groupId: string, dbName?: string): Promise<RolloutRecord[]> {
  return (await (await openAgentDb(dbName)).getAllFromIndex('rollouts', 'byGroup', groupId)).sort(byCreated);
}

/** Broadcasts a run's final reward to every planner call of one conversation; returns how many were set. */
export async function setConversationReward(runId: string, conversationId: string, reward: number, dbName?: string): Promise<number> {
  const db = await openAgentDb(dbName);
  try {
    const tx = db.transaction('rollouts', 'readwrite');
    let n = 0;
    for (let c = await tx.store.index('byRun').openCursor(IDBKeyRange.only(runId)); c; c = await c.continue()) {
      if (c.value.conversationId === conversationId) {
        await c.update({ ...c.value, reward });
        n++;
      }
    }
    await tx.done;
    return n;
  } catch (e) {
    throw describeStorageError(e, `rewards of conversation '${conversationId}'`);
  }
}

/** Stores advantages computed by the trainer (or by groupAdvantages), keyed by rollout id. */
export async function setAdvantages(advantages: ReadonlyMap<string, number>, dbName?: string): Promise<void> {
  const db = await openAgentDb(dbName);
  try {
    const tx = db.transaction('rollouts', 'readwrite');
    for (const [id, advantage] of advantages) {
      const r = await tx.store.get(id);
      if (r) await tx.store.put({ ...r, advantage });
    }
    await tx.done;
  } catch (e) {
    throw describeStorageError(e, 'rollout advantages');
  }
}

export async function deleteRolloutsByRun(runId: string, dbName?: string): Promise<number> {
  const db = await openAgentDb(dbName);
  const tx = db.transaction('rollouts', 'readwrite');
  let n = 0;
  for (let c = await tx.store.index('byRun').openCursor(IDBKeyRange.only(runId)); c; c = await c.continue()) {
    await c.delete();
    n++;
  }
  await tx.done;
  return n;
}

// Conversations and their steps in IndexedDB. Each step is written in its own transaction as it completes,
// together with the conversation's updatedAt, so a reload loses at most the step in flight.
import type { IDBPObjectStore } from 'idb';
import { describeStorageError, openAgentDb } from './db';
import type { ConversationRecord, StepRecord } from './records';
import type { AgentFlowDB } from './schema';

export interface NewConversation {
  id?: string;
  query: string;
  title?: string;
  reference?: string;
  settings?: Record<string, unknown>;
}

function newId(): string {
  return globalThis.crypto?.randomUUID?.() ?? `c-${Date.now().toString(36)}-${Math.random().toString(36).slice(2)}`;
}

/** A title from the query's first line, at most 80 characters. */
export function titleFromQuery(query: string): string {
  const line = query.trim().split('\n')[0].replace(/\s+/g, ' ');
  return line.length > 80 ? line.slice(0, 77) + '...' : line || 'Untitled';
}

/**
 * The time to stamp a write with: now, or one past the newest stored stamp when that is not older. Two writes in
 * the same millisecond would otherwise tie, and the list (ordered by updatedAt, ties by random id) could show the
 * one touched first above the one touched last. Read inside the write's transaction, so tabs cannot interleave.
 */
async function nextStamp(store: IDBPObjectStore<AgentFlowDB, ['conversations'] | ['steps', 'conversations'], 'conversations', 'readwrite'>): Promise<number> {
  const newest = await store.index('byUpdated').openCursor(null, 'prev');
  const now = Date.now();
  return newest && newest.value.updatedAt >= now ? newest.value.updatedAt + 1 : now;
}

export async function createConversation(init: NewConversation, dbName?: string): Promise<ConversationRecord> {
  const title = init.title ?? titleFromQuery(init.query);
  const db = await openAgentDb(dbName);
  try {
    const tx = db.transaction('conversations', 'readwrite');
    const now = await nextStamp(tx.store);
    const rec: ConversationRecord = {
      id: init.id ?? newId(),
      title,
      createdAt: now,
      updatedAt: now,
      status: 'running',
      query: init.query,
      ...(init.reference !== undefined ? { reference: init.reference } : {}),
      ...(init.settings ? { settings: init.settings } : {}),
    };
    await tx.store.add(rec);
    await tx.done;
    return rec;
  } catch (e) {
    throw describeStorageError(e, `conversation '${title}'`);
  }
}

export async function getConversation(id: string, dbName?: string): Promise<ConversationRecord | undefined> {
  return (await openAgentDb(dbName)).get('conversations', id);
}

export async function updateConversation(
  id: string,
  patch: Partial<Omit<ConversationRecord, 'id' | 'createdAt'>>,
  dbName?: string,
): Promise<ConversationRecord> {
  const db = await openAgentDb(dbName);
  try {
    const tx = db.transaction('conversations', 'readwrite');
    const cur = await tx.store.get(id);
    if (!cur) throw new Error(`no conversation with id '${id}'`);
    const next: ConversationRecord = { ...cur, ...patch, id, updatedAt: await nextStamp(tx.store) };
    await tx.store.put(next);
    await tx.done;
    return next;
  } catch (e) {
    throw describeStorageError(e, `conversation '${id}'`);
  }
}

/** Newest first. */
export async function listConversations(dbName?: string): Promise<ConversationRecord[]> {
  const db = await openAgentDb(dbName);
  return (await db.getAllFromIndex('conversations', 'byUpdated')).reverse();
}

/** Deletes a conversation and its steps (rollouts stay: they are training data with their own prompts). */
export async function deleteConversation(id: string, dbName?: string): Promise<void> {
  const db = await openAgentDb(dbName);
  const tx = db.transaction(['conversations', 'steps'], 'readwrite');
  await tx.objectStore('conversations').delete(id);
  const steps = tx.objectStore('steps');
  for (let c = await steps.index('byConversation').openKeyCursor(IDBKeyRange.only(id)); c; c = await c.continue()) {
    await steps.delete(c.primaryKey);
  }
  await tx.done;
}

/** Stores one completed step and touches its conversation, atomically. */
export async function appendStep(step: StepRecord, dbName?: string): Promise<void> {
  const db = await openAgentDb(dbName);
  try {
    const tx = db.transaction(['steps', 'conversations'], 'readwrite');
    await tx.objectStore('steps').put(step);
    const conversations = tx.objectStore('conversations');
    const conv = await conversations.get(step.conversationId);
    if (conv) await conversations.put({ ...conv, updatedAt: await nextStamp(conversations) });
    await tx.done;
  } catch (e) {
    throw describeStorageError(e, `step ${step.seq} (${step.kind}) of conversation '${step.conversationId}'`);
  }
}

/** A conversation's steps in order. */
export async function getSteps(conversationId: string, dbName?: string): Promise<StepRecord[]> {
  const db = await openAgentDb(dbName);
  return db.getAll('steps', IDBKeyRange.bound([conversationId, -Infinity], [conversationId, Infinity]));
}

/** A StepSink (see agent/loop.ts) that writes to IndexedDB. */
export function idbStepSink(dbName?: string): { write(step: StepRecord): Promise<void> } {
  return { write: (step) => appendStep(step, dbName) };
}

/**
 * Marks runs left 'running' by a closed or reloaded page as 'interrupted'. `live` are ids of runs this page
 * is executing right now. Returns the ids it marked.
 */
export async function markStaleRunsInterrupted(live: ReadonlySet<string> = new Set(), dbName?: string): Promise<string[]> {
  const db = await openAgentDb(dbName);
  const tx = db.transaction('conversations', 'readwrite');
  const marked: string[] = [];
  for (let c = await tx.store.openCursor(); c; c = await c.continue()) {
    if (c.value.status === 'running' && !live.has(c.value.id)) {
      await c.update({ ...c.value, status: 'interrupted' });
      marked.push(c.value.id);
    }
  }
  await tx.done;
  return marked;
}

export interface ConversationExport {
  format: 'agentflow-conversation';
  version: 1;
  conversation: ConversationRecord;
  steps: StepRecord[];
}

/** One conversation with all its steps, as pretty JSON. */
export async function exportConversation(id: string, dbName?: string): Promise<string> {
  const conversation = await getConversation(id, dbName);
  if (!conversation) throw new Error(`no conversation with id '${id}'`);
  const out: ConversationExport = { format: 'agentflow-conversation', version: 1, conversation, steps: await getSteps(id, dbName) };
  return JSON.stringify(out, null, 2);
}

/** Every conversation, as a JSON array of exports. */
export async function exportAllConversations(dbName?: string): Promise<string> {
  const all: ConversationExport[] = [];
  for (const c of await listConversations(dbName)) {
    all.push({ format: 'agentflow-conversation', version: 1, conversation: c, steps: await getSteps(c.id, dbName) });
  }
  return JSON.stringify(all, null, 2);
}

import 'fake-indexeddb/auto';
import { afterEach, describe, expect, it, vi } from 'vitest';
import {
  appendStep,
  createConversation,
  deleteConversation,
  exportAllConversations,
  exportConversation,
  getConversation,
  getSteps,
  listConversations,
  markStaleRunsInterrupted,
  titleFromQuery,
  updateConversation,
  type ConversationExport,
} from './conversations';
import { StorageError } from './db';
import type { StepRecord } from './records';

let n = 0;
const freshDb = () => `conv-test-${++n}-${Math.random()}`;

const step = (conversationId: string, seq: number, kind: StepRecord['kind'] = 'planner', data: Record<string, unknown> = {}): StepRecord => ({
  conversationId,
  seq,
  kind,
  turn: seq,
  startedAt: 1000 + seq,
  endedAt: 1001 + seq,
  data,
}) as unknown as StepRecord;

afterEach(() => vi.restoreAllMocks());

describe('conversation store', () => {
  it('creates, updates, lists newest first, and deletes with its steps only', async () => {
    const db = freshDb();
    const a = await createConversation({ id: 'a', query: 'First question?\nmore' }, db);
    expect(a).toMatchObject({ id: 'a', title: 'First question?', status: 'running', query: 'First question?\nmore' });
    await new Promise((r) => setTimeout(r, 3));
    await createConversation({ id: 'b', query: 'Second', reference: '42' }, db);
    await new Promise((r) => setTimeout(r, 3));
    await updateConversation('a', { status: 'done', answer: 'yes' }, db);
    expect((await listConversations(db)).map((c) => c.id)).toEqual(['a', 'b']);
    expect(await getConversation('a', db)).toMatchObject({ status: 'done', answer: 'yes', createdAt: a.createdAt });

    await appendStep(step('a', 0), db);
    await appendStep(step('a', 1), db);
    await appendStep(step('b', 0), db);
    await deleteConversation('a', db);
    expect(await getConversation('a', db)).toBeUndefined();
    expect(await getSteps('a', db)).toEqual([]);
    expect(await getSteps('b', db)).toEqual([step('b', 0)]);
    await expect(updateConversation('zz', { status: 'done' }, db)).rejects.toThrow("no conversation with id 'zz'");
  });

  it('keeps steps in seq order per conversation (numeric, not string order) and touches updatedAt', async () => {
    const db = freshDb();
    const c = await createConversation({ id: 'c', query: 'q' }, db);
    for (const seq of [10, 2, 0, 1]) await appendStep(step('c', seq, 'executor', { result: 'x'.repeat(seq) }), db);
    await appendStep(step('c-other', 5), db);
    expect((await getSteps('c', db)).map((s) => s.seq)).toEqual([0, 1, 2, 10]);
    expect(((await getSteps('c', db))[3].data as { result?: string }).result).toBe('x'.repeat(10));
    expect((await getConversation('c', db))!.updatedAt).toBeGreaterThanOrEqual(c.updatedAt);
  });

  it('marks runs left running by a closed page as interrupted, sparing live ones', async () => {
    const db = freshDb();
    await createConversation({ id: 'live', query: 'q' }, db);
    await createConversation({ id: 'stale', query: 'q' }, db);
    await createConversation({ id: 'finished', query: 'q' }, db);
    await updateConversation('finished', { status: 'done' }, db);
    expect(await markStaleRunsInterrupted(new Set(['live']), db)).toEqual(['stale']);
    expect((await getConversation('stale', db))!.status).toBe('interrupted');
    expect((await getConversation('live', db))!.status).toBe('running');
    expect((await getConversation('finished', db))!.status).toBe('done');
  });

  it('exports a conversation and all conversations as JSON that parses back to the stored records', async () => {
    const db = freshDb();
    const conv = await createConversation({ id: 'e', query: 'Export me' }, db);
    await appendStep(step('e', 0, 'analysis', { text: 'ok' }), db);
    const stored = (await getConversation('e', db))!;
    const one = JSON.parse(await exportConversation('e', db)) as ConversationExport;
    expect(one).toEqual({ format: 'agentflow-conversation', version: 1, conversation: stored, steps: [step('e', 0, 'analysis', { text: 'ok' })] });
    expect(one.conversation.createdAt).toBe(conv.createdAt);
    const all = JSON.parse(await exportAllConversations(db)) as ConversationExport[];
    expect(all.map((x) => x.conversation.id)).toEqual(['e']);
    await expect(exportConversation('missing', db)).rejects.toThrow("no conversation with id 'missing'");
  });

  it('turns a full disk into a StorageError that says what to do, and names the step otherwise', async () => {
    const db = freshDb();
    await createConversation({ id: 'q', query: 'q' }, db);
    const spy = vi.spyOn(IDBObjectStore.prototype, 'put').mockImplementation(() => {
      throw new DOMException('quota', 'QuotaExceededError');
    });
    const err = await appendStep(step('q', 3, 'verifier'), db).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(StorageError);
    expect((err as Error).message).toMatch(/^Browser storage is full while saving step 3 \(verifier\) of conversation 'q'\. Delete cached models/);
    spy.mockRestore();
    const bad = step('q', 4, 'executor', { fn: () => 1 });
    await expect(appendStep(bad, db)).rejects.toThrow(/^Could not save step 4 \(executor\) of conversation 'q': /);
    expect(await getSteps('q', db)).toEqual([]);
  });

  it('lists the conversation touched last first, even when every write falls in the same millisecond', async () => {
    const db = freshDb();
    vi.spyOn(Date, 'now').mockReturnValue(5_000);
    // Random ids: the tie-break of a plain updatedAt index would be the ids' order, not the writes'.
    const made = [];
    for (let i = 0; i < 6; i++) made.push(await createConversation({ query: `q${i}` }, db));
    expect((await listConversations(db)).map((c) => c.title)).toEqual(['q5', 'q4', 'q3', 'q2', 'q1', 'q0']);
    await updateConversation(made[2].id, { status: 'done' }, db);
    await appendStep(step(made[0].id, 0), db);
    const listed = await listConversations(db);
    expect(listed.map((c) => c.title)).toEqual(['q0', 'q2', 'q5', 'q4', 'q3', 'q1']);
    expect(new Set(listed.map((c) => c.updatedAt)).size).toBe(6);
    // A clock that catches up stamps with itself again.
    vi.spyOn(Date, 'now').mockReturnValue(9_000);
    expect((await updateConversation(made[1].id, {}, db)).updatedAt).toBe(9_000);
  });

  it('titles long queries briefly', () => {
    expect(titleFromQuery('  ' + 'word '.repeat(40))).toHaveLength(80);
    expect(titleFromQuery('')).toBe('Untitled');
  });
});

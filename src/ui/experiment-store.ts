// Benchmark runs in IndexedDB ('experiments' and 'experimentItems'): one record per run with its config
// and summary, one per item with the answer, correctness, tool calls and errors.
import { describeStorageError, openAgentDb } from '../store/db';
import type { ExperimentItemRecord, ExperimentRecord } from '../store/records';

export async function putExperiment(rec: ExperimentRecord, dbName?: string): Promise<void> {
  try {
    await (await openAgentDb(dbName)).put('experiments', rec);
  } catch (e) {
    throw describeStorageError(e, `experiment '${rec.name}'`);
  }
}

export async function putExperimentItem(rec: ExperimentItemRecord, dbName?: string): Promise<void> {
  try {
    await (await openAgentDb(dbName)).put('experimentItems', rec);
  } catch (e) {
    throw describeStorageError(e, `item ${rec.index} of experiment '${rec.experimentId}'`);
  }
}

/** Newest first. */
export async function listExperiments(dbName?: string): Promise<ExperimentRecord[]> {
  return (await (await openAgentDb(dbName)).getAllFromIndex('experiments', 'byCreated')).reverse();
}

export async function getExperimentItems(experimentId: string, dbName?: string): Promise<ExperimentItemRecord[]> {
  const db = await openAgentDb(dbName);
  return db.getAll('experimentItems', IDBKeyRange.bound([experimentId, -Infinity], [experimentId, Infinity]));
}

export async function deleteExperiment(id: string, dbName?: string): Promise<void> {
  const db = await openAgentDb(dbName);
  const tx = db.transaction(['experiments', 'experimentItems'], 'readwrite');
  await tx.objectStore('experiments').delete(id);
  await tx.objectStore('experimentItems').delete(IDBKeyRange.bound([id, -Infinity], [id, Infinity]));
  await tx.done;
}

/** Runs left 'running' by a closed page are shown as interrupted. */
export async function markStaleExperiments(live: ReadonlySet<string>, dbName?: string): Promise<void> {
  const db = await openAgentDb(dbName);
  const tx = db.transaction('experiments', 'readwrite');
  for (let c = await tx.store.openCursor(); c; c = await c.continue()) {
    if (c.value.status === 'running' && !live.has(c.value.id)) await c.update({ ...c.value, status: 'interrupted' });
  }
  await tx.done;
}

export interface ExperimentSummary {
  items: number;
  answered: number;
  correct: number;
  accuracy: number;
  toolCalls: number;
  errors: number;
  [tool: `tool:${string}`]: number;
}

/** Accuracy over the items run so far, and tool calls by tool. */
export function summarize(items: ExperimentItemRecord[]): ExperimentSummary {
  const s: ExperimentSummary = { items: items.length, answered: 0, correct: 0, accuracy: 0, toolCalls: 0, errors: 0 };
  for (const it of items) {
    if (it.answer !== undefined) s.answered++;
    if (it.correct) s.correct++;
    s.errors += it.errors?.length ?? 0;
    for (const [tool, n] of Object.entries(it.toolCalls ?? {})) {
      s[`tool:${tool}`] = (s[`tool:${tool}`] ?? 0) + n;
      s.toolCalls += n;
    }
  }
  s.accuracy = s.items ? s.correct / s.items : 0;
  return s;
}

export async function exportExperiment(id: string, dbName?: string): Promise<string> {
  const db = await openAgentDb(dbName);
  const experiment = await db.get('experiments', id);
  if (!experiment) throw new Error(`no experiment with id '${id}'`);
  return JSON.stringify({ format: 'agentflow-experiment', version: 1, experiment, items: await getExperimentItems(id, dbName) }, null, 2);
}

// Benchmark runs in IndexedDB ('experiments' and 'experimentItems'): one record per run with its config
// and summary, one per item with the answer, correctness, tool calls and errors.
import { describeStorageError, openAgentDb } from '../../store/db';
import type { ExperimentItemRecord, ExperimentRecord } from '../../store/records';
import { experimentFile, parseExperimentFile } from '../../agent/experiment-file';

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

/**
 * `name`, or `name (2)`, `name (3)`… : the first not taken. Two runs of one benchmark in the same minute are
 * otherwise one name in the Runs table, the chart and Compare's A and B headings.
 */
export function uniqueRunName(name: string, taken: Iterable<string>): string {
  const names = new Set(taken);
  if (!names.has(name)) return name;
  for (let k = 2; ; k++) if (!names.has(`${name} (${k})`)) return `${name} (${k})`;
}

/** Renames a run; refuses an empty name or one another run has (names are how runs are told apart). */
export async function renameExperiment(id: string, name: string, dbName?: string): Promise<ExperimentRecord> {
  const wanted = name.replace(/\s+/g, ' ').trim();
  if (!wanted) throw new Error('A run needs a name.');
  if (wanted.length > 300) throw new Error('A run’s name can have at most 300 characters.');
  const db = await openAgentDb(dbName);
  const tx = db.transaction('experiments', 'readwrite');
  const rec = await tx.store.get(id);
  if (!rec) throw new Error(`no experiment with id '${id}'`);
  for (let c = await tx.store.openCursor(); c; c = await c.continue()) {
    if (c.value.id !== id && c.value.name === wanted) throw new Error(`Another run is already named “${wanted}”.`);
  }
  const next = { ...rec, name: wanted };
  await tx.store.put(next);
  await tx.done;
  return next;
}

export async function getExperiment(id: string, dbName?: string): Promise<ExperimentRecord | undefined> {
  return (await openAgentDb(dbName)).get('experiments', id);
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

export { summarize, type ExperimentSummary } from '../../agent/experiment-file';

export async function exportExperiment(id: string, dbName?: string): Promise<string> {
  const db = await openAgentDb(dbName);
  const experiment = await db.get('experiments', id);
  if (!experiment) throw new Error(`no experiment with id '${id}'`);
  return experimentFile(experiment, await getExperimentItems(id, dbName));
}

/**
 * Stores a run read from a file (`cli eval`'s experiment.json, results.jsonl with its summary.json, or an
 * export of this tab) under a new id and a name no stored run has.
 */
export async function importExperiment(text: string, fileName: string, summaryText?: string, dbName?: string): Promise<ExperimentRecord> {
  const id = globalThis.crypto?.randomUUID?.() ?? `x-${Date.now().toString(36)}`;
  const run = parseExperimentFile(text, fileName, id, summaryText);
  run.experiment.name = uniqueRunName(run.experiment.name, (await listExperiments(dbName)).map((r) => r.name));
  const db = await openAgentDb(dbName);
  const tx = db.transaction(['experiments', 'experimentItems'], 'readwrite');
  await tx.objectStore('experiments').put(run.experiment);
  for (const it of run.items) await tx.objectStore('experimentItems').put(it);
  await tx.done;
  return run.experiment;
}

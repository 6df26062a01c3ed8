// What training keeps in this browser, and freeing it. A checkpoint holds the adapter (the 'adapters' store)
// and the AdamW moments (twice the adapter's size): for a Qwen2.5-0.5B rank-16 adapter on seven modules about
// 100 MB in all. Runs keep only their newest few checkpoints plus the best (pruning in the checkpoint store);
// a finished run needs none of them to be continued, so freeing keeps just what a user may still want: each
// finished run's result adapter and every adapter saved under a name of the user's own.
import { describeStorageError, openAgentDb } from './db';
import type { AdapterRecord, CheckpointRecord, TrainingRunRecord } from './records';

export interface RunStorage {
  runId: string;
  status: TrainingRunRecord['status'] | 'unknown';
  checkpoints: number;
  /** Bytes of the run's checkpoint adapters and optimizer moments. */
  adapterBytes: number;
  momentBytes: number;
  /** The adapter a finished run keeps as its result, if any. */
  resultAdapterId: string | null;
}

export interface TrainingStorageUsage {
  runs: RunStorage[];
  /** Adapters not made by a run's checkpoint (imports), and those saved by name: never freed here. */
  keptAdapters: number;
  keptAdapterBytes: number;
  totalBytes: number;
  /** Bytes freeTrainingStorage() would release now. */
  freeableBytes: number;
}

const tensorBytes = (t: Record<string, { data: Float32Array }>) => Object.values(t).reduce((n, x) => n + x.data.byteLength, 0);
const momentBytes = (c: CheckpointRecord) => Object.values(c.moments).reduce((n, x) => n + x.m.byteLength + x.v.byteLength, 0);

/** The result adapter a run record names (library runs store it in config.result). */
function resultAdapter(run: TrainingRunRecord | undefined): string | null {
  const r = (run?.config as { result?: { adapterId?: unknown } } | undefined)?.result;
  return typeof r?.adapterId === 'string' ? r.adapterId : null;
}

/** A checkpoint adapter that freeing would delete: its run is finished, it is not the result, not saved by name. */
function freeable(c: CheckpointRecord, ad: AdapterRecord | undefined, run: TrainingRunRecord | undefined): boolean {
  return run?.status === 'done' && !ad?.keep && c.adapterId !== resultAdapter(run);
}

export async function trainingStorageUsage(dbName?: string): Promise<TrainingStorageUsage> {
  const db = await openAgentDb(dbName);
  const [checkpoints, adapters, runs] = await Promise.all([db.getAll('checkpoints'), db.getAll('adapters'), db.getAll('trainingRuns')]);
  const adapterById = new Map(adapters.map((a) => [a.id, a]));
  const runById = new Map(runs.map((r) => [r.id, r]));
  const byRun = new Map<string, RunStorage>();
  const counted = new Set<string>();
  let freeableBytes = 0;
  for (const c of checkpoints) {
    const run = runById.get(c.runId);
    const s = byRun.get(c.runId) ?? { runId: c.runId, status: run?.status ?? 'unknown', checkpoints: 0, adapterBytes: 0, momentBytes: 0, resultAdapterId: resultAdapter(run) };
    byRun.set(c.runId, s);
    const ad = adapterById.get(c.adapterId);
    const aBytes = ad ? tensorBytes(ad.tensors) : 0;
    s.checkpoints++;
    s.momentBytes += momentBytes(c);
    if (ad && !ad.keep) {
      s.adapterBytes += aBytes;
      counted.add(ad.id);
    }
    if (run?.status === 'done') freeableBytes += momentBytes(c) + (freeable(c, ad, run) ? aBytes : 0);
  }
  const kept = adapters.filter((a) => !counted.has(a.id));
  const keptAdapterBytes = kept.reduce((n, a) => n + tensorBytes(a.tensors), 0);
  const list = [...byRun.values()].sort((a, b) => a.runId.localeCompare(b.runId));
  const totalBytes = keptAdapterBytes + list.reduce((n, r) => n + r.adapterBytes + r.momentBytes, 0);
  return { runs: list, keptAdapters: kept.length, keptAdapterBytes, totalBytes, freeableBytes };
}

/**
 * Deletes the checkpoints of finished runs (their moments are only for continuing a run) and their adapters,
 * except each run's result and adapters saved by name. Paused and running runs are left alone: they need
 * their checkpoints to resume. Returns the bytes freed.
 */
export async function freeTrainingStorage(dbName?: string): Promise<number> {
  const db = await openAgentDb(dbName);
  const before = (await trainingStorageUsage(dbName)).freeableBytes;
  try {
    const tx = db.transaction(['checkpoints', 'adapters', 'trainingRuns'], 'readwrite');
    const runs = new Map((await tx.objectStore('trainingRuns').getAll()).map((r) => [r.id, r]));
    const adapters = tx.objectStore('adapters');
    for (let c = await tx.objectStore('checkpoints').openCursor(); c; c = await c.continue()) {
      const run = runs.get(c.value.runId);
      if (run?.status !== 'done') continue;
      const ad = await adapters.get(c.value.adapterId);
      if (freeable(c.value, ad, run)) await adapters.delete(c.value.adapterId);
      await c.delete();
    }
    await tx.done;
  } catch (e) {
    throw describeStorageError(e, 'freeing training storage');
  }
  return before;
}

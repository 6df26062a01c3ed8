// Training storage on fake-indexeddb with real toy runs: usage per run, freeing the checkpoints of finished
// runs while keeping each one's result adapter and every adapter saved by name, and never touching a paused
// run (it needs its checkpoints to resume).
import 'fake-indexeddb/auto';
import { describe, expect, it } from 'vitest';
import { idbTrainStorage } from '../trainer/checkpoint-idb';
import { IdbRunStore } from '../trainer/run/run-store-idb';
import { toyRunSetup, toyRunSpec } from '../trainer/run/toy-run';
import { TrainingRun } from '../trainer/run/training-run';
import { openAgentDb } from './db';
import { freeTrainingStorage, trainingStorageUsage } from './training-storage';
import { keepAdapter } from '../controllers/training/adapter-store';

const TASK = { numQueries: 3, hiddenSize: 16, intermediateSize: 24, numLayers: 1 };

async function toyRun(db: string, id: string, steps: number, pauseAt?: number): Promise<TrainingRun> {
  const setup = await toyRunSetup({ store: new IdbRunStore(db), storage: idbTrainStorage, backend: 'cpu', task: TASK, dbName: db });
  const spec = toyRunSpec({ steps, groupSize: 4, learningRate: 0.01, seed: 3, task: TASK, adapter: { kind: 'fresh', rank: 2, alpha: 4, targets: ['q', 'v'] }, keepCheckpoints: 2, bestWindow: 2, grpo: { checkpointEvery: 1 } });
  const run = await TrainingRun.start(id, spec, setup.deps);
  await run.run({ onStep: (m) => m.step === pauseAt && run.pause() });
  setup.destroy();
  return run;
}

describe('training storage', () => {
  it('frees finished runs’ checkpoints but their results and named adapters; leaves paused runs alone', async () => {
    const db = `training-storage-${Math.random()}`;
    const done = await toyRun(db, 'done-run', 5);
    const paused = await toyRun(db, 'paused-run', 5, 2);
    expect(paused.state).toBe('paused');
    const idb = await openAgentDb(db);
    const doneCheckpoints = (await idb.getAllFromIndex('checkpoints', 'byRun', 'done-run')).map((c) => c.step).sort();
    // The newest 2 and the best (maybe one of them).
    expect(doneCheckpoints.length).toBeGreaterThanOrEqual(2);
    expect(doneCheckpoints.length).toBeLessThanOrEqual(3);
    const named = (await idb.getAllFromIndex('checkpoints', 'byRun', 'done-run')).find((c) => c.adapterId !== done.result!.adapterId)!.adapterId;
    await keepAdapter(named, 'my favourite', db);

    const usage = await trainingStorageUsage(db);
    expect(usage.runs.map((r) => [r.runId, r.status, r.checkpoints])).toEqual([
      ['done-run', 'done', doneCheckpoints.length],
      ['paused-run', 'paused', 2],
    ]);
    expect(usage.keptAdapters).toBe(1);
    expect(usage.freeableBytes).toBeGreaterThan(0);
    expect(usage.totalBytes).toBeGreaterThan(usage.freeableBytes);

    const freed = await freeTrainingStorage(db);
    expect(freed).toBe(usage.freeableBytes);
    expect(await idb.getAllFromIndex('checkpoints', 'byRun', 'done-run')).toEqual([]);
    const left = (await idb.getAll('adapters')).map((a) => a.id).sort();
    // The finished run keeps its result and the named adapter; the paused run keeps both its checkpoints.
    const pausedAdapters = (await idb.getAllFromIndex('checkpoints', 'byRun', 'paused-run')).map((c) => c.adapterId);
    expect(left).toEqual([...new Set([done.result!.adapterId, named, ...pausedAdapters])].sort());
    expect((await trainingStorageUsage(db)).freeableBytes).toBe(0);
    // The paused run still resumes.
    const setup = await toyRunSetup({ store: new IdbRunStore(db), storage: idbTrainStorage, backend: 'cpu', task: TASK, dbName: db });
    const resumed = await TrainingRun.resume('paused-run', setup.deps);
    expect(resumed.info.step).toBe(2);
    setup.destroy();
  });

  it('refuses to keep an adapter without a name or one that is gone', async () => {
    const db = `training-storage-keep-${Math.random()}`;
    await expect(keepAdapter('nope', 'x', db)).rejects.toThrow("adapter 'nope' is not in this browser's storage");
    await expect(keepAdapter('nope', '  ', db)).rejects.toThrow('an adapter needs a name to be kept');
  });
});

// The page's run store keeps a long run's history in sealed chunks beside its record, so a step rewrites a
// bounded record however long the run (bench/run-store-idb.ts times it); records stored before (the whole
// history in `stats`, schema v2) load as they are and are chunked on their next write, losing nothing.
import 'fake-indexeddb/auto';
import { openDB } from 'idb';
import { describe, expect, it } from 'vitest';
import { openAgentDb } from '../../store/db';
import { MIGRATIONS, type AgentFlowDB } from '../../store/schema';
import type { StepMetrics } from './metrics';
import { HISTORY_CHUNK, IdbRunStore, listRuns, RUN_RECORD_KIND } from './run-store-idb';
import type { RunSpec, StoredRun } from './run-store';

const spec: RunSpec = { task: 'toy', label: 'toy', dataset: 'toy', steps: 10_000, grpo: {}, adapter: { kind: 'fresh', rank: 2, alpha: 4, targets: ['q'] }, keepCheckpoints: 2, bestWindow: 20, collector: {} };
const metrics = (step: number): StepMetrics => ({ step, reward: (step % 5) / 5, rewardStd: 0, rollingReward: 0, loss: 0, kl: 0, gradNorm: 0, clipFraction: 0, tokensPerSecond: 0, plannerTokens: 0, samples: 0, noGradientGroups: 0, rolloutSeconds: 0, updateSeconds: 0 });
const newRun = (id: string): StoredRun => ({ id, createdAt: 1, updatedAt: 1, status: 'running', spec, history: [], result: null });

/** Stores steps from..to as TrainingRun does: appendStep, then the record saved with the step in its history. */
async function steps(store: IdbRunStore, run: StoredRun, from: number, to: number): Promise<void> {
  for (let s = from; s <= to; s++) {
    const m = metrics(s);
    await store.appendStep(run, m, []);
    run.history.push(m);
    await store.save(run);
  }
}

const stepsOf = (run: StoredRun | null) => run?.history.map((m) => m.step);
const range = (a: number, b: number) => Array.from({ length: b - a + 1 }, (_, i) => a + i);

describe('IdbRunStore: history in chunks', () => {
  it('a step rewrites at most HISTORY_CHUNK steps of the record; the chunks and the record load back as the whole history', async () => {
    const dbName = `runs-chunked-${Math.random()}`;
    const store = new IdbRunStore(dbName);
    const run = newRun('long');
    await store.save(run);
    const db = await openAgentDb(dbName);
    let most = 0;
    for (let s = 1; s <= 3 * HISTORY_CHUNK + 5; s++) {
      await steps(store, run, s, s);
      most = Math.max(most, (await db.get('trainingRuns', 'long'))!.stats.length);
    }
    expect(most).toBeLessThanOrEqual(HISTORY_CHUNK);
    expect((await db.get('trainingRuns', 'long'))!.stats.map((m) => m.step)).toEqual(range(3 * HISTORY_CHUNK + 1, 3 * HISTORY_CHUNK + 5));
    expect((await db.getAll('trainingRunSteps')).map((c) => [c.chunk, c.stats.length])).toEqual([
      [0, HISTORY_CHUNK],
      [1, HISTORY_CHUNK],
      [2, HISTORY_CHUNK],
    ]);
    expect(stepsOf(await store.load('long'))).toEqual(range(1, 3 * HISTORY_CHUNK + 5));
    expect((await store.load('long'))!.history[7]).toEqual(metrics(8));
    expect(stepsOf((await listRuns(dbName)).find((r) => r.id === 'long')!)).toEqual(range(1, 3 * HISTORY_CHUNK + 5));
  });

  it('truncate cuts into the sealed chunks; the resumed run appends after the kept steps', async () => {
    const store = new IdbRunStore(`runs-truncate-${Math.random()}`);
    const run = newRun('t');
    await store.save(run);
    await steps(store, run, 1, 2 * HISTORY_CHUNK + 10);
    const keep = HISTORY_CHUNK + 3;
    await store.truncate('t', keep);
    const back = (await store.load('t'))!;
    expect(stepsOf(back)).toEqual(range(1, keep));
    await steps(store, back, keep + 1, 2 * HISTORY_CHUNK + 20);
    expect(stepsOf(await store.load('t'))).toEqual(range(1, 2 * HISTORY_CHUNK + 20));
    // Within the record's own steps too.
    await store.truncate('t', 2 * HISTORY_CHUNK + 15);
    expect(stepsOf(await store.load('t'))).toEqual(range(1, 2 * HISTORY_CHUNK + 15));
  });

  it('saving a history that is not the stored one (shorter, or other steps) replaces it whole', async () => {
    const store = new IdbRunStore(`runs-replace-${Math.random()}`);
    const run = newRun('r');
    await store.save(run);
    await steps(store, run, 1, HISTORY_CHUNK + 2);
    await store.save({ ...run, history: [metrics(1), metrics(2)] });
    expect(stepsOf(await store.load('r'))).toEqual([1, 2]);
    const other = range(1, HISTORY_CHUNK + 2).map((s) => metrics(s * 10));
    await store.save({ ...run, history: other });
    expect(stepsOf(await store.load('r'))).toEqual(other.map((m) => m.step));
  });

  it('a run stored in a version-2 database keeps every step through the upgrade, and is chunked by its next step', async () => {
    const dbName = `runs-upgrade-${Math.random()}`;
    const v2 = await openDB<AgentFlowDB>(dbName, 2, { upgrade: (db, old, _n, tx) => MIGRATIONS.slice(old, 2).forEach((m) => m(db, tx)) });
    const old = range(1, 3 * HISTORY_CHUNK).map(metrics);
    await v2.put('trainingRuns', { id: 'old', createdAt: 1, updatedAt: 1, status: 'paused', config: { kind: RUN_RECORD_KIND, spec, result: null }, stats: old as unknown as Array<Record<string, number>> });
    v2.close();

    const store = new IdbRunStore(dbName);
    const back = (await store.load('old'))!;
    expect(back.history).toEqual(old);
    expect((await openAgentDb(dbName)).version).toBe(MIGRATIONS.length);
    await steps(store, back, 3 * HISTORY_CHUNK + 1, 3 * HISTORY_CHUNK + 1);
    const db = await openAgentDb(dbName);
    expect((await db.get('trainingRuns', 'old'))!.stats).toEqual([]);
    expect((await db.getAll('trainingRunSteps')).map((c) => c.stats.length)).toEqual([3 * HISTORY_CHUNK + 1]);
    expect(stepsOf(await store.load('old'))).toEqual(range(1, 3 * HISTORY_CHUNK + 1));
  });
});

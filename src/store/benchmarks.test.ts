// Imported benchmarks kept in IndexedDB (schema v2), on fake-indexeddb: a database made by the version-1
// schema upgrades with its records intact; the same file imported twice is one record, two files that share
// a name are two; the list is newest first and gives back what was imported.
import 'fake-indexeddb/auto';
import { openDB } from 'idb';
import { describe, expect, it } from 'vitest';
import { importBenchmark } from '../agent/benchmark-import';
import { benchmarkFromRecord, getBenchmark, listBenchmarks, saveBenchmark } from './benchmarks';
import { benchmarkLabel } from '../controllers/benchmark-choice';
import { openAgentDb } from './db';
import { DB_VERSION, MIGRATIONS, type AgentFlowDB } from './schema';

const fresh = () => `benchmarks-test-${Math.random()}`;
const FILE = ['{"pid": "a1", "query": "What is 2+3?", "answer": 5}', '{"pid": "a2", "query": "Capital of France?", "answer": ["Paris"]}', 'not json'].join('\n');

describe('stored benchmarks', () => {
  it('upgrades a version-1 database: its records stay and the benchmarks store is added', async () => {
    const name = fresh();
    const v1 = await openDB<AgentFlowDB>(name, 1, { upgrade: (db, _o, _n, tx) => MIGRATIONS[0](db, tx) });
    await v1.put('experiments', { id: 'e1', createdAt: 1, name: 'old run', status: 'done', config: {}, total: 0 });
    v1.close();
    const db = await openAgentDb(name);
    expect(db.version).toBe(DB_VERSION);
    expect(DB_VERSION).toBeGreaterThanOrEqual(2);
    expect([...db.objectStoreNames]).toContain('benchmarks');
    expect((await db.get('experiments', 'e1'))?.name).toBe('old run');
    expect(await listBenchmarks(name)).toEqual([]);
  });

  it('keeps what was imported, once per file, newest first, and gives it back as imported', async () => {
    const name = fresh();
    const b = importBenchmark(FILE, 'mini.jsonl');
    const first = await saveBenchmark(b, 'mini.jsonl', name, 1000);
    expect(first).not.toBeNull();
    // The same file again replaces it (its import time moves on).
    await saveBenchmark(importBenchmark(FILE, 'mini.jsonl'), 'mini.jsonl', name, 2000);
    let list = await listBenchmarks(name);
    expect(list.map((r) => [r.id, r.importedAt])).toEqual([[first!.id, 2000]]);
    // Another file of the same name is another benchmark.
    const other = importBenchmark('{"pid": "b", "query": "Q?", "answer": "x"}', 'mini.jsonl');
    const second = await saveBenchmark(other, 'mini.jsonl', name, 3000);
    expect(second!.id).not.toBe(first!.id);
    list = await listBenchmarks(name);
    expect(list.map((r) => r.id)).toEqual([second!.id, first!.id]);
    const back = benchmarkFromRecord((await getBenchmark(first!.id, name))!);
    expect(back).toEqual(b);
    expect(back.problems).toHaveLength(1);
    expect(benchmarkLabel(list[1])).toMatch(/^mini: 2 items, exact, imported \d{4}-\d\d-\d\d \d\d:\d\d$/);
  });

  it('does not keep a file with no items', async () => {
    const name = fresh();
    expect(await saveBenchmark(importBenchmark('not json', 'bad.jsonl'), 'bad.jsonl', name)).toBeNull();
    expect(await listBenchmarks(name)).toEqual([]);
  });
});

// Imported benchmark files in IndexedDB ('benchmarks', schema v2), so a file imported once is offered again
// after a reload, in Experiments and in Training (where a paused run on it is still listed).
import { describeStorageError, openAgentDb } from './db';
import type { BenchmarkRecord } from './records';

/** A benchmark as an import gives it (agent/benchmark-import.ts's ImportedBenchmark is one): the store sits below the agent. */
export type BenchmarkImport = Pick<BenchmarkRecord, 'name' | 'kind' | 'items' | 'problems'>;

/**
 * The record's id: the name and a hash of the items, so importing the same file again replaces its record,
 * while two different files that share a name (AgentFlow ships every benchmark as `data.json`) are both kept.
 */
export function benchmarkId(b: Pick<BenchmarkImport, 'name' | 'items'>): string {
  // FNV-1a over the items' JSON, two 32-bit lanes: a name collision, not an attack, is what this tells apart.
  const text = JSON.stringify(b.items);
  let h1 = 0x811c9dc5;
  let h2 = 0x01000193 ^ text.length;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    h1 = Math.imul(h1 ^ c, 0x01000193);
    h2 = Math.imul(h2 ^ c, 0x5bd1e995);
  }
  const hex = (n: number) => (n >>> 0).toString(16).padStart(8, '0');
  return `${b.name}:${hex(h1)}${hex(h2)}`;
}

/** Keeps an imported benchmark (one with items; a file with none is nothing to offer again). */
export async function saveBenchmark(b: BenchmarkImport, fileName: string, dbName?: string, now = Date.now()): Promise<BenchmarkRecord | null> {
  if (!b.items.length) return null;
  const rec: BenchmarkRecord = { id: benchmarkId(b), name: b.name, fileName, importedAt: now, kind: b.kind, items: b.items, problems: b.problems };
  try {
    await (await openAgentDb(dbName)).put('benchmarks', rec);
  } catch (e) {
    throw describeStorageError(e, `benchmark '${b.name}'`);
  }
  return rec;
}

/** Newest import first. */
export async function listBenchmarks(dbName?: string): Promise<BenchmarkRecord[]> {
  return (await (await openAgentDb(dbName)).getAllFromIndex('benchmarks', 'byImported')).reverse();
}

export async function getBenchmark(id: string, dbName?: string): Promise<BenchmarkRecord | undefined> {
  return (await openAgentDb(dbName)).get('benchmarks', id);
}

/** A stored benchmark as the import made it. */
export function benchmarkFromRecord(rec: BenchmarkRecord): BenchmarkImport {
  return { name: rec.name, kind: rec.kind, items: rec.items, problems: rec.problems };
}

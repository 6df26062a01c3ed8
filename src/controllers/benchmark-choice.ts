// The benchmark the Experiments tab runs or the Training tab trains on: imported from a file (and kept in
// IndexedDB for later), or chosen among the kept ones; with none chosen, a kept one is (a reload comes back to it).
import type { ReactiveControllerHost } from 'lit';
import { importBenchmark, type ImportedBenchmark } from '../agent/benchmark-import';
import { benchmarkFromRecord, benchmarkId, listBenchmarks, saveBenchmark } from '../store/benchmarks';
import type { BenchmarkRecord } from '../store/records';

export class BenchmarkChoice {
  benchmark: ImportedBenchmark | null = null;
  /** Imported benchmarks kept in IndexedDB, newest first. */
  stored: BenchmarkRecord[] = [];
  /** The chosen one's id. */
  chosen: string | null = null;

  constructor(
    private readonly host: ReactiveControllerHost & { readonly dbName: string | undefined },
    /** Where a benchmark that could not be kept is reported (the tab's error line). */
    private readonly fail: (error: string) => void,
  ) {}

  /** Reads the kept benchmarks; with none chosen yet, chooses `prefer`'s pick, else the newest. */
  async refresh(prefer?: (stored: BenchmarkRecord[]) => BenchmarkRecord | undefined): Promise<void> {
    this.stored = await listBenchmarks(this.host.dbName);
    this.host.requestUpdate();
    if (!this.benchmark && this.stored.length) this.choose((prefer?.(this.stored) ?? this.stored[0]).id);
  }

  /** The kept benchmarks could not be read: none are offered. */
  forgetStored(): void {
    this.stored = [];
    this.host.requestUpdate();
  }

  choose(id: string): void {
    const rec = this.stored.find((r) => r.id === id);
    if (!rec) return;
    this.chosen = id;
    this.benchmark = benchmarkFromRecord(rec);
    this.host.requestUpdate();
  }

  /** Imports a benchmark from text (a file's contents) and keeps it when it has items. */
  importText(text: string, fileName: string): ImportedBenchmark {
    const b = importBenchmark(text, fileName);
    this.benchmark = b;
    this.chosen = b.items.length ? benchmarkId(b) : null;
    this.host.requestUpdate();
    if (b.items.length) {
      void saveBenchmark(b, fileName, this.host.dbName)
        .then(() => this.refresh())
        .catch((e) => this.fail(`The benchmark is imported but could not be kept for later: ${(e as Error).message}`));
    }
    return b;
  }
}

/** How a stored benchmark is listed: "bamboogle: 125 items, exact, imported 2026-11-26 14:05". */
export function benchmarkLabel(rec: Pick<BenchmarkRecord, 'name' | 'items' | 'kind' | 'importedAt'>): string {
  const d = new Date(rec.importedAt);
  const p = (n: number) => String(n).padStart(2, '0');
  const n = rec.items.length;
  return `${rec.name}: ${n} item${n === 1 ? '' : 's'}, ${rec.kind}, imported ${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())} ${p(d.getHours())}:${p(d.getMinutes())}`;
}

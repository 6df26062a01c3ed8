// The Training tab's held-out items for a real-planner run: a file read with the benchmark importer (same
// formats), kept in memory with the form (not stored as a benchmark; a run's spec carries the items, as
// `cli train --eval-data` and the element's train({ evalItems }) do). A file is refused, naming it, when it
// gave no items, none has a reference answer, or it asks a question the training benchmark asks too (the
// accuracy would then measure recall of trained questions, not generalisation).
import type { ReactiveControllerHost } from 'lit';
import { importBenchmark, type ImportedBenchmark } from '../../agent/benchmark-import';
import type { AgentHeldOut } from './agent-training-driver';

/** What the form shows of the chosen held-out file. */
export interface HeldOutState {
  fileName: string;
  /** Items with a reference answer (the ones evaluated), when the file is accepted. */
  items: number;
  /** Items the importer skipped. */
  skipped: number;
  /** Why the file cannot be used, naming it; null when it can. */
  problem: string | null;
}

/** A question as compared for overlap: case and runs of white space do not make it a different question. */
const questionKey = (q: string) => q.trim().replace(/\s+/g, ' ').toLowerCase();

/** Why `held` (read from `fileName`) cannot be the held-out data of a run on `training`, or null. */
export function heldOutProblem(held: ImportedBenchmark, fileName: string, training: ImportedBenchmark | null): string | null {
  if (!held.items.length) {
    const why = held.problems[0]?.message ?? 'it has no items';
    return `The held-out file “${fileName}” could not be read: ${why}.`;
  }
  const scored = held.items.filter((i) => i.answer !== undefined && i.answer !== null);
  if (!scored.length) return `The held-out file “${fileName}” has no item with a reference answer ('answer'), so nothing could be scored.`;
  if (training) {
    const trained = new Set(training.items.map((i) => questionKey(i.query)));
    const shared = scored.filter((i) => trained.has(questionKey(i.query)));
    if (shared.length) {
      const n = shared.length;
      return `The held-out file “${fileName}” shares ${n} question${n === 1 ? '' : 's'} with the training benchmark “${training.name}” (e.g. “${shared[0].query}”): held-out items must be questions the run does not train on.`;
    }
  }
  return null;
}

export class HeldOutChoice {
  private file: { name: string; data: ImportedBenchmark } | null = null;

  constructor(private readonly host: ReactiveControllerHost) {}

  /** Reads a held-out file (the file input calls this with the file's contents). */
  importText(text: string, fileName: string): void {
    this.file = { name: fileName, data: importBenchmark(text, fileName) };
    this.host.requestUpdate();
  }

  onFile = async (e: Event): Promise<void> => {
    const f = (e.target as HTMLInputElement).files?.[0];
    if (f) this.importText(await f.text(), f.name);
  };

  clear(): void {
    this.file = null;
    this.host.requestUpdate();
  }

  /** The chosen file as the form shows it (checked against the training benchmark now chosen), or null. */
  state(training: ImportedBenchmark | null): HeldOutState | null {
    const f = this.file;
    if (!f) return null;
    return {
      fileName: f.name,
      items: f.data.items.filter((i) => i.answer !== undefined && i.answer !== null).length,
      skipped: f.data.problems.length,
      problem: heldOutProblem(f.data, f.name, training),
    };
  }

  /**
   * The run's held-out evaluation, scored like `training`; none without a file (`every`, the form's interval,
   * is then not read); a refused file throws its problem.
   */
  heldOut(training: ImportedBenchmark, every: () => number): AgentHeldOut | undefined {
    const f = this.file;
    if (!f) return undefined;
    const problem = heldOutProblem(f.data, f.name, training);
    if (problem) throw new Error(problem);
    return { benchmark: { name: f.data.name, kind: training.kind, items: f.data.items }, every: every() };
  }
}

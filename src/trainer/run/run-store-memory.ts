// A training run kept in memory: for the learning proofs, the end-to-end benchmark and tests, where nothing
// needs to outlive the process.
import type { RolloutRecord } from '../../store/records';
import type { EvalPoint, StepMetrics } from './metrics';
import type { RunStore, StoredRun } from './run-store';

export class MemoryRunStore implements RunStore {
  readonly runs = new Map<string, StoredRun>();
  readonly rolloutRecords: RolloutRecord[] = [];

  async load(runId: string): Promise<StoredRun | null> {
    const r = this.runs.get(runId);
    return r ? structuredClone(r) : null;
  }

  async save(run: StoredRun): Promise<void> {
    // Evaluations are the store's own (appendEval), as in the other stores: a record saved without them keeps them.
    const evals = this.runs.get(run.id)?.evals;
    const { evals: _evals, ...rest } = structuredClone(run);
    this.runs.set(run.id, { ...rest, ...(evals ? { evals } : {}) });
  }

  async appendStep(run: StoredRun, metrics: StepMetrics, rollouts: readonly RolloutRecord[]): Promise<void> {
    this.rolloutRecords.push(...rollouts);
    const evals = this.runs.get(run.id)?.evals;
    const { evals: _evals, ...rest } = structuredClone({ ...run, history: [...run.history, metrics] });
    this.runs.set(run.id, { ...rest, ...(evals ? { evals } : {}) });
  }

  async appendEval(run: StoredRun, point: EvalPoint): Promise<void> {
    const r = this.runs.get(run.id) ?? structuredClone(run);
    r.evals = [...(r.evals ?? []), structuredClone(point)];
    this.runs.set(run.id, r);
  }

  async truncate(runId: string, step: number): Promise<void> {
    const r = this.runs.get(runId);
    if (r) r.history = r.history.filter((m) => m.step <= step);
    if (r?.evals) r.evals = r.evals.filter((p) => p.step <= step);
    for (let i = this.rolloutRecords.length - 1; i >= 0; i--) {
      const x = this.rolloutRecords[i];
      if (x.runId === runId && (x.step ?? 0) > step) this.rolloutRecords.splice(i, 1);
    }
  }
}

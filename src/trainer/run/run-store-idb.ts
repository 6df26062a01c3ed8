// A training run in the page's IndexedDB: the run record in 'trainingRuns' (spec, status, result, and the
// per-step metrics as its `stats`, which the Training tab charts), the planner turns it trained on in
// 'rollouts' (exported as JSONL from there), and each rollout's steps as a conversation, so a user can open
// any trajectory in Chat. Checkpoints are the optimizer's (IdbCheckpointStore, in the planner worker).
import type { AgentConfigInput, StepSink } from '../../agent/loop';
import { createConversation, deleteConversation, idbStepSink, updateConversation } from '../../store/conversations';
import { describeStorageError, openAgentDb } from '../../store/db';
import type { RolloutRecord, TrainingRunRecord } from '../../store/records';
import type { RolloutStorage } from './agent-collector';
import { legacyAgentRun } from './agent-run';
import type { EvalPoint, StepMetrics } from './metrics';
import type { RunResult, RunSpec, RunStore, StoredRun } from './run-store';

/** `config.kind` of the run records this store writes. */
export const RUN_RECORD_KIND = 'training-run';

interface RunConfig {
  kind: typeof RUN_RECORD_KIND;
  spec: RunSpec;
  result: RunResult | null;
  /** Held-out evaluations (few: one every `spec.evaluation.every` steps), kept with the record. */
  evals?: EvalPoint[];
  error?: string;
}

/**
 * Converts a stored record back into a run (agent runs stored before the library included); null when it is
 * not one this store can continue (an older toy run, say).
 */
export function runFromRecord(rec: TrainingRunRecord): StoredRun | null {
  const c = rec.config as Partial<RunConfig>;
  if (c.kind !== RUN_RECORD_KIND || !c.spec) return legacyAgentRun(rec);
  return {
    id: rec.id,
    createdAt: rec.createdAt,
    updatedAt: rec.updatedAt,
    status: rec.status,
    spec: c.spec,
    history: rec.stats as unknown as StepMetrics[],
    result: c.result ?? null,
    ...(c.evals?.length ? { evals: c.evals } : {}),
    ...(c.error ? { error: c.error } : {}),
  };
}

function recordOf(run: StoredRun, history = run.history): TrainingRunRecord {
  const config: RunConfig = { kind: RUN_RECORD_KIND, spec: run.spec, result: run.result, ...(run.evals?.length ? { evals: run.evals } : {}), ...(run.error ? { error: run.error } : {}) };
  return {
    id: run.id,
    createdAt: run.createdAt,
    updatedAt: run.updatedAt,
    status: run.status,
    config: config as unknown as Record<string, unknown>,
    stats: history.map((m) => ({ ...m })) as unknown as TrainingRunRecord['stats'],
  };
}

/** The evaluations a stored record holds: the store's own (appendEval), which a save of the run keeps. */
function storedEvals(rec: TrainingRunRecord | undefined): EvalPoint[] | undefined {
  return (rec?.config as Partial<RunConfig> | undefined)?.evals;
}

/** Runs in this database, newest first, with their specs (older records it cannot read are left out). */
export async function listRuns(dbName?: string): Promise<StoredRun[]> {
  const all = await (await openAgentDb(dbName)).getAll('trainingRuns');
  return all
    .map(runFromRecord)
    .filter((r): r is StoredRun => r !== null)
    .sort((a, b) => b.updatedAt - a.updatedAt);
}

export class IdbRunStore implements RunStore {
  readonly rollouts: RolloutStorage;

  constructor(readonly dbName?: string) {
    this.rollouts = idbRolloutStorage(dbName);
  }

  async load(runId: string): Promise<StoredRun | null> {
    const rec = await (await openAgentDb(this.dbName)).get('trainingRuns', runId);
    return rec ? runFromRecord(rec) : null;
  }

  async save(run: StoredRun): Promise<void> {
    try {
      const tx = (await openAgentDb(this.dbName)).transaction('trainingRuns', 'readwrite');
      const old = await tx.store.get(run.id);
      await tx.store.put(recordOf({ ...run, evals: storedEvals(old) }));
      await tx.done;
    } catch (e) {
      throw describeStorageError(e, `training run '${run.id}'`);
    }
  }

  async appendStep(run: StoredRun, metrics: StepMetrics, rollouts: readonly RolloutRecord[]): Promise<void> {
    const db = await openAgentDb(this.dbName);
    try {
      const tx = db.transaction(['trainingRuns', 'rollouts'], 'readwrite');
      const runs = tx.objectStore('trainingRuns');
      const old = await runs.get(run.id);
      await Promise.all([
        ...rollouts.map((r) => tx.objectStore('rollouts').put(r)),
        runs.put(recordOf({ ...run, updatedAt: Date.now(), evals: storedEvals(old) }, [...run.history, metrics])),
        tx.done,
      ]);
    } catch (e) {
      throw describeStorageError(e, `step ${metrics.step} of training run '${run.id}'`);
    }
  }

  async appendEval(run: StoredRun, point: EvalPoint): Promise<void> {
    const db = await openAgentDb(this.dbName);
    try {
      const tx = db.transaction('trainingRuns', 'readwrite');
      const rec = await tx.store.get(run.id);
      if (!rec) throw new Error(`training run '${run.id}' is not in storage`);
      const config = rec.config as unknown as RunConfig;
      await tx.store.put({ ...rec, config: { ...config, evals: [...(config.evals ?? []), point] } as unknown as Record<string, unknown> });
      await tx.done;
    } catch (e) {
      throw describeStorageError(e, `the evaluation at step ${point.step} of training run '${run.id}'`);
    }
  }

  async truncate(runId: string, step: number): Promise<void> {
    const db = await openAgentDb(this.dbName);
    try {
      const tx = db.transaction(['trainingRuns', 'rollouts'], 'readwrite');
      const runs = tx.objectStore('trainingRuns');
      const rec = await runs.get(runId);
      if (rec) {
        const config = rec.config as unknown as RunConfig;
        const evals = config.evals?.filter((p) => p.step <= step);
        await runs.put({ ...rec, stats: rec.stats.filter((m) => Number(m.step) <= step), ...(evals ? { config: { ...config, evals } as unknown as Record<string, unknown> } : {}) });
      }
      const rollouts = tx.objectStore('rollouts');
      for (let c = await rollouts.index('byRun').openCursor(IDBKeyRange.only(runId)); c; c = await c.continue()) {
        if ((c.value.step ?? 0) > step) await c.delete();
      }
      await tx.done;
    } catch (e) {
      throw describeStorageError(e, `steps after ${step} of training run '${runId}'`);
    }
  }
}

/** Rollouts as conversations: created when a rollout starts (replacing a redone step's), finished with its reward. */
export function idbRolloutStorage(dbName?: string): RolloutStorage {
  return {
    async begin(o: { id: string; title: string; query: string; runId: string; groupId: string; reference: unknown; config: AgentConfigInput }): Promise<StepSink> {
      await deleteConversation(o.id, dbName);
      await createConversation(
        { id: o.id, title: o.title, query: o.query, reference: JSON.stringify(o.reference), settings: { config: o.config, rollouts: { runId: o.runId, groupId: o.groupId }, training: true } },
        dbName,
      );
      return idbStepSink(dbName);
    },
    async end(id, o) {
      await updateConversation(id, { status: o.status, reward: o.reward, ...(o.answer !== null ? { answer: o.answer } : {}) }, dbName);
    },
  };
}

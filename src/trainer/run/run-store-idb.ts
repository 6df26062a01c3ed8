// A training run in the page's IndexedDB: the run record in 'trainingRuns' (spec, status, result,
// evaluations, and the newest per-step metrics as its `stats`), the older per-step metrics in sealed chunks in
// 'trainingRunSteps' (the Training tab charts both, joined), the planner turns it trained on in 'rollouts'
// (exported as JSONL from there), and each rollout's steps as a conversation, so a user can open any
// trajectory in Chat. Checkpoints are the optimizer's (IdbCheckpointStore, in the planner worker).
// A step writes its record with at most HISTORY_CHUNK steps in it, and seals them into a chunk when that many
// gather: rewriting the whole history every step (twice: appendStep and save) made each step of a 5000-step run
// cost 17x what it did at step 100 (bench/run-store-idb.ts). Records from before hold their whole history in
// `stats`; they are read as they are and chunked the next time they are written, in the same transaction.
import type { IDBPTransaction } from 'idb';
import type { AgentConfigInput, StepSink } from '../../agent/loop';
import { createConversation, deleteConversation, idbStepSink, updateConversation } from '../../store/conversations';
import { describeStorageError, openAgentDb } from '../../store/db';
import type { RolloutRecord, TrainingRunChunk, TrainingRunRecord } from '../../store/records';
import type { AgentFlowDB } from '../../store/schema';
import type { RolloutStorage } from './agent-collector';
import { legacyAgentRun } from './agent-run';
import type { EvalPoint, StepMetrics } from './metrics';
import type { RunResult, RunSpec, RunStore, StoredRun } from './run-store';

/** `config.kind` of the run records this store writes. */
export const RUN_RECORD_KIND = 'training-run';

/** Steps the run record holds before they are sealed into a chunk: bounds what a step rewrites. */
export const HISTORY_CHUNK = 64;

/** Where a run's history stands: `steps` steps (the last numbered `lastStep`) sealed in `chunks` chunks. */
interface SealedHistory {
  chunks: number;
  steps: number;
  lastStep: number;
}

const NOTHING_SEALED: SealedHistory = { chunks: 0, steps: 0, lastStep: 0 };

interface RunConfig {
  kind: typeof RUN_RECORD_KIND;
  spec: RunSpec;
  result: RunResult | null;
  /** Held-out evaluations (few: one every `spec.evaluation.every` steps), kept with the record. */
  evals?: EvalPoint[];
  /** The history's sealed chunks; absent in records written before chunks (their `stats` is the history). */
  sealed?: SealedHistory;
  error?: string;
}

type Stats = TrainingRunRecord['stats'];

/** A run's chunks, in order, as one list of per-step records. */
function chunkedStats(chunks: readonly TrainingRunChunk[]): Stats {
  return [...chunks].sort((a, b) => a.chunk - b.chunk).flatMap((c) => c.stats);
}

/**
 * Converts a stored record back into a run (agent runs stored before the library included); null when it is
 * not one this store can continue (an older toy run, say). `chunks`: the run's sealed history chunks.
 */
export function runFromRecord(rec: TrainingRunRecord, chunks: readonly TrainingRunChunk[] = []): StoredRun | null {
  const whole = chunks.length ? { ...rec, stats: [...chunkedStats(chunks), ...rec.stats] } : rec;
  const c = rec.config as Partial<RunConfig>;
  if (c.kind !== RUN_RECORD_KIND || !c.spec) return legacyAgentRun(whole);
  return {
    id: rec.id,
    createdAt: rec.createdAt,
    updatedAt: rec.updatedAt,
    status: rec.status,
    spec: c.spec,
    history: whole.stats as unknown as StepMetrics[],
    result: c.result ?? null,
    ...(c.evals?.length ? { evals: c.evals } : {}),
    ...(c.error ? { error: c.error } : {}),
  };
}

const chunkRange = (runId: string) => IDBKeyRange.bound([runId, 0], [runId, Infinity]);

type HistoryTx = IDBPTransaction<AgentFlowDB, Array<'trainingRuns' | 'trainingRunSteps' | 'rollouts'>, 'readwrite'>;

/**
 * Writes the run's record with `history` as its history: the steps already sealed stay as they are (when they are
 * the start of `history`; else the chunks are rewritten), the rest go in the record, sealed into a new chunk once
 * HISTORY_CHUNK or more gather. Evaluations stay the store's own (appendEval). One transaction, the caller's.
 */
async function putRun(tx: HistoryTx, run: StoredRun, history: readonly StepMetrics[]): Promise<void> {
  const runs = tx.objectStore('trainingRuns');
  const steps = tx.objectStore('trainingRunSteps');
  const old = await runs.get(run.id);
  const oldConfig = old?.config as Partial<RunConfig> | undefined;
  let sealed = oldConfig?.kind === RUN_RECORD_KIND ? (oldConfig.sealed ?? NOTHING_SEALED) : NOTHING_SEALED;
  // Chunks that are not the start of this history (a shorter one, or another run's under this id) go.
  if (sealed.steps > history.length || (sealed.steps > 0 && history[sealed.steps - 1].step !== sealed.lastStep)) {
    await steps.delete(chunkRange(run.id));
    sealed = NOTHING_SEALED;
  }
  let tail = history.slice(sealed.steps);
  if (tail.length >= HISTORY_CHUNK) {
    await steps.put({ runId: run.id, chunk: sealed.chunks, stats: tail.map((m) => ({ ...m })) as unknown as Stats });
    sealed = { chunks: sealed.chunks + 1, steps: history.length, lastStep: history[history.length - 1].step };
    tail = [];
  }
  const evals = oldConfig?.evals;
  const config: RunConfig = { kind: RUN_RECORD_KIND, spec: run.spec, result: run.result, ...(evals?.length ? { evals } : {}), sealed, ...(run.error ? { error: run.error } : {}) };
  await runs.put({
    id: run.id,
    createdAt: run.createdAt,
    updatedAt: run.updatedAt,
    status: run.status,
    config: config as unknown as Record<string, unknown>,
    stats: tail.map((m) => ({ ...m })) as unknown as Stats,
  });
}

/** Runs in this database, newest first, with their specs (older records it cannot read are left out). */
export async function listRuns(dbName?: string): Promise<StoredRun[]> {
  const db = await openAgentDb(dbName);
  const [all, chunks] = await Promise.all([db.getAll('trainingRuns'), db.getAll('trainingRunSteps')]);
  const byRun = new Map<string, TrainingRunChunk[]>();
  for (const c of chunks) byRun.set(c.runId, [...(byRun.get(c.runId) ?? []), c]);
  return all
    .map((rec) => runFromRecord(rec, byRun.get(rec.id)))
    .filter((r): r is StoredRun => r !== null)
    .sort((a, b) => b.updatedAt - a.updatedAt);
}

export class IdbRunStore implements RunStore {
  readonly rollouts: RolloutStorage;

  constructor(readonly dbName?: string) {
    this.rollouts = idbRolloutStorage(dbName);
  }

  async load(runId: string): Promise<StoredRun | null> {
    const tx = (await openAgentDb(this.dbName)).transaction(['trainingRuns', 'trainingRunSteps'], 'readonly');
    const [rec, chunks] = await Promise.all([tx.objectStore('trainingRuns').get(runId), tx.objectStore('trainingRunSteps').getAll(chunkRange(runId))]);
    return rec ? runFromRecord(rec, chunks) : null;
  }

  async save(run: StoredRun): Promise<void> {
    try {
      const tx = (await openAgentDb(this.dbName)).transaction(['trainingRuns', 'trainingRunSteps', 'rollouts'], 'readwrite');
      await putRun(tx, run, run.history);
      await tx.done;
    } catch (e) {
      throw describeStorageError(e, `training run '${run.id}'`);
    }
  }

  async appendStep(run: StoredRun, metrics: StepMetrics, rollouts: readonly RolloutRecord[]): Promise<void> {
    const db = await openAgentDb(this.dbName);
    try {
      const tx = db.transaction(['trainingRuns', 'trainingRunSteps', 'rollouts'], 'readwrite');
      await Promise.all([...rollouts.map((r) => tx.objectStore('rollouts').put(r)), putRun(tx, { ...run, updatedAt: Date.now() }, [...run.history, metrics]), tx.done]);
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
      const tx = db.transaction(['trainingRuns', 'trainingRunSteps', 'rollouts'], 'readwrite');
      const runs = tx.objectStore('trainingRuns');
      const rec = await runs.get(runId);
      if (rec) {
        const chunks = await tx.objectStore('trainingRunSteps').getAll(chunkRange(runId));
        const config = rec.config as unknown as RunConfig;
        const evals = config.evals?.filter((p) => p.step <= step);
        const stats = [...chunkedStats(chunks), ...rec.stats].filter((m) => Number(m.step) <= step);
        const kept = { ...rec, stats, ...(evals ? { config: { ...config, evals } as unknown as Record<string, unknown> } : {}) };
        // The kept evaluations first: putRun keeps what the record holds. Older kinds of record stay as they were.
        await runs.put(kept);
        const run = config.kind === RUN_RECORD_KIND ? runFromRecord(kept) : null;
        if (run) await putRun(tx, run, run.history);
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

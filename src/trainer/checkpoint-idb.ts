// Checkpoints in IndexedDB: the adapter goes to the `adapters` store (PEFT names, so the Models panel can
// export it), moments and counters to `checkpoints`. Both are written in one transaction so a reload
// never finds a checkpoint without its adapter. Pruning deletes a checkpoint with its adapter, unless the
// user saved that adapter under a name of their own (AdapterRecord.keep): then only the moments go.
import type { IDBPDatabase } from 'idb';
import { exportAdapter, parseAdapter } from '../io/peft';
import { writeSafetensors } from '../io/safetensors';
import { describeStorageError, openAgentDb } from '../store/db';
import type { AdapterRecord, CheckpointRecord } from '../store/records';
import type { AgentFlowDB } from '../store/schema';
import type { Moments } from './backend';
import { CheckpointError, checkPrune, noIntactCheckpoint, type CheckpointStore, type PruneOptions, type TrainingCheckpoint } from './checkpoint-store';
import { resolveGrpoConfig, type GrpoConfig } from './grpo-config';
import { adapterTensors } from './lora-init';
import type { TrainStorage } from './training-host';

/** CheckpointRecord plus the fields the trainer needs to resume exactly (IndexedDB stores whole objects). */
type TrainerCheckpointRecord = CheckpointRecord & { optimizerSteps: number; config: GrpoConfig };

export class IdbCheckpointStore implements CheckpointStore {
  constructor(private readonly db: IDBPDatabase<AgentFlowDB>) {}

  static adapterId(runId: string, step: number): string {
    return `${runId}@step-${step}`;
  }

  async save(c: TrainingCheckpoint): Promise<string> {
    const adapterId = IdbCheckpointStore.adapterId(c.runId, c.step);
    const tensors: AdapterRecord['tensors'] = {};
    for (const t of adapterTensors(c.adapter)) tensors[t.name] = { shape: t.shape, data: Float32Array.from(t.data) };
    const adapter: AdapterRecord = {
      id: adapterId,
      name: `${c.runId} step ${c.step}`,
      createdAt: c.createdAt,
      baseModel: c.baseModel ?? c.adapter.config.baseModelNameOrPath ?? '',
      // PEFT adapter_config.json fields (exportAdapter without tensors, so target_modules comes from the config).
      config: { ...exportAdapter({ config: c.adapter.config, pairs: new Map() }).config, target_modules: c.adapter.config.targetModules },
      tensors,
      trainingRunId: c.runId,
    };
    const moments: CheckpointRecord['moments'] = {};
    for (const [name, mv] of c.moments) moments[name] = { m: Float32Array.from(mv.m), v: Float32Array.from(mv.v) };
    const record: TrainerCheckpointRecord = {
      id: `${c.runId}#${c.step}`,
      runId: c.runId,
      step: c.step,
      createdAt: c.createdAt,
      adapterId,
      moments,
      rngState: c.rngState,
      optimizerSteps: c.optimizerSteps,
      config: c.config,
    };
    try {
      const tx = this.db.transaction(['adapters', 'checkpoints'], 'readwrite');
      await Promise.all([tx.objectStore('adapters').put(adapter), tx.objectStore('checkpoints').put(record), tx.done]);
    } catch (e) {
      throw describeStorageError(e, `the training checkpoint of step ${c.step}`);
    }
    return adapterId;
  }

  async latest(runId: string): Promise<TrainingCheckpoint | null> {
    const all = ((await this.db.getAllFromIndex('checkpoints', 'byRun', runId)) as TrainerCheckpointRecord[]).sort((a, b) => b.step - a.step);
    if (!all.length) return null;
    const skipped: string[] = [];
    for (const rec of all) {
      try {
        return { ...(await this.read(rec)), skipped };
      } catch (e) {
        skipped.push(`step ${rec.step}: ${e instanceof Error ? e.message : String(e)}`);
      }
    }
    throw noIntactCheckpoint(runId, skipped);
  }

  private async read(rec: TrainerCheckpointRecord): Promise<TrainingCheckpoint> {
    const ad = await this.db.get('adapters', rec.adapterId);
    if (!ad) throw new CheckpointError(`checkpoint '${rec.id}' refers to adapter '${rec.adapterId}', which is missing from IndexedDB`);
    const bytes = writeSafetensors(Object.entries(ad.tensors).map(([name, t]) => ({ name, shape: t.shape, data: t.data })));
    const adapter = parseAdapter(ad.config, bytes, { configFile: `adapter '${ad.id}' config`, weightsFile: `adapter '${ad.id}' tensors` });
    const moments: Moments = new Map(Object.entries(rec.moments).map(([k, v]) => [k, { m: v.m, v: v.v }]));
    return {
      runId: rec.runId,
      step: rec.step,
      optimizerSteps: rec.optimizerSteps ?? rec.step,
      rngState: rec.rngState,
      config: resolveGrpoConfig(rec.config ?? {}),
      adapter,
      moments,
      createdAt: rec.createdAt,
      baseModel: ad.baseModel,
      adapterRef: ad.id,
    };
  }

  async prune(runId: string, o: PruneOptions): Promise<void> {
    checkPrune(o);
    const all = ((await this.db.getAllFromIndex('checkpoints', 'byRun', runId)) as TrainerCheckpointRecord[]).sort((a, b) => b.step - a.step);
    const protect = new Set(o.protect);
    const drop = all.filter((r, i) => i >= o.keep && !protect.has(r.step));
    if (!drop.length) return;
    try {
      const tx = this.db.transaction(['adapters', 'checkpoints'], 'readwrite');
      const adapters = tx.objectStore('adapters');
      const checkpoints = tx.objectStore('checkpoints');
      await Promise.all([
        ...drop.map(async (r) => {
          await checkpoints.delete(r.id);
          const ad = await adapters.get(r.adapterId);
          if (ad && !ad.keep) await adapters.delete(r.adapterId);
        }),
        tx.done,
      ]);
    } catch (e) {
      throw describeStorageError(e, `pruning the checkpoints of run '${runId}'`);
    }
  }
}

/** A training session's storage in IndexedDB: checkpoints here, stored adapters from the 'adapters' store. */
export async function idbTrainStorage(dbName?: string): Promise<TrainStorage> {
  const db = await openAgentDb(dbName);
  return {
    checkpoints: new IdbCheckpointStore(db),
    async adapter(id, base) {
      const rec = await db.get('adapters', id);
      if (!rec) throw new CheckpointError(`adapter '${id}' is not in this browser's storage`);
      const bytes = writeSafetensors(Object.entries(rec.tensors).map(([name, t]) => ({ name, shape: t.shape, data: t.data })));
      return parseAdapter(rec.config, bytes, { base, configFile: `adapter “${rec.name}” config`, weightsFile: `adapter “${rec.name}” tensors` });
    },
  };
}

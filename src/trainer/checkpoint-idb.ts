// Checkpoints in IndexedDB: the adapter goes to the `adapters` store (PEFT names, so the Models panel can
// export it), moments and counters to `checkpoints`. Both are written in one transaction so a reload
// never finds a checkpoint without its adapter.
import type { IDBPDatabase } from 'idb';
import { exportAdapter, parseAdapter } from '../engine/io/peft';
import { writeSafetensors } from '../engine/io/safetensors';
import { describeStorageError } from '../store/db';
import type { AdapterRecord, CheckpointRecord } from '../store/records';
import type { AgentFlowDB } from '../store/schema';
import type { Moments } from './backend';
import { CheckpointError, type CheckpointStore, type TrainingCheckpoint } from './checkpoint';
import { resolveGrpoConfig, type GrpoConfig } from './config';
import { adapterTensors } from './lora';

/** CheckpointRecord plus the fields the trainer needs to resume exactly (IndexedDB stores whole objects). */
type TrainerCheckpointRecord = CheckpointRecord & { optimizerSteps: number; config: GrpoConfig };

export class IdbCheckpointStore implements CheckpointStore {
  constructor(private readonly db: IDBPDatabase<AgentFlowDB>) {}

  static adapterId(runId: string, step: number): string {
    return `${runId}@step-${step}`;
  }

  async save(c: TrainingCheckpoint): Promise<void> {
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
  }

  async latest(runId: string): Promise<TrainingCheckpoint | null> {
    const all = (await this.db.getAllFromIndex('checkpoints', 'byRun', runId)) as TrainerCheckpointRecord[];
    if (!all.length) return null;
    const rec = all.reduce((a, b) => (b.step > a.step ? b : a));
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
    };
  }
}

// Checkpoints kept in memory: for benchmarks and tests that need a TrainStorage but nothing on disk.
import { checkPrune, type CheckpointStore, type PruneOptions, type TrainingCheckpoint } from './checkpoint-store';
import { cloneAdapter } from './lora-init';
import type { TrainStorage } from './training-host';

export class MemoryCheckpointStore implements CheckpointStore {
  readonly saved: TrainingCheckpoint[] = [];

  async save(c: TrainingCheckpoint): Promise<string> {
    const ref = `memory:${c.runId}@${c.step}`;
    const copy = { ...c, adapter: cloneAdapter(c.adapter), moments: new Map([...c.moments].map(([k, v]) => [k, { m: v.m.slice(), v: v.v.slice() }])), adapterRef: ref };
    const i = this.saved.findIndex((s) => s.runId === c.runId && s.step === c.step);
    if (i >= 0) this.saved[i] = copy;
    else this.saved.push(copy);
    return ref;
  }

  async latest(runId: string): Promise<TrainingCheckpoint | null> {
    const mine = this.saved.filter((s) => s.runId === runId).sort((a, b) => b.step - a.step);
    return mine.length ? { ...mine[0], skipped: [] } : null;
  }

  async prune(runId: string, o: PruneOptions): Promise<void> {
    checkPrune(o);
    const protect = new Set(o.protect);
    const drop = new Set(this.saved.filter((s) => s.runId === runId).sort((a, b) => b.step - a.step).filter((s, i) => i >= o.keep && !protect.has(s.step)));
    for (let i = this.saved.length - 1; i >= 0; i--) if (drop.has(this.saved[i])) this.saved.splice(i, 1);
  }
}

/** A TrainStorage with checkpoints in memory and no stored adapters. */
export function memoryTrainStorage(): TrainStorage {
  return {
    checkpoints: new MemoryCheckpointStore(),
    async adapter(id) {
      throw new Error(`adapter '${id}': this training session keeps nothing in storage`);
    },
  };
}

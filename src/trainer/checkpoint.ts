// What a training checkpoint holds and the interface its stores implement (IndexedDB in the browser,
// a directory of PEFT files on disk in Node). Resuming from one reproduces the next step exactly: the
// adapter, AdamW moments, the optimizer step (bias correction) and the RNG state are all restored.
import type { LoraAdapter } from '../engine/io/peft';
import type { Moments } from './backend';
import type { GrpoConfig } from './config';

export interface TrainingCheckpoint {
  runId: string;
  /** Training steps completed. */
  step: number;
  /** AdamW updates completed (bias correction continues from it). */
  optimizerSteps: number;
  /** The trainer RNG's state after `step`. */
  rngState: number;
  config: GrpoConfig;
  adapter: LoraAdapter;
  moments: Moments;
  createdAt: number;
  /** Identifies the base model the adapter belongs to (e.g. its name); informational. */
  baseModel?: string;
}

export interface CheckpointStore {
  save(c: TrainingCheckpoint): Promise<void>;
  /** The checkpoint with the highest step of `runId`, or null. */
  latest(runId: string): Promise<TrainingCheckpoint | null>;
}

export class CheckpointError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'CheckpointError';
  }
}

// What a training checkpoint holds and the interface its stores implement (IndexedDB in the browser,
// a directory of PEFT files on disk in Node). Resuming from one reproduces the next step exactly: the
// adapter, AdamW moments, the optimizer step (bias correction) and the RNG state are all restored.
import { AgentFlowError, type ErrorCategory } from '../errors';
import type { LoraAdapter } from '../io/peft';
import type { Moments } from './backend';
import type { GrpoConfig } from './grpo-config';

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
  /** Set by a store when it reads the checkpoint: where its adapter is (IndexedDB adapter id, or a directory). */
  adapterRef?: string;
  /** Set by latest(): newer checkpoints of the run that could not be read, each with why. */
  skipped?: string[];
}

export interface PruneOptions {
  /** How many of the run's newest checkpoints to keep (at least 1). */
  keep: number;
  /** Steps kept whatever their age (the run's best one). */
  protect: number[];
}

export interface CheckpointStore {
  /** Saves `c` whole or not at all; returns where its adapter is stored (see adapterRef). */
  save(c: TrainingCheckpoint): Promise<string>;
  /**
   * The newest checkpoint of `runId` that reads back intact, or null when it has none. Newer ones that are
   * damaged or incomplete (a deleted adapter, a torn file) are skipped and named in its `skipped`; when
   * checkpoints exist but none is intact, it throws naming each one's problem.
   */
  latest(runId: string): Promise<TrainingCheckpoint | null>;
  /** Deletes the run's checkpoints beyond the newest `keep`, except protected steps. */
  prune(runId: string, o: PruneOptions): Promise<void>;
}

/** Checks a prune request; `where` names the setting in the error. */
export function checkPrune(o: PruneOptions, where = 'checkpoints to keep'): void {
  if (!Number.isInteger(o.keep) || o.keep < 1) throw new CheckpointError(`${where} must be a positive integer, got ${o.keep}`);
}

/** The message latest() throws when a run has checkpoints but none of them reads back. */
export function noIntactCheckpoint(runId: string, problems: string[]): CheckpointError {
  return new CheckpointError(`run '${runId}' has ${problems.length} checkpoint(s) and none can be read: ${problems.join('; ')}`);
}

export class CheckpointError extends AgentFlowError {
  override readonly category: ErrorCategory = 'bad-checkpoint';
  constructor(message: string) {
    super(message);
    this.name = 'CheckpointError';
  }
}

// Where a step's trajectories come from: the AgentFlow loop on real engines (agent-collector.ts) or the
// toy task's tiny planner (toy-collector.ts). A collector plays the groups the run planned and returns them
// scored; it never computes advantages or touches the optimizer.
import type { GroupPlan } from './schedule';
import type { CollectedGroup } from './rollout-samples';

/** What a collector reports while it plays (the UI's and the CLI's progress lines). */
export interface RolloutProgress {
  step: number;
  /** Groups of the step finished, and in all. */
  groupsDone: number;
  groups: number;
  /** Rollouts finished in the current group, and its size. */
  rolloutsDone: number;
  groupSize: number;
}

export interface CollectContext {
  signal?: AbortSignal;
  onProgress?: (p: RolloutProgress) => void;
}

export interface RolloutCollector {
  /** Number of queries the run can draw from. */
  readonly items: number;
  /** Each item's stratum (e.g. its question kind) when a step should draw across strata in turn. */
  readonly strata?: readonly number[];
  /** How often each stratum comes up in the schedule's cycle (`strataWeights[s]`, default 1: strataCycle). */
  readonly strataWeights?: readonly number[];
  /**
   * Plays every group of one step and returns them in plan order, each trajectory scored. When the signal
   * aborts, it returns what it has as soon as the running rollouts end; the run then discards the step.
   */
  collect(plans: readonly GroupPlan[], ctx: CollectContext): Promise<CollectedGroup[]>;
}

// An agent run's rollout budgets and the agent settings of one rollout: what the run, its collector and
// its held-out evaluation all read (a file of its own so evaluation need not import the run that uses it).
import type { AgentConfigInput } from '../../agent/loop';
import type { RewardKind } from '../../agent/rewards';
import { checkConcurrency } from '../../agent/rollout-pool';
import type { TrainingItem } from './agent-collector';

/** Rollout budgets: small ones keep a step short (and fit small models' contexts). */
export interface AgentBudget {
  maxTurns: number;
  /** New tokens per planner call. */
  plannerTokens: number;
  /** New tokens per call of the other modules (analysis, executor, verifier, generator). */
  moduleTokens: number;
  queriesPerStep: number;
  /** Largest forward+backward in tokens; must hold the longest planner turn (prompt + response). */
  microBatchTokens: number;
  /**
   * How many rollouts of a group run at once, so their planner calls are decoded together: 1 to
   * MAX_ROLLOUT_CONCURRENCY, default min(groupSize, MAX_DEFAULT_ROLLOUT_CONCURRENCY). Each rollout's time
   * budget is multiplied by the number that run at once (concurrentRolloutConfig in src/agent/rollout-pool.ts).
   */
  rolloutConcurrency?: number;
  /** Decode module replies under their JSON Schemas (AgentConfig.constrainReplies); absent: on. */
  constrainReplies?: boolean;
}

export const DEFAULT_AGENT_BUDGET: Readonly<AgentBudget> = Object.freeze({ maxTurns: 3, plannerTokens: 256, moduleTokens: 256, queriesPerStep: 2, microBatchTokens: 2048 });

/**
 * Rollouts of a group run at once unless the budget says otherwise: a planner with 4-bit (MLC) weights
 * decodes up to 8 sequences in one step (Qwen2Runtime.maxDecodeRows), so a default group of 8 decodes
 * together; with f16 weights it decodes 4 per step and its batcher runs the 8 calls 4 at a time.
 */
export const MAX_DEFAULT_ROLLOUT_CONCURRENCY = 8;

/**
 * Most rollouts of a group allowed to run at once. More would not decode together (the planner decodes at
 * most 8 sequences per step) and would only wait, holding their agents' memory, for the planner and for the
 * web-llm modules, which serve one call at a time.
 */
export const MAX_ROLLOUT_CONCURRENCY = 8;

/** The budget's rollout concurrency, defaulted from the group size and checked (1 .. MAX_ROLLOUT_CONCURRENCY). */
export function rolloutConcurrency(budget: Pick<AgentBudget, 'rolloutConcurrency'>, groupSize: number): number {
  const setting = 'training: rolloutConcurrency';
  const value = checkConcurrency(budget.rolloutConcurrency ?? Math.min(groupSize, MAX_DEFAULT_ROLLOUT_CONCURRENCY), setting);
  if (value > MAX_ROLLOUT_CONCURRENCY) throw new Error(`${setting} must be at most ${MAX_ROLLOUT_CONCURRENCY}, got ${value}`);
  return value;
}

/** The agent settings of a training rollout: the planner samples at `temperature` with this rollout's seed. */
export function rolloutAgentConfig(budget: AgentBudget, temperature: number, seed: number): AgentConfigInput {
  const other = { maxNewTokens: budget.moduleTokens };
  return {
    maxTurns: budget.maxTurns,
    answerTags: true,
    generation: { analysis: other, executor: other, verifier: other, generator: other, planner: { maxNewTokens: budget.plannerTokens, temperature, seed } },
    ...(budget.constrainReplies === false ? { constrainReplies: false } : {}),
  };
}

/** What an agent run's spec keeps to rebuild its collector. */
export interface AgentRunData {
  benchmark: { name: string; kind: RewardKind; items: TrainingItem[] };
  budget: AgentBudget;
  /** The planner engine's id the run trains (a resumed run needs the same model). */
  planner: string;
  /** Ask the base model when the rule says wrong (the `judge` reward). */
  judge: boolean;
}

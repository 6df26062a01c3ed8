// What a step's rollouts become: each trajectory's verifiable reward is broadcast to every planner turn it
// made, advantages are normalised within each query's group (the rule grpoStep itself applies, so the
// export shows exactly what was trained on), and every planner turn becomes a turn sample for the update
// and a rollout record for storage and the TRL/verl JSONL export.
import { rolloutRecord, type PlannerTurn } from '../../agent/rollouts';
import type { RolloutRecord } from '../../store/records';
import { groupAdvantages, type AdvantageBaseline } from '../../agent/advantages';
import type { TurnSample } from '../../model/samples';

/** One rollout: its planner turns and the 0/1 reward of its final answer. */
export interface Trajectory {
  rolloutId: string;
  /** Index within its group (0 .. G-1). */
  rollout: number;
  reward: number;
  turns: PlannerTurn[];
  /** How the rollout ended; an interrupted one never reaches a step's update. */
  status: 'done' | 'error' | 'interrupted';
  answer: string | null;
  /** Planner calls that cannot be trained on, each with why (e.g. an engine that exposes no token ids). */
  skipped: string[];
}

export interface CollectedGroup {
  groupId: string;
  /** The query's index in the run's items. */
  item: number;
  trajectories: Trajectory[];
}

/** Why a planner turn cannot be trained on, or null when it can. */
export function untrainable(t: PlannerTurn): string | null {
  if (!t.promptTokens.length || !t.responseTokens.length) return 'no token ids (sampled by an engine that does not expose them)';
  if (t.logprobs.length !== t.responseTokens.length) return `${t.logprobs.length} logprobs for ${t.responseTokens.length} tokens`;
  return null;
}

export interface StepBatch {
  /** The update's input: one per trainable planner turn, reward broadcast, advantage set. */
  samples: TurnSample[];
  /** Every trainable planner turn as stored and exported, with its reward and advantage. */
  records: RolloutRecord[];
  /** Untrainable turns, each "rollout turn: why". */
  skipped: string[];
  /** Rewards of the step's trajectories (one per rollout, in group then rollout order). */
  rewards: number[];
}

/**
 * The step's batch from its groups, in group, rollout and turn order. Advantages: A = (R - mean) / (std +
 * eps) over each group's turns (or the whole step's, advantageBaseline 'batch'), or R - mean without advantageStd
 * (groupAdvantages, as grpoStep computes them).
 */
export function stepBatch(o: { runId: string; step: number; groups: readonly CollectedGroup[]; advantageEps: number; advantageStd?: boolean; advantageBaseline?: AdvantageBaseline; createdAt?: number }): StepBatch {
  const samples: TurnSample[] = [];
  const kept: Array<{ turn: PlannerTurn; trajectory: Trajectory; groupId: string }> = [];
  const skipped: string[] = [];
  const rewards: number[] = [];
  for (const g of o.groups) {
    for (const tr of g.trajectories) {
      if (!Number.isFinite(tr.reward)) throw new Error(`rollout '${tr.rolloutId}' has reward ${tr.reward}; a reward must be a finite number`);
      rewards.push(tr.reward);
      skipped.push(...tr.skipped.map((why) => `${tr.rolloutId}: ${why}`));
      for (const t of tr.turns) {
        const why = untrainable(t);
        if (why) {
          skipped.push(`${tr.rolloutId} turn ${t.turn}: ${why}`);
          continue;
        }
        kept.push({ turn: t, trajectory: tr, groupId: g.groupId });
        samples.push({ groupId: g.groupId, rolloutId: tr.rolloutId, turn: t.turn, promptTokens: [...t.promptTokens], responseTokens: [...t.responseTokens], reward: tr.reward, oldLogprobs: [...t.logprobs], ...(t.forced ? { forced: [...t.forced] } : {}), ...(t.choices ? { choices: t.choices.map((c) => (c ? c.map((g) => [...g]) : null)) } : {}) });
      }
    }
  }
  const { advantages } = groupAdvantages(samples, o.advantageEps, o.advantageStd, o.advantageBaseline);
  samples.forEach((s, i) => (s.advantage = advantages[i]));
  const createdAt = o.createdAt ?? Date.now();
  const records = kept.map(({ turn: t, trajectory: tr, groupId }, i): RolloutRecord => ({
    ...rolloutRecord(t, { runId: o.runId, groupId, conversationId: tr.rolloutId }, createdAt),
    step: o.step,
    rollout: tr.rollout,
    reward: tr.reward,
    advantage: advantages[i],
  }));
  return { samples, records, skipped, rewards };
}

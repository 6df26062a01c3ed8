// Group-relative advantages of Flow-GRPO. A rollout's final reward is broadcast to every one of its
// planner turns; each query's group of turns is normalised on its own, A = (r - mean) / (std + eps),
// with the unbiased standard deviation (torch.std, as the reference fixture and verl compute it), or
// only centred, A = r - mean (Dr. GRPO), when a run turns the division off.
// A group whose rewards are all equal (or that has a single turn) carries no learning signal: its
// advantages are exactly 0 and it is reported as a "no gradient" group.
// With the batch baseline (GrpoConfig.advantageBaseline 'batch', REINFORCE++'s global normalisation) the mean
// and std are the whole step's instead: an all-solved group then keeps a positive advantage and an all-failed
// one a negative advantage, and a group is "no gradient" only when its advantages are all 0 (every reward of
// the step equal).
// With 'group-failed-batch' each group is its own baseline as in Flow-GRPO, except a group that all failed
// (every reward equal and below the step's mean), which is measured from the step's mean and std: its turns get
// a negative advantage, so what the planner did on a query it never solves is pushed down instead of left as it
// is (negative-sample reinforcement, Zhu et al. 2025); an all-solved group still gives nothing.

export interface RewardedTurn {
  /** The query's group: all rollouts of one query share it. */
  groupId: string;
  /** The rollout's final reward, given to each of its turns. */
  reward: number;
}

export interface GroupStats {
  groupId: string;
  /** Turns in the group (the normalisation population). */
  turns: number;
  rewardMean: number;
  /** Unbiased standard deviation over the group's turns (0 for one turn). */
  rewardStd: number;
  /** All rewards equal, or a single turn: every advantage of this group is 0. */
  noGradient: boolean;
}

export interface AdvantageResult {
  /** One per input turn, in input order. */
  advantages: number[];
  groups: GroupStats[];
  /** Groups with noGradient, i.e. contributing nothing but the KL term. */
  noGradientGroups: number;
}

/** Each group's statistics and its turns' indices, in first-seen order; every reward must be finite. */
function rewardGroups(turns: readonly RewardedTurn[]): Array<{ stats: GroupStats; idx: number[] }> {
  const byGroup = new Map<string, number[]>();
  turns.forEach((t, i) => {
    if (typeof t.reward !== 'number' || !Number.isFinite(t.reward)) {
      throw new Error(`groupAdvantages: turn ${i} (group '${t.groupId}') has reward ${String(t.reward)}; every turn needs its rollout's final reward`);
    }
    const list = byGroup.get(t.groupId);
    if (list) list.push(i);
    else byGroup.set(t.groupId, [i]);
  });
  return [...byGroup].map(([groupId, idx]) => {
    const n = idx.length;
    const mean = idx.reduce((s, i) => s + turns[i].reward, 0) / n;
    const allEqual = idx.every((i) => turns[i].reward === turns[idx[0]].reward);
    const std = n > 1 ? Math.sqrt(idx.reduce((s, i) => s + (turns[i].reward - mean) ** 2, 0) / (n - 1)) : 0;
    return { stats: { groupId, turns: n, rewardMean: mean, rewardStd: std, noGradient: n < 2 || allEqual }, idx };
  });
}

/** A group gives no gradient exactly when every one of its turns' advantages is 0. */
function markZeroGroups(grouped: ReadonlyArray<{ stats: GroupStats; idx: number[] }>, advantages: readonly number[]): void {
  for (const g of grouped) g.stats.noGradient = g.idx.every((i) => advantages[i] === 0);
}

/**
 * The groups' statistics alone: for a step whose samples carry the advantages the run computed when it
 * built the batch (src/trainer/run/rollout-samples.ts), so they are not computed twice.
 */
export function groupStats(turns: readonly RewardedTurn[], advantages?: readonly number[]): Omit<AdvantageResult, 'advantages'> {
  const grouped = rewardGroups(turns);
  // Carried advantages decide which groups give no gradient: under the batch baseline an all-equal group
  // still has a nonzero advantage.
  if (advantages) markZeroGroups(grouped, advantages);
  const groups = grouped.map((g) => g.stats);
  return { groups, noGradientGroups: groups.filter((g) => g.noGradient).length };
}

/**
 * The groups that all failed: every reward equal (or a single turn) and below the step's mean over turns — no
 * rollout solved the query. The 'group-failed-batch' baseline measures them from the step's mean; the entropy
 * bonus's 'all-failed' groups (GrpoConfig.entropyGroups) are these.
 */
export function allFailedGroups(turns: readonly RewardedTurn[]): Set<string> {
  const grouped = rewardGroups(turns);
  const mean = turns.reduce((s, t) => s + t.reward, 0) / turns.length;
  return new Set(grouped.filter((g) => g.stats.noGradient && g.stats.rewardMean < mean).map((g) => g.stats.groupId));
}

/**
 * Whose mean (and std) an advantage is measured from: the query's group, the whole step's turns, or the
 * group's unless it all failed, then the step's.
 */
export type AdvantageBaseline = 'group' | 'batch' | 'group-failed-batch';

/**
 * `std` false: A = r - mean, unscaled (Dr. GRPO; GrpoConfig.advantageStd says why). `baseline` 'batch':
 * mean and std over every turn of the step; 'group-failed-batch': those for all-failed groups only
 * (GrpoConfig.advantageBaseline says why).
 */
export function groupAdvantages(turns: readonly RewardedTurn[], eps = 1e-6, std = true, baseline: AdvantageBaseline = 'group'): AdvantageResult {
  const advantages = new Array<number>(turns.length).fill(0);
  const grouped = rewardGroups(turns);
  // The step's baseline, where its rewards differ at all (the 'batch' and 'group-failed-batch' baselines).
  const step = (): { mean: number; scale: number } | null => {
    const [whole] = rewardGroups(turns.map((t) => ({ groupId: '', reward: t.reward })));
    return whole && !whole.stats.noGradient ? { mean: whole.stats.rewardMean, scale: std ? whole.stats.rewardStd + eps : 1 } : null;
  };
  if (baseline === 'batch') {
    const b = step();
    if (b) turns.forEach((t, i) => (advantages[i] = (t.reward - b.mean) / b.scale));
    markZeroGroups(grouped, advantages);
  } else {
    for (const { stats, idx } of grouped) {
      const scale = std ? stats.rewardStd + eps : 1;
      if (!stats.noGradient) for (const i of idx) advantages[i] = (turns[i].reward - stats.rewardMean) / scale;
    }
    const b = baseline === 'group-failed-batch' ? step() : null;
    if (b) {
      const failed = allFailedGroups(turns);
      for (const { stats, idx } of grouped) {
        if (failed.has(stats.groupId)) for (const i of idx) advantages[i] = (turns[i].reward - b.mean) / b.scale;
      }
      markZeroGroups(grouped, advantages);
    }
  }
  const groups = grouped.map((g) => g.stats);
  return { advantages, groups, noGradientGroups: groups.filter((g) => g.noGradient).length };
}

// Which queries a step plays, with which seeds, under which ids: a pure function of the run's seed and the
// step number, so a step redone after a crash or a reload plays exactly the same groups, whatever ran
// before it. One scheme for every front end (Training tab, <agentflow-chat>, `cli train`) and every task.
import { Rng } from '../../util/rng';

/** One group of a step: G rollouts of one query. */
export interface GroupPlan {
  step: number;
  /** Index of the query in the run's item list. */
  item: number;
  groupId: string;
  /** Rollout g's id and its sampling seed, g = 0 .. G-1. */
  rollouts: Array<{ id: string; seed: number }>;
}

/** Mixes integers into a 31-bit seed (FNV-1a over their 32-bit words), so nearby inputs give unrelated seeds. */
export function mixSeed(...parts: number[]): number {
  let h = 0x811c9dc5;
  for (const p of parts) {
    let x = p >>> 0;
    for (let i = 0; i < 4; i++) {
      h ^= x & 0xff;
      h = Math.imul(h, 0x01000193) >>> 0;
      x >>>= 8;
    }
  }
  return h & 0x7fffffff;
}

export function groupId(runId: string, step: number, item: number): string {
  return `${runId}:step${step}:item${item}`;
}

export function rolloutId(group: string, rollout: number): string {
  return `${group}:r${rollout}`;
}

/**
 * The queries of `step` (1-based), distinct: the run walks through a seeded permutation of its items, a new
 * one each epoch (pass over the items), `perStep` at a time. A step that straddles two epochs takes the end
 * of one and then the next one's items that it does not already have.
 */
export function stepItems(seed: number, step: number, perStep: number, items: number, strata?: readonly number[], weights?: readonly number[]): number[] {
  if (!Number.isInteger(step) || step < 1) throw new Error(`training schedule: step must be a positive integer, got ${step}`);
  if (!Number.isInteger(items) || items < 1) throw new Error('training schedule: the run has no items');
  if (!Number.isInteger(perStep) || perStep < 1 || perStep > items) throw new Error(`training schedule: queries per step must be 1 to ${items} (the items), got ${perStep}`);
  if (strata) return stratifiedItems(seed, step, perStep, items, strata, weights);
  if (weights) throw new Error('training schedule: stratum weights without strata');
  const out: number[] = [];
  for (let at = (step - 1) * perStep; out.length < perStep; ) at = takeNew(out, at, (i) => walk(seed, i, items)) + 1;
  return out;
}

/**
 * The queries of `step` drawn across strata in turn (`strata[i]`: item i's stratum, e.g. a question kind):
 * the run's g-th query (g counted over all steps) comes from the stratum at g mod C of a fixed cycle, each
 * stratum walking its own seeded permutation, so every step holds as many of each stratum as it can and fewer
 * queries a step than strata rotate through them all. Why: with a few queries a step drawn at random, a step
 * often holds two queries of one kind and none of another, so the groups' gradients share a push towards one
 * tool; the tool-choice task's runs learned "prefer tool X" and swung between tools (README, "Tool-choice task").
 * `weights[s]` (default 1) is how often stratum s comes up in the cycle, spread through it (strataCycle): a
 * kind that learns slowly can have more of each step without leaving the others out.
 */
function stratifiedItems(seed: number, step: number, perStep: number, items: number, strata: readonly number[], weights?: readonly number[]): number[] {
  if (strata.length !== items) throw new Error(`training schedule: ${strata.length} strata for ${items} items`);
  const kinds = [...new Set(strata)].sort((a, b) => a - b);
  const members = new Map(kinds.map((k) => [k, strata.flatMap((s, i) => (s === k ? [i] : []))]));
  const cycle = strataCycle(kinds, weights);
  const C = cycle.length;
  // Where stratum cycle[c] is in its own walk at cycle position c: the times it came up before c in the cycle.
  const before = cycle.map((k, c) => cycle.slice(0, c).filter((x) => x === k).length);
  const perCycle = new Map(kinds.map((k) => [k, cycle.filter((x) => x === k).length]));
  for (const k of kinds) {
    // The most of stratum k any window of perStep consecutive cycle positions holds.
    let most = 0;
    for (let s = 0; s < C; s++) most = Math.max(most, Array.from({ length: perStep }, (_, j) => cycle[(s + j) % C]).filter((x) => x === k).length);
    const n = members.get(k)!.length;
    if (n < most) throw new Error(`training schedule: stratum ${k} has ${n} items, fewer than the ${most} a step of ${perStep} queries takes from it`);
  }
  const out: number[] = [];
  for (let j = 0; j < perStep; j++) {
    const g = (step - 1) * perStep + j;
    const c = g % C;
    const k = cycle[c];
    const m = members.get(k)!;
    const stratumSeed = mixSeed(seed, 0x57a, k);
    takeNew(out, Math.floor(g / C) * perCycle.get(k)! + before[c], (at) => m[walk(stratumSeed, at, m.length)]);
  }
  return out;
}

/** The largest weight a stratum may have (a cycle stays short: the total of the weights). */
export const MAX_STRATUM_WEIGHT = 16;

/**
 * The order strata come up in: each stratum `weights[s]` times (default 1) in a cycle, spread by smooth weighted
 * round-robin (each turn every stratum gains its weight, the one with most is taken and pays the total; ties to
 * the lower stratum). Equal weights give the strata in order, [0, 1, 2, 3], as runs stored before weights drew.
 */
export function strataCycle(kinds: readonly number[], weights?: readonly number[]): number[] {
  const w = kinds.map((k) => weights?.[k] ?? 1);
  w.forEach((x, i) => {
    if (!Number.isInteger(x) || x < 1 || x > MAX_STRATUM_WEIGHT) throw new Error(`training schedule: stratum ${kinds[i]}'s weight must be an integer from 1 to ${MAX_STRATUM_WEIGHT}, got ${x}`);
  });
  const total = w.reduce((a, b) => a + b, 0);
  const credit = w.map(() => 0);
  const cycle: number[] = [];
  for (let n = 0; n < total; n++) {
    w.forEach((x, i) => (credit[i] += x));
    let best = 0;
    for (let i = 1; i < w.length; i++) if (credit[i] > credit[best]) best = i;
    credit[best] -= total;
    cycle.push(kinds[best]);
  }
  return cycle;
}

/**
 * Adds to `taken` the first item, from position `from` on, of a walk (`itemAt`: the item at a position) that
 * `taken` lacks, and returns that item's position. A walk crossing into its next epoch can repeat an item the
 * step already has: the next one is taken instead, so a step's queries are distinct.
 */
function takeNew(taken: number[], from: number, itemAt: (at: number) => number): number {
  for (let at = from; ; at++) {
    const item = itemAt(at);
    if (!taken.includes(item)) {
      taken.push(item);
      return at;
    }
  }
}

/** The item at position `at` of a walk through `n` items: epoch after epoch, each a new seeded permutation. */
function walk(seed: number, at: number, n: number): number {
  return epochOrder(seed, Math.floor(at / n), n)[at % n];
}

function epochOrder(seed: number, epoch: number, n: number): number[] {
  const rng = new Rng(mixSeed(seed, 0x5e9, epoch));
  const order = Array.from({ length: n }, (_, i) => i);
  for (let i = n - 1; i > 0; i--) {
    const j = rng.int(i + 1);
    [order[i], order[j]] = [order[j], order[i]];
  }
  return order;
}

/** The groups of `step`: ids and per-rollout seeds. */
export function planStep(o: { runId: string; seed: number; step: number; queriesPerStep: number; groupSize: number; items: number; strata?: readonly number[]; strataWeights?: readonly number[] }): GroupPlan[] {
  return stepItems(o.seed, o.step, o.queriesPerStep, o.items, o.strata, o.strataWeights).map((item) => {
    const id = groupId(o.runId, o.step, item);
    return { step: o.step, item, groupId: id, rollouts: Array.from({ length: o.groupSize }, (_, g) => ({ id: rolloutId(id, g), seed: mixSeed(o.seed, o.step, item, g) })) };
  });
}

/**
 * More rollouts of a planned group (dynamic sampling): rollouts `from` .. `from + count - 1` of the same
 * group, named and seeded as planStep names rollout g, so a redone step draws the same extra rollouts.
 */
export function extraRollouts(o: { runId: string; seed: number; plan: GroupPlan; from: number; count: number }): GroupPlan {
  const id = groupId(o.runId, o.plan.step, o.plan.item);
  const rollouts = Array.from({ length: o.count }, (_, k) => {
    const g = o.from + k;
    return { id: rolloutId(id, g), seed: mixSeed(o.seed, o.plan.step, o.plan.item, g) };
  });
  return { step: o.plan.step, item: o.plan.item, groupId: o.plan.groupId, rollouts };
}

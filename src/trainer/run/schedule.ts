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
export function stepItems(seed: number, step: number, perStep: number, items: number, strata?: readonly number[]): number[] {
  if (!Number.isInteger(step) || step < 1) throw new Error(`training schedule: step must be a positive integer, got ${step}`);
  if (!Number.isInteger(items) || items < 1) throw new Error('training schedule: the run has no items');
  if (!Number.isInteger(perStep) || perStep < 1 || perStep > items) throw new Error(`training schedule: queries per step must be 1 to ${items} (the items), got ${perStep}`);
  if (strata) return stratifiedItems(seed, step, perStep, items, strata);
  const out: number[] = [];
  for (let at = (step - 1) * perStep; out.length < perStep; ) at = takeNew(out, at, (i) => walk(seed, i, items)) + 1;
  return out;
}

/**
 * The queries of `step` drawn across strata in turn (`strata[i]`: item i's stratum, e.g. a question kind):
 * the run's g-th query (g counted over all steps) comes from stratum g mod K, each stratum walking its own
 * seeded permutation, so every step holds as many of each stratum as it can and fewer queries a step than
 * strata rotate through them all. Why: with a few queries a step drawn at random, a step often holds two
 * queries of one kind and none of another, so the groups' gradients share a push towards one tool; the
 * tool-choice task's runs learned "prefer tool X" and swung between tools (README, "Tool-choice task").
 */
function stratifiedItems(seed: number, step: number, perStep: number, items: number, strata: readonly number[]): number[] {
  if (strata.length !== items) throw new Error(`training schedule: ${strata.length} strata for ${items} items`);
  const kinds = [...new Set(strata)].sort((a, b) => a - b);
  const K = kinds.length;
  const members = kinds.map((k) => strata.flatMap((s, i) => (s === k ? [i] : [])));
  const perKind = Math.ceil(perStep / K);
  const small = members.findIndex((m) => m.length < perKind);
  if (small >= 0) throw new Error(`training schedule: stratum ${kinds[small]} has ${members[small].length} items, fewer than the ${perKind} a step of ${perStep} queries takes from it`);
  const out: number[] = [];
  for (let j = 0; j < perStep; j++) {
    const g = (step - 1) * perStep + j;
    const m = members[g % K];
    const stratumSeed = mixSeed(seed, 0x57a, kinds[g % K]);
    takeNew(out, Math.floor(g / K), (at) => m[walk(stratumSeed, at, m.length)]);
  }
  return out;
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
export function planStep(o: { runId: string; seed: number; step: number; queriesPerStep: number; groupSize: number; items: number; strata?: readonly number[] }): GroupPlan[] {
  return stepItems(o.seed, o.step, o.queriesPerStep, o.items, o.strata).map((item) => {
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

import { describe, expect, it } from 'vitest';
import { groupAdvantages, groupStats } from './advantages';

describe('group-relative advantages', () => {
  it('normalises each group with the unbiased std (hand-computed)', () => {
    // Group a: rewards 1,0,0 -> mean 1/3, std = sqrt((4/9+1/9+1/9)/2) = 1/sqrt(3).
    // A = (2/3)*sqrt(3) = 1.154700..., (-1/3)*sqrt(3) = -0.577350...  (the shared fixture's advantages)
    const r = groupAdvantages([
      { groupId: 'a', reward: 1 },
      { groupId: 'b', reward: 1 },
      { groupId: 'a', reward: 0 },
      { groupId: 'a', reward: 0 },
      { groupId: 'b', reward: 0 },
    ]);
    expect(r.advantages[0]).toBeCloseTo(1.1547005, 5);
    expect(r.advantages[2]).toBeCloseTo(-0.5773503, 5);
    expect(r.advantages[3]).toBeCloseTo(-0.5773503, 5);
    // Group b: 1,0 -> mean .5, std sqrt(.5) -> A = ±0.5/0.7071 = ±0.70711
    expect(r.advantages[1]).toBeCloseTo(0.7071068, 5);
    expect(r.advantages[4]).toBeCloseTo(-0.7071068, 5);
    expect(r.groups.map((g) => [g.groupId, g.turns, g.noGradient])).toEqual([
      ['a', 3, false],
      ['b', 2, false],
    ]);
    expect(r.groups[0].rewardMean).toBeCloseTo(1 / 3, 12);
    expect(r.noGradientGroups).toBe(0);
  });

  it('uses (std + eps) in the denominator', () => {
    const r = groupAdvantages([{ groupId: 'g', reward: 1 }, { groupId: 'g', reward: 0 }], 0.5);
    expect(r.advantages[0]).toBeCloseTo(0.5 / (Math.SQRT1_2 + 0.5), 12);
  });

  it('without the std division only centres each group (Dr. GRPO), and still gives all-equal groups nothing', () => {
    const turns = [1, 0, 0, 0, 0, 0, 0, 0].map((reward) => ({ groupId: 'g', reward })).concat([{ groupId: 'h', reward: 1 }, { groupId: 'h', reward: 1 }]);
    const r = groupAdvantages(turns, 1e-6, false);
    expect(r.advantages[0]).toBeCloseTo(7 / 8, 12);
    for (const a of r.advantages.slice(1, 8)) expect(a).toBeCloseTo(-1 / 8, 12);
    expect(r.advantages.slice(8)).toEqual([0, 0]);
    expect(r.noGradientGroups).toBe(1);
    // With the division the lone success's advantage is 0.875 / std = 2.47: about three times the update.
    expect(groupAdvantages(turns).advantages[0]).toBeCloseTo(0.875 / (Math.sqrt(1 / 8) + 1e-6), 9);
  });

  it('turns of a rollout share its reward; all-equal and single-turn groups give no gradient', () => {
    const r = groupAdvantages([
      { groupId: 'same', reward: 1 },
      { groupId: 'same', reward: 1 },
      { groupId: 'zero', reward: 0 },
      { groupId: 'zero', reward: 0 },
      { groupId: 'one', reward: 1 },
    ]);
    expect(r.advantages).toEqual([0, 0, 0, 0, 0]);
    expect(r.noGradientGroups).toBe(3);
    expect(r.groups.every((g) => g.noGradient)).toBe(true);
  });

  // Groups: solved (1, 1), failed (0, 0), split (1, 0). Step rewards 1,1,0,0,1,0: mean 1/2, unbiased std
  // sqrt(6 × 0.25 / 5) = sqrt(0.3).
  const turns = [
    { groupId: 'solved', reward: 1 },
    { groupId: 'solved', reward: 1 },
    { groupId: 'failed', reward: 0 },
    { groupId: 'failed', reward: 0 },
    { groupId: 'split', reward: 1 },
    { groupId: 'split', reward: 0 },
  ];

  it("with the batch baseline, measures every turn from the step's mean and std: all-equal groups keep a gradient", () => {
    const r = groupAdvantages(turns, 1e-6, true, 'batch');
    const a = 0.5 / (Math.sqrt(0.3) + 1e-6);
    [a, a, -a, -a, a, -a].forEach((x, i) => expect(r.advantages[i]).toBeCloseTo(x, 9));
    expect(r.noGradientGroups).toBe(0);
    // The groups' own statistics are still reported.
    expect(r.groups.map((g) => [g.groupId, g.rewardMean])).toEqual([['solved', 1], ['failed', 0], ['split', 0.5]]);
    // Unscaled: only centred on the step's mean.
    expect(groupAdvantages(turns, 1e-6, false, 'batch').advantages).toEqual([0.5, 0.5, -0.5, -0.5, 0.5, -0.5]);
    // The group baseline gives the solved and failed groups nothing.
    expect(groupAdvantages(turns, 1e-6, false).advantages).toEqual([0, 0, 0, 0, 0.5, -0.5]);
    // A step whose rewards are all equal has no signal under either baseline.
    const flat = groupAdvantages(turns.map((t) => ({ ...t, reward: 1 })), 1e-6, true, 'batch');
    expect(flat.advantages.every((x) => x === 0)).toBe(true);
    expect(flat.noGradientGroups).toBe(3);
  });

  it("with 'group-failed-batch', an all-failed group is measured from the step's mean and std, every other group from its own", () => {
    const r = groupAdvantages(turns, 1e-6, true, 'group-failed-batch');
    const failed = -0.5 / (Math.sqrt(0.3) + 1e-6);
    const split = 0.5 / (Math.sqrt(0.5) + 1e-6);
    [0, 0, failed, failed, split, -split].forEach((x, i) => expect(r.advantages[i]).toBeCloseTo(x, 9));
    // Only the all-solved group gives nothing.
    expect(r.groups.map((g) => g.noGradient)).toEqual([true, false, false]);
    expect(r.noGradientGroups).toBe(1);
    expect(groupAdvantages(turns, 1e-6, false, 'group-failed-batch').advantages).toEqual([0, 0, -0.5, -0.5, 0.5, -0.5]);
    // A step that failed everywhere has no mean to fall below: no signal; nor has one that solved everything.
    for (const reward of [0, 1]) {
      const flat = groupAdvantages(turns.map((t) => ({ ...t, reward })), 1e-6, true, 'group-failed-batch');
      expect(flat.advantages.every((x) => x === 0)).toBe(true);
      expect(flat.noGradientGroups).toBe(3);
    }
  });

  it('groupStats judges "no gradient" from carried advantages when it is given them', () => {
    const turns = [{ groupId: 'solved', reward: 1 }, { groupId: 'solved', reward: 1 }, { groupId: 'failed', reward: 0 }, { groupId: 'failed', reward: 0 }];
    expect(groupStats(turns).noGradientGroups).toBe(2);
    expect(groupStats(turns, [0.5, 0.5, -0.5, -0.5]).noGradientGroups).toBe(0);
    expect(groupStats(turns, [0, 0, -0.5, -0.5]).groups.map((g) => g.noGradient)).toEqual([true, false]);
  });

  it('rejects a turn without a reward, naming it', () => {
    expect(() => groupAdvantages([{ groupId: 'g', reward: Number.NaN }])).toThrow(/turn 0 \(group 'g'\) has reward NaN/);
  });
});

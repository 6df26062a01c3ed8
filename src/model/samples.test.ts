import { describe, expect, it } from 'vitest';
import { fromFixtureSamples, miniBatches, microBatches, packBatch, type TurnSample } from './samples';

const s = (rolloutId: string, prompt: number[], resp: number[], extra: Partial<TurnSample> = {}): TurnSample => ({
  groupId: 'g',
  rolloutId,
  turn: 0,
  promptTokens: prompt,
  responseTokens: resp,
  reward: 1,
  ...extra,
});

describe('packing turn samples', () => {
  it('packs two sequences: ids, positions, causal ranges, targets, loss rows (hand-computed)', () => {
    const b = packBatch([
      s('r0', [5, 6, 7], [8, 9], { advantage: 2, oldLogprobs: [-1, -2], refLogprobs: [-3, -4] }),
      s('r1', [1], [2, 3, 4], { advantage: -1, oldLogprobs: [-5, -6, -7] }),
    ]);
    expect(b.rows).toBe(9);
    expect([...b.ids]).toEqual([5, 6, 7, 8, 9, 1, 2, 3, 4]);
    expect([...b.pos]).toEqual([0, 1, 2, 3, 4, 0, 1, 2, 3]);
    expect([...b.ranges]).toEqual([0, 1, 0, 2, 0, 3, 0, 4, 0, 5, 5, 6, 5, 7, 5, 8, 5, 9]);
    expect([...b.targets]).toEqual([6, 7, 8, 9, 0, 2, 3, 4, 0]);
    // Row 2 predicts 8 and row 3 predicts 9 (the response of r0); rows 5..7 predict 2, 3, 4.
    expect([...b.lossRows]).toEqual([2, 3, 5, 6, 7]);
    expect([...b.lossMask]).toEqual([0, 0, 1, 1, 0, 1, 1, 1, 0]);
    expect([...b.advantages]).toEqual([0, 0, 2, 2, 0, -1, -1, -1, 0]);
    expect([...b.oldLogprobs]).toEqual([0, 0, -1, -2, 0, -5, -6, -7, 0]);
    expect([...b.refLogprobs]).toEqual([0, 0, -3, -4, 0, 0, 0, 0, 0]);
    expect(b.responseTokens).toBe(5);
    expect(b.seqs).toEqual([
      { sample: 0, start: 0, length: 5, promptLen: 3 },
      { sample: 1, start: 5, length: 4, promptLen: 1 },
    ]);
  });

  it('leaves forced (jump-forward) response tokens out of the loss, keeping them as context', () => {
    const b = packBatch([s('r0', [5, 6], [7, 8, 9], { advantage: 1, oldLogprobs: [-1, -2, -3], forced: [false, true, false] })]);
    expect([...b.ids]).toEqual([5, 6, 7, 8, 9]);
    // Row 2 predicts the forced 8: no loss there.
    expect([...b.lossRows]).toEqual([1, 3]);
    expect([...b.oldLogprobs]).toEqual([0, -1, 0, -3, 0]);
    expect(b.responseTokens).toBe(2);
    expect(() => packBatch([s('r1', [1], [2, 3], { forced: [true] })])).toThrow(/forced has 1 entries for 2 response tokens/);
  });

  it('maps each drawn token\'s choice groups to the row that predicts it, for rows in the loss only, and checks them', () => {
    const b = packBatch([s('r0', [5, 6], [7, 8, 9], { choices: [[[7, 3], [1]], null, [[2], [9, 4]]], forced: [false, false, true] }), s('r1', [1], [2], { choices: [[[2], [3]]] })]);
    // Row 1 predicts 7 (groups [7, 3] and [1]), row 2 predicts 8 (none), row 3 predicts the forced 9 (out of the loss); row 5 predicts 2.
    expect([...b.choices!.entries()].map(([row, groups]) => [row, groups.map((g) => [...g])])).toEqual([[1, [[7, 3], [1]]], [5, [[2], [3]]]]);
    expect(packBatch([s('r2', [1], [2])]).choices).toBeUndefined();
    expect(() => packBatch([s('x', [1], [2, 3], { choices: [[[2], [5]]] })])).toThrow(/sample 0 \(rollout 'x', turn 0\): choices has 1 entries for 2 response tokens/);
    expect(() => packBatch([s('x', [1], [2], { choices: [[[2, 5]]] })])).toThrow(/choices\[0\] holds 1 group\(s\) of tokens; a choice needs at least 2/);
    expect(() => packBatch([s('x', [1], [2], { choices: [[[2], []]] })])).toThrow(/choices\[0\] holds an empty group/);
    expect(() => packBatch([s('x', [1], [2], { choices: [[[2], [5, 2]]] })])).toThrow(/choices\[0\] holds token id 2 twice/);
    expect(() => packBatch([s('x', [1], [2], { choices: [[[3], [4]]] })])).toThrow(/choices\[0\] does not hold the token drawn there \(2\)/);
    expect(() => packBatch([s('x', [1], [2], { choices: [[[2], [60]]] })], undefined, 50)).toThrow(/choices\[0\] holds token id 60, outside the vocabulary \(size 50\)/);
  });

  it("lays each turn's entropy weight over its loss rows (absent: 1), and none when no sample sets one", () => {
    const b = packBatch([s('r0', [5, 6], [7, 8], { entropyWeight: 0 }), s('r1', [1], [2, 3])]);
    expect([...b.entropyWeights!]).toEqual([0, 0, 0, 0, 1, 1, 0]);
    expect(packBatch([s('r2', [1], [2])]).entropyWeights).toBeUndefined();
  });

  it('packs a chosen subset in the given order', () => {
    const all = [s('a', [1], [2]), s('b', [3, 4], [5])];
    const b = packBatch(all, [1]);
    expect([...b.ids]).toEqual([3, 4, 5]);
    expect(b.seqs[0].sample).toBe(1);
  });

  it('rejects bad samples naming the sample and field', () => {
    expect(() => packBatch([s('x', [], [1])])).toThrow(/sample 0 \(rollout 'x', turn 0\): promptTokens is empty/);
    expect(() => packBatch([s('x', [1], [2], { oldLogprobs: [1, 2] })])).toThrow(/oldLogprobs has 2 entries for 1 response tokens/);
    expect(() => packBatch([s('x', [1], [99])], undefined, 50)).toThrow(/responseTokens holds token id 99, outside the vocabulary \(size 50\)/);
  });

  it('splits into micro-batches by a token budget, a long sequence alone', () => {
    const all = [s('a', [1, 2], [3]), s('b', [1], [2]), s('c', [1, 2, 3, 4], [5, 6]), s('d', [1], [2])];
    // lengths 3, 2, 6, 2 with budget 5: [a,b] (5), [c] (6 > budget, alone), [d]
    expect(microBatches(all, [0, 1, 2, 3], 5)).toEqual([[0, 1], [2], [3]]);
    expect(microBatches(all, [0, 1, 2, 3], 100)).toEqual([[0, 1, 2, 3]]);
  });

  it('mini-batches keep a rollout\'s turns together and cover every sample once', () => {
    const all = [s('a', [1], [2]), s('a', [1], [2], { turn: 1 }), s('b', [1], [2]), s('c', [1], [2]), s('c', [1], [2], { turn: 1 })];
    let k = 0;
    const mb = miniBatches(all, 2, () => [0.9, 0.1][k++ % 2]);
    expect(mb.length).toBe(2);
    expect(mb.flat().sort()).toEqual([0, 1, 2, 3, 4]);
    for (const part of mb) {
      const ids = new Set(part.map((i) => all[i].rolloutId));
      for (const r of ids) expect(part.filter((i) => all[i].rolloutId === r).length).toBe(all.filter((x) => x.rolloutId === r).length);
    }
  });

  it('reads the fixture sample shape and checks it', () => {
    const t = fromFixtureSamples([{ tokens: [1, 2, 3, 4], prompt_len: 2, advantage: 0.5, old_logprobs: [-1, -2] }]);
    expect(t[0].promptTokens).toEqual([1, 2]);
    expect(t[0].responseTokens).toEqual([3, 4]);
    expect(() => fromFixtureSamples([{ tokens: [1, 2, 3], prompt_len: 1, advantage: 0, old_logprobs: [-1] }], 'b.json')).toThrow(/b.json: samples\[0\].old_logprobs must have 2 entries/);
  });
});

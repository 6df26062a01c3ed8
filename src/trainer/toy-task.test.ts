import { describe, expect, it } from 'vitest';
import { checkWeights } from '../io/qwen2-config';
import { Rng } from '../util/rng';
import { initLoraAdapter, peftName } from './lora-init';
import { ToyTask, toyModel } from './toy-task';

describe('toy task', () => {
  const t = new ToyTask({ numQueries: 6, numResults: 4, numActions: 3 });

  it('lays out the vocabulary and the rules (hand-computed)', () => {
    // BOS 0, SEP 1, ERR 2, Q0..Q5 = 3..8, R0..R3 = 9..12, A0..A2 = 13..15
    expect(t.vocabSize).toBe(16);
    expect([t.query(5), t.result(0), t.action(0), t.action(2)]).toEqual([8, 9, 13, 15]);
    // q = 4: tool A(4 mod 3) = A1 = 14; result R((4+1) mod 4) = R1 = 10; argument A((2*1+1) mod 3) = A0 = 13
    expect(t.correctTool(4)).toBe(14);
    expect(t.environment(4, 14)).toBe(10);
    expect(t.environment(4, 13)).toBe(t.ERR);
    expect(t.correctArgument(10)).toBe(13);
    expect(t.turn1Prompt(4)).toEqual([0, 1, 7]);
    expect(t.turn2Prompt(4, 14, 10)).toEqual([0, 1, 7, 14, 10]);
    expect(t.reward(4, 14, 13)).toBe(1);
    expect(t.reward(4, 14, 14)).toBe(0);
    expect(t.reward(4, 13, t.correctArgument(t.ERR))).toBe(0);
    expect(() => new ToyTask({ numActions: 0 })).toThrow(/'numActions' must be a positive integer/);
  });

  it('makes a checkpoint the engine accepts and a fresh adapter with B = 0', () => {
    const m = toyModel(t);
    checkWeights(m.config, [...m.source.values()].map((s) => ({ name: s.name, shape: s.shape })));
    const a = initLoraAdapter(m.config, { r: 4, alpha: 8 }, new Rng(3));
    expect(a.pairs.size).toBe(7 * m.config.numLayers);
    for (const p of a.pairs.values()) {
      expect(p.B.every((v) => v === 0)).toBe(true);
      expect(p.A.every((v) => Math.abs(v) <= 1 / Math.sqrt(p.inFeatures))).toBe(true);
      expect(p.A.some((v) => v !== 0)).toBe(true);
      expect(p.scale).toBe(2);
    }
    expect(peftName({ layer: 1, module: 'gate' }, 'B')).toBe('base_model.model.model.layers.1.mlp.gate_proj.lora_B.weight');
  });
});

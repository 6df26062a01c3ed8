import { describe, expect, it } from 'vitest';
import { adapterLabel, describeUses, enginesLabel, manyUses, type EngineUse } from './engine-use';

const use = (what: string, plural?: boolean): EngineUse => ({ what, kept: '', plural, stop: async () => undefined });

describe('engine uses in words', () => {
  it('joins what runs and says whether it is one thing or more', () => {
    expect(describeUses([use('a training run')])).toBe('a training run');
    expect(describeUses([use('a'), use('b'), use('c')])).toBe('a, b and c');
    expect(manyUses([use('a training run')])).toBe(false);
    expect(manyUses([use('a'), use('b')])).toBe(true);
    // The chat's answer and its training run, stopped together as one use, are still two things.
    expect(manyUses([use('a chat answer and a training run', true)])).toBe(true);
  });
});

describe('engines in words', () => {
  it('puts the plain words first and the engine ids second', () => {
    expect(enginesLabel('planner:tiny-chat', null)).toBe('tiny-chat does every step: plans, runs tools, checks and answers (planner:tiny-chat, all modules)');
    expect(enginesLabel('planner:tiny', 'web-llm:Qwen2.5-1.5B-Instruct-q4f16_1-MLC')).toBe(
      'tiny plans; Qwen2.5-1.5B-Instruct-q4f16_1-MLC runs tools, checks and answers (planner:tiny + web-llm:Qwen2.5-1.5B-Instruct-q4f16_1-MLC)',
    );
    expect(adapterLabel('toy-20261126-abc', 'my first adapter')).toBe('adapter “my first adapter”');
    expect(adapterLabel('toy-20261126-abc', null)).toBe('adapter toy-20261126-abc');
  });
});

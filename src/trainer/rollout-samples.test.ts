import { describe, expect, it } from 'vitest';
import { rolloutsToJsonl } from '../agent/rollouts';
import type { RolloutRecord } from '../store/records';
import { samplesFromRollouts, samplesToRolloutRecords } from './rollout-samples';
import type { TurnSample } from './samples';

const sample = (rolloutId: string, turn: number, reward: number): TurnSample => ({
  groupId: 'q1',
  rolloutId,
  turn,
  promptTokens: [0, 1, 3 + turn],
  responseTokens: [9],
  reward,
  oldLogprobs: [-0.5 - turn],
});

describe('rollout records <-> turn samples', () => {
  it('exports trainer rollouts as JSONL with prompt, completion, reward, advantage, group id and logprobs', () => {
    // Turns: r0 (reward 1) has 2 turns, r1 (reward 0) has 1: rewards 1,1,0 -> mean 2/3,
    // unbiased std sqrt((1/9+1/9+4/9)/2) = 1/sqrt(3); A = (1/3)*sqrt(3) = 0.57735 and (-2/3)*sqrt(3) = -1.1547.
    const records = samplesToRolloutRecords([sample('r0', 0, 1), sample('r0', 1, 1), sample('r1', 0, 0)], 'toy-run', 'toy-adapter', 123);
    const lines = rolloutsToJsonl(records).trim().split('\n').map((l) => JSON.parse(l));
    expect(lines.length).toBe(3);
    expect(lines[0]).toMatchObject({ group_id: 'q1', run_id: 'toy-run', conversation_id: 'r0', turn: 0, reward: 1, adapter_id: 'toy-adapter', prompt_token_ids: [0, 1, 3], completion_token_ids: [9], logprobs: [-0.5] });
    expect(lines[0].prompt[0].content).toBe('token ids: 0 1 3');
    expect(lines[0].completion[0].content).toBe('token ids: 9');
    expect(lines[0].advantage).toBeCloseTo(0.57735, 4);
    expect(lines[1].advantage).toBeCloseTo(0.57735, 4);
    expect(lines[2].advantage).toBeCloseTo(-1.1547, 4);
  });

  it('turns stored planner calls into samples, skipping calls without ids, logprobs or reward', () => {
    const base: RolloutRecord = { id: 'a', runId: 'r', groupId: 'g', conversationId: 'c1', turn: 0, adapterId: null, promptTokens: [1, 2], tokens: [3, 4], logprobs: [-1, -2], reward: 1, prompt: 'p', completion: 'c', createdAt: 0 };
    const { samples, skipped } = samplesFromRollouts([
      base,
      { ...base, id: 'b', promptTokens: [], tokens: [] },
      { ...base, id: 'c', logprobs: [-1] },
      { ...base, id: 'd', reward: undefined },
    ]);
    expect(samples).toEqual([{ groupId: 'g', rolloutId: 'c1', turn: 0, promptTokens: [1, 2], responseTokens: [3, 4], reward: 1, oldLogprobs: [-1, -2] }]);
    expect(skipped.map((s) => s.id)).toEqual(['b', 'c', 'd']);
    expect(skipped[0].reason).toMatch(/no token ids/);
    expect(skipped[2].reason).toMatch(/no reward/);
  });
});

import 'fake-indexeddb/auto';
import { describe, expect, it } from 'vitest';
import type { RolloutRecord } from '../store/records';
import { deleteRolloutsByRun, getRolloutsByGroup, getRolloutsByRun, putRollout, setAdvantages } from '../store/rollout-store';
import type { PlannerCall } from './loop';
import { exportRunJsonl, recordReward, rolloutFromPlannerCall, rolloutRecorder, rolloutsToJsonl, type RolloutJsonLine } from './rollouts';

let n = 0;
const freshDb = () => `rollout-test-${++n}-${Math.random()}`;

function call(conversationId: string, turn: number, text = `plan ${turn}`): PlannerCall {
  const tokens = [...text].map((c) => c.charCodeAt(0));
  return {
    conversationId,
    turn,
    engineId: 'planner:test',
    messages: [
      { role: 'system', content: 'You are the Planner' },
      { role: 'user', content: `Query ${conversationId}` },
    ],
    result: {
      text,
      promptTokens: [1, 2, 3, turn],
      tokens,
      logprobs: tokens.map((t) => -t / 1000),
      adapterId: 'lora-7',
      finishReason: 'stop',
      timings: { prefillMs: 1, decodeMs: 2 },
    },
    parsed: { ok: false, error: 'x', method: 'default' },
  };
}

function rec(id: string, groupId: string, conversationId: string, reward?: number): RolloutRecord {
  return { id, runId: 'r', groupId, conversationId, turn: 1, adapterId: null, promptTokens: [], tokens: [], logprobs: [], prompt: '', completion: '', createdAt: 0, ...(reward !== undefined ? { reward } : {}) };
}

describe('rollout records', () => {
  it('copy the exact ids, logprobs, adapter and messages of a planner call', () => {
    const c = call('conv', 2);
    const r = rolloutFromPlannerCall(c, { runId: 'run', groupId: 'g' }, 5);
    expect(r).toMatchObject({
      id: 'run:conv:2',
      runId: 'run',
      groupId: 'g',
      conversationId: 'conv',
      turn: 2,
      adapterId: 'lora-7',
      promptTokens: [1, 2, 3, 2],
      tokens: c.result.tokens,
      logprobs: c.result.logprobs,
      completion: 'plan 2',
      createdAt: 5,
      messages: c.messages,
      parsedOk: false,
      finishReason: 'stop',
    });
    c.result.tokens.push(9); // records are copies, not views of the engine's arrays
    expect(r.tokens).toHaveLength(6);
    expect(() => rolloutFromPlannerCall(c, { runId: 'run', groupId: 'g' })).toThrow("planner engine 'planner:test' returned 7 tokens but 6 logprobs");
  });

  it('export: scored records without a stored advantage get the trainer\'s rule per group, broadcast to every turn; stored ones are kept', () => {
    // Group g: turns a1, a2 (conversation a, reward 1), b1 and c1 (reward 0); group h all equal; f1 unrewarded.
    const records = [rec('a1', 'g', 'a', 1), rec('a2', 'g', 'a', 1), rec('b1', 'g', 'b', 0), rec('c1', 'g', 'c', 0), rec('d1', 'h', 'd', 1), rec('e1', 'h', 'e', 1), rec('f1', 'g', 'f'), { ...rec('s1', 'k', 's', 1), advantage: 0.25 }];
    const lines = rolloutsToJsonl(records).trim().split('\n').map((l) => JSON.parse(l) as RolloutJsonLine);
    const adv = new Map(lines.map((l, i) => [records[i].id, l.advantage]));
    expect(adv.get('s1')).toBe(0.25);
    const mean = 0.5;
    const std = Math.sqrt((4 * 0.25) / 3); // unbiased, over the group's 4 turns
    expect(adv.get('a1')).toBeCloseTo((1 - mean) / (std + 1e-6), 6);
    expect(adv.get('a2')).toBe(adv.get('a1'));
    expect(adv.get('b1')).toBeCloseTo(-mean / (std + 1e-6), 6);
    expect(adv.get('d1')).toBe(0);
    expect(adv.get('f1')).toBeNull();
  });

  it('store per run and group, take the final reward, and export JSONL with ids and logprobs', async () => {
    const db = freshDb();
    const ids = { runId: 'train-1', groupId: 'q7' };
    const recorder = rolloutRecorder(ids, db);
    await recorder(call('a', 1));
    await recorder(call('a', 2));
    await recorder(call('b', 1));
    await recorder(call('b', 1, 'replaced after reload')); // same turn again: replaces, no duplicate
    await putRollout({ ...rolloutFromPlannerCall(call('z', 1), { runId: 'other', groupId: 'q7' }) }, db);
    expect(await recordReward(ids, 'a', 1, db)).toBe(2);
    expect(await recordReward(ids, 'b', 0, db)).toBe(1);

    const run = await getRolloutsByRun('train-1', db);
    expect(run.map((r) => [r.conversationId, r.turn, r.reward])).toEqual([['a', 1, 1], ['a', 2, 1], ['b', 1, 0]]);
    expect(run[2].completion).toBe('replaced after reload');
    expect((await getRolloutsByGroup('q7', db)).length).toBe(4);

    const lines = (await exportRunJsonl('train-1', db)).trim().split('\n').map((l) => JSON.parse(l) as RolloutJsonLine);
    expect(lines).toHaveLength(3);
    expect(lines[0]).toEqual({
      prompt: call('a', 1).messages,
      completion: [{ role: 'assistant', content: 'plan 1' }],
      reward: 1,
      // three turns with rewards 1, 1, 0: mean 2/3, unbiased std sqrt(1/3)
      advantage: expect.closeTo((1 - 2 / 3) / (Math.sqrt(1 / 3) + 1e-6), 12),
      group_id: 'q7',
      run_id: 'train-1',
      conversation_id: 'a',
      turn: 1,
      adapter_id: 'lora-7',
      prompt_token_ids: [1, 2, 3, 1],
      completion_token_ids: call('a', 1).result.tokens,
      logprobs: call('a', 1).result.logprobs,
    });
    expect(lines[2].advantage).toBeCloseTo(-(2 / 3) / Math.sqrt(1 / 3), 5);

    // Advantages the trainer stored win over computed ones.
    await setAdvantages(new Map([['train-1:a:1', 0.25]]), db);
    const again = rolloutsToJsonl(await getRolloutsByRun('train-1', db)).trim().split('\n').map((l) => JSON.parse(l) as RolloutJsonLine);
    expect(again[0].advantage).toBe(0.25);
    expect(rolloutsToJsonl([])).toBe('');

    expect(await deleteRolloutsByRun('train-1', db)).toBe(3);
    expect(await getRolloutsByRun('train-1', db)).toEqual([]);
    expect((await getRolloutsByRun('other', db)).length).toBe(1);
  });
});

// The agent collector on test engines (no model): a group's rollouts, one at a time or several at once, give
// the same trajectories in rollout order, each stored as a conversation with its reward; an abort starts no
// further rollout; a rollout that throws fails the group naming it; the planner is told how many rollouts
// may still plan; and the step batch broadcasts each reward to its planner turns with group advantages.
import 'fake-indexeddb/auto';
import { describe, expect, it } from 'vitest';
import { ProbeEngine, type ProbeReplyFn } from '../../agent/probe-engine';
import { getConversation, getSteps, listConversations } from '../../store/conversations';
import { AgentCollector, type AgentCollectorOptions } from './agent-collector';
import { idbRolloutStorage } from './run-store-idb';
import type { GroupPlan } from './schedule';
import { stepBatch } from './rollout-samples';
import { answerFromMemory, multiplyPlan as plan, multiplyTool } from '../../../tests/support/test-tools';

let n = 0;
const freshDb = () => `collector-test-${++n}-${Math.random()}`;

// Replies that depend only on the call: the planner multiplies 7 by its seed; the verifier stops once the
// product is odd or two turns have run. Earlier rollouts (smaller seeds) reply more slowly, so concurrent runs
// finish out of order.
const byCall: ProbeReplyFn = (module, messages, options) => {
  const user = messages[messages.length - 1].content;
  switch (module) {
    case 'planner':
      return { text: plan(`Multiply 7 by ${options.seed}`), delayMs: (12 - (options.seed ?? 0)) * 3 };
    case 'executor': {
      const [, a, b] = /Sub-goal: Multiply (\d+) by (\d+)/.exec(user) ?? [];
      return `{"a": ${a}, "b": ${b}}`;
    }
    case 'verifier': {
      const results = [...user.matchAll(/Result: (\d+)/g)].map((m) => Number(m[1]));
      return results.some((r) => r % 2 === 1) || results.length >= 2 ? 'STOP' : 'CONTINUE';
    }
    case 'generator':
      return answerFromMemory(messages);
    default:
      return 'x';
  }
};

/** One group of `size` rollouts of item 0 with seeds 5, 6, ... */
const group = (size: number): GroupPlan => ({ step: 1, item: 0, groupId: 'run:step1:item0', rollouts: Array.from({ length: size }, (_, g) => ({ id: `run:step1:item0:r${g}`, seed: 5 + g })) });

function collector(o: Partial<AgentCollectorOptions> & Pick<AgentCollectorOptions, 'engines'>, db: string): AgentCollector {
  return new AgentCollector({
    runId: 'run',
    items: [{ query: '6*7?', answer: 42 }],
    tools: [multiplyTool],
    agent: (seed) => ({ answerTags: true, maxTurns: 3, generation: { planner: { seed } } }),
    reward: { kind: 'numeric' },
    concurrency: 1,
    storage: idbRolloutStorage(db),
    ...o,
  });
}

describe('AgentCollector', () => {
  async function multiplyGroup(concurrency: number) {
    const db = freshDb();
    // Calls wait for a second one to overlap them (or 100 ms): without that, one rollout could run ahead alone.
    const engine = new ProbeEngine(byCall, 'probe', concurrency > 1 ? { overlapCalls: 2 } : {});
    const [g] = await collector({ engines: { planner: engine, shared: engine }, concurrency }, db).collect([group(4)], {});
    const view = await Promise.all(
      g.trajectories.map(async (t) => {
        const conv = (await getConversation(t.rolloutId, db))!;
        return {
          result: [t.rolloutId, t.status, t.answer, t.reward, t.turns.length],
          stored: [conv.title, conv.status, conv.reward],
          steps: (await getSteps(t.rolloutId, db)).map((s) => `${s.kind}@${s.turn}`),
          turns: t.turns.map((x) => [x.turn, x.completion, x.responseTokens.length, x.logprobs.length]),
        };
      }),
    );
    return { engine, view };
  }

  it('plays a group one at a time or three at once with the same trajectories, in rollout order, stored as conversations', async () => {
    const one = await multiplyGroup(1);
    const three = await multiplyGroup(3);
    expect(one.engine.maxInFlight).toBe(1);
    expect(three.engine.maxInFlight).toBeGreaterThan(1);
    expect(three.engine.maxInFlight).toBeLessThanOrEqual(3);
    expect(three.view).toEqual(one.view);
    // Seeds 5..8: 7*5 and 7*7 are odd (one turn), 7*6 and 7*8 even (two turns); only 42 is right.
    expect(three.view.map((v) => v.result)).toEqual([
      ['run:step1:item0:r0', 'done', '35', 0, 1],
      ['run:step1:item0:r1', 'done', '42', 1, 2],
      ['run:step1:item0:r2', 'done', '49', 0, 1],
      ['run:step1:item0:r3', 'done', '56', 0, 2],
    ]);
    expect(three.view.map((v) => v.stored)).toEqual([
      ['run:step1:item0 #1', 'done', 0],
      ['run:step1:item0 #2', 'done', 1],
      ['run:step1:item0 #3', 'done', 0],
      ['run:step1:item0 #4', 'done', 0],
    ]);
    three.view.forEach((v, i) => {
      for (const t of v.turns) expect(t).toEqual([t[0], plan(`Multiply 7 by ${5 + i}`), plan(`Multiply 7 by ${5 + i}`).length, plan(`Multiply 7 by ${5 + i}`).length]);
    });
  });

  it('a redone step replaces the stored conversations of its rollouts', async () => {
    const db = freshDb();
    const engine = new ProbeEngine(byCall);
    const c = collector({ engines: { planner: engine, shared: engine } }, db);
    await c.collect([group(2)], {});
    await c.collect([group(2)], {});
    expect((await listConversations(db)).map((x) => x.id).sort()).toEqual(['run:step1:item0:r0', 'run:step1:item0:r1']);
    expect((await getSteps('run:step1:item0:r1', db)).map((s) => s.seq)).toEqual([...Array(8).keys()]);
  });

  it('starts no rollout after an abort; the started ones end interrupted', async () => {
    const db = freshDb();
    const engine = new ProbeEngine(byCall);
    engine.hold();
    const ctl = new AbortController();
    const running = collector({ engines: { planner: engine, shared: engine }, concurrency: 2 }, db).collect([group(4)], { signal: ctl.signal });
    // The group's greedy query analysis is one call for both rollouts.
    await expect.poll(() => engine.inFlight).toBe(1);
    ctl.abort();
    const [g] = await running;
    expect(g.trajectories.map((t) => [t.status, t.reward])).toEqual([
      ['interrupted', 0],
      ['interrupted', 0],
    ]);
    expect(engine.calls.map((x) => x.module)).toEqual(['analysis']);
    expect((await listConversations(db)).map((x) => x.status)).toEqual(['interrupted', 'interrupted']);
  });

  it('a rollout that throws fails the group, naming why, once the running ones have finished', async () => {
    const db = freshDb();
    const engine = new ProbeEngine(byCall, 'probe', { overlapCalls: 2 });
    // maxTurns 0 makes runAgent throw before any step: the one way a rollout throws without a storage failure.
    const agent = (seed: number) => ({ answerTags: true, maxTurns: seed === 6 ? 0 : 3, generation: { planner: { seed } } });
    await expect(collector({ engines: { planner: engine, shared: engine }, concurrency: 3, agent }, db).collect([group(3)], {})).rejects.toThrow(
      'agent config: maxTurns must be a positive integer, got 0',
    );
    // Rollouts 1 and 3 ran to the end and are stored; no rollout started after the failure.
    expect((await listConversations(db)).map((x) => [x.id, x.status]).sort()).toEqual([
      ['run:step1:item0:r0', 'done'],
      ['run:step1:item0:r1', 'error'],
      ['run:step1:item0:r2', 'done'],
    ]);
  });

  it('tells the planner how many rollouts may still plan, and gives each the time budget times the number at once', async () => {
    const db = freshDb();
    const announced: number[] = [];
    const planner = Object.assign(new ProbeEngine(byCall, 'planner'), { expectConcurrentCalls: (k: number) => void announced.push(k) });
    const shared = new ProbeEngine(byCall, 'shared');
    const agent = (seed: number) => ({ answerTags: true, maxTurns: 3, timeBudgetMs: 60_000, generation: { planner: { seed } } });
    const [g] = await collector({ engines: { planner, shared }, concurrency: 3, agent }, db).collect([group(4)], {});
    expect(g.trajectories.map((t) => t.answer)).toEqual(['35', '42', '49', '56']);
    expect(announced[0]).toBe(3);
    expect(announced[announced.length - 1]).toBe(1);
    expect(announced.every((k) => k >= 1 && k <= 3)).toBe(true);
    for (const t of g.trajectories) {
      const settings = (await getConversation(t.rolloutId, db))!.settings as { config: { timeBudgetMs: number } };
      expect(settings.config.timeBudgetMs).toBe(180_000);
    }
  });

  it('the step batch broadcasts each reward to its planner turns and normalises advantages in the group', async () => {
    const db = freshDb();
    const engine = new ProbeEngine(byCall);
    const groups = await collector({ engines: { planner: engine, shared: engine } }, db).collect([group(2)], {});
    const batch = stepBatch({ runId: 'run', step: 1, groups, advantageEps: 1e-6 });
    // Rollout 1 (seed 5) answers 35 in one turn, rollout 2 (seed 6) 42 in two: rewards 0 and 1 over 3 turns.
    expect(batch.rewards).toEqual([0, 1]);
    expect(batch.samples.map((s) => [s.rolloutId, s.turn, s.reward])).toEqual([
      ['run:step1:item0:r0', 1, 0],
      ['run:step1:item0:r1', 1, 1],
      ['run:step1:item0:r1', 2, 1],
    ]);
    // Turn rewards 0, 1, 1: mean 2/3, unbiased std sqrt(1/3).
    const sd = Math.sqrt(1 / 3);
    const want = [0, 1, 1].map((r) => (r - 2 / 3) / (sd + 1e-6));
    batch.samples.forEach((s, i) => expect(s.advantage).toBeCloseTo(want[i], 12));
    expect(batch.records.map((r) => [r.id, r.step, r.rollout, r.reward, r.advantage])).toEqual(batch.samples.map((s, i) => [`run:${s.rolloutId}:${s.turn}`, 1, i === 0 ? 0 : 1, s.reward, s.advantage]));
    for (const s of batch.samples) expect(s.oldLogprobs!.length).toBe(s.responseTokens.length);
    // Without the std division (GrpoConfig.advantageStd false, Dr. GRPO) the same turns are only centred; the
    // stored records carry what the update used.
    const centred = stepBatch({ runId: 'run', step: 1, groups, advantageEps: 1e-6, advantageStd: false });
    centred.samples.forEach((s, i) => expect(s.advantage).toBeCloseTo([0, 1, 1][i] - 2 / 3, 12));
    expect(centred.records.map((r) => r.advantage)).toEqual(centred.samples.map((s) => s.advantage));
  });
});

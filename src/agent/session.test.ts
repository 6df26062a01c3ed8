// A stored run end to end on fake-indexeddb: conversation record, steps, rollouts with the broadcast reward,
// and an interrupted run resumed from storage.
import 'fake-indexeddb/auto';
import { describe, expect, it } from 'vitest';
import { getConversation, getSteps, listConversations, markStaleRunsInterrupted } from '../store/conversations';
import { getRolloutsByRun } from '../store/rollouts';
import type { Tool } from '../tools/types';
import { ProbeEngine, type ProbeReplyFn } from './probe-engine';
import { ScriptedEngine, type Script } from './scripted-engine';
import { EngineMismatchError } from './engines-used';
import { GroupRolloutError, resumeConversation, runGroup, startConversation, type SessionResult } from './session';
import { exportRunJsonl, type RolloutJsonLine } from './rollouts';

let n = 0;
const freshDb = () => `session-test-${++n}-${Math.random()}`;

/** Multiplies two numbers: the scripted agent must get its answer from here. */
const multiply: Tool = {
  card: {
    name: 'Multiply_Tool',
    description: 'Multiplies a by b.',
    input: { type: 'object', properties: { a: { type: 'number', description: 'a' }, b: { type: 'number', description: 'b' } }, required: ['a', 'b'] },
    output: 'the product',
    limitations: [],
    examples: [{ goal: 'multiply 2 by 3', args: { a: 2, b: 3 } }],
    usesNetwork: false,
  },
  async run(args) {
    return { ok: true, output: String((args.a as number) * (args.b as number)) };
  },
};

const plan = (g: string) => JSON.stringify({ justification: 'j', context: 'c', sub_goal: g, tool_name: 'Multiply_Tool' });
const answerFromMemory = (m: { content: string }[]) => `<answer>${/Result: (\d+)/.exec(m[1].content)?.[1] ?? 'unknown'}</answer>`;

function engines(script: Script) {
  return { planner: new ScriptedEngine({ planner: script.planner }, 'planner:test', 'lora-a'), shared: new ScriptedEngine({ ...script, planner: undefined }, 'shared:test') };
}

describe('stored agent sessions', () => {
  it('stores the run, scores it against the reference and broadcasts the reward to its planner calls', async () => {
    const db = freshDb();
    const e = engines({
      analysis: ['Speed times time.'],
      planner: ['nonsense', plan('Multiply 18 by 1.5')],
      executor: ['{"a": 18, "b": 1.5}'],
      verifier: ['STOP'],
      generator: [answerFromMemory],
    });
    const r = await startConversation('How far does Alicia ride in 1.5 hours at 18 mph?', {
      id: 'alicia',
      tools: [multiply],
      engines: e,
      config: { answerTags: true, maxTurns: 3 },
      rollouts: { runId: 'run-1', groupId: 'alicia-q' },
      reward: { kind: 'numeric', reference: 27 },
      dbName: db,
    });
    expect(r.status).toBe('done');
    expect(r.finalAnswer).toBe('27');
    expect(r.reward).toBe(1);
    const conv = await getConversation('alicia', db);
    expect(conv).toMatchObject({ status: 'done', reward: 1, reference: '27', answer: '<answer>27</answer>' });
    expect((await getSteps('alicia', db)).map((s) => s.kind)).toEqual(['analysis', 'error', 'planner', 'executor', 'verifier', 'generator']);
    const rollouts = await getRolloutsByRun('run-1', db);
    expect(rollouts.map((x) => [x.turn, x.reward, x.parsedOk, x.adapterId])).toEqual([[1, 1, false, 'lora-a'], [2, 1, true, 'lora-a']]);
    expect(rollouts[1].completion).toBe(plan('Multiply 18 by 1.5'));
  });

  it('scores a wrong answer 0, and asks the judge for exact-match misses', async () => {
    const db = freshDb();
    const script: Script = { analysis: ['x'], planner: [plan('m')], executor: ['{"a": 2, "b": 2}'], verifier: ['STOP'], generator: ['<answer>Jim Madison</answer>'] };
    const wrong = await startConversation('Who?', { tools: [multiply], engines: engines(script), config: { answerTags: true }, reward: { kind: 'exact', reference: ['james madison'] }, dbName: db });
    expect(wrong.reward).toBe(0);
    const judge = new ScriptedEngine({ other: ['yes'] }, 'judge');
    const judged = await startConversation('Who?', { tools: [multiply], engines: engines(script), config: { answerTags: true }, reward: { kind: 'exact', reference: ['james madison'], judge }, dbName: db });
    expect(judged.reward).toBe(1);
    expect(judge.calls[0].messages[1].content).toContain('Response: Jim Madison');
  });

  it('leaves an interrupted run resumable: marked interrupted on the next start, then finished from storage', async () => {
    const db = freshDb();
    const script: Script = {
      analysis: ['x'],
      planner: [plan('Multiply 6 by 7'), plan('Multiply 42 by 10')],
      executor: ['{"a": 6, "b": 7}', '{"a": 42, "b": 10}'],
      verifier: ['CONTINUE', 'STOP'],
      generator: [(m) => `<answer>${[...m[1].content.matchAll(/Result: (\d+)/g)].map((x) => x[1]).join(',')}</answer>`],
    };
    const ctl = new AbortController();
    const first = engines({ ...script, executor: ['{"a": 6, "b": 7}', { text: '{"a": 42, "b": 10}', delayMs: 60_000 }] });
    const running = startConversation('6*7*10?', { id: 'cut', tools: [multiply], engines: first, signal: ctl.signal, config: { answerTags: true }, rollouts: { runId: 'run-2', groupId: 'g' }, dbName: db });
    while (first.shared.count('executor') < 2) await new Promise((res) => setTimeout(res, 5));
    ctl.abort();
    expect((await running).status).toBe('interrupted');
    expect((await getConversation('cut', db))!.status).toBe('interrupted');
    expect((await getSteps('cut', db)).map((s) => `${s.kind}@${s.turn}`)).toEqual(['analysis@0', 'planner@1', 'executor@1', 'verifier@1', 'planner@2']);
    expect(await markStaleRunsInterrupted(new Set(), db)).toEqual([]); // already marked by the abort

    const second = engines({ ...script, executor: ['{"a": 42, "b": 10}'], verifier: ['STOP'] });
    const r = await resumeConversation('cut', { tools: [multiply], engines: second, config: { answerTags: true }, rollouts: { runId: 'run-2', groupId: 'g' }, reward: { kind: 'numeric', reference: 420 }, dbName: db });
    expect(r.status).toBe('done');
    expect(r.finalAnswer).toBe('42,420');
    expect(second.planner.calls).toHaveLength(0);
    expect((await getConversation('cut', db))!.status).toBe('done');
    expect((await getSteps('cut', db)).map((s) => s.seq)).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
    await expect(resumeConversation('nope', { tools: [], engines: second, dbName: db })).rejects.toThrow("no conversation with id 'nope' to resume");
  });

  it('records the engines a run started on, and will not resume it on others unless told to', async () => {
    const db = freshDb();
    const script: Script = { analysis: ['x'], planner: [plan('Multiply 6 by 7')], executor: ['{"a": 6, "b": 7}'], verifier: ['STOP'], generator: ['<answer>42</answer>'] };
    const ctl = new AbortController();
    const demo = engines({ ...script, executor: [{ text: '{"a": 6, "b": 7}', delayMs: 60_000 }] });
    const running = startConversation('6*7?', { id: 'mixed', tools: [multiply], engines: demo, signal: ctl.signal, dbName: db });
    while (demo.shared.count('executor') < 1) await new Promise((res) => setTimeout(res, 5));
    ctl.abort();
    expect((await running).status).toBe('interrupted');
    expect((await getConversation('mixed', db))!.settings?.engines).toEqual({ planner: 'planner:test', shared: 'shared:test', scripted: true });

    const replies: Record<string, string> = { executor: '{"a": 6, "b": 7}', verifier: 'STOP', generator: '<answer>42</answer>' };
    const real = { planner: new ProbeEngine(() => plan('Multiply 6 by 7'), 'planner:real'), shared: new ProbeEngine((m) => replies[m] ?? '', 'shared:real') };
    const refused = resumeConversation('mixed', { tools: [multiply], engines: real, dbName: db });
    await expect(refused).rejects.toBeInstanceOf(EngineMismatchError);
    await expect(refused).rejects.toThrow(/This run started on the scripted demo \(planner:test \+ shared:test\); the engines now are planner:real \+ shared:real\./);
    // Refusing touched nothing: still interrupted, same steps.
    expect((await getConversation('mixed', db))!.status).toBe('interrupted');
    expect((await getSteps('mixed', db)).map((s) => s.kind)).toEqual(['analysis', 'planner']);

    const r = await resumeConversation('mixed', { tools: [multiply], engines: real, dbName: db, allowEngineChange: true });
    expect(r.status).toBe('done');
    const conv = (await getConversation('mixed', db))!;
    expect(conv.settings?.engines).toEqual({ planner: 'planner:test', shared: 'shared:test', scripted: true });
    expect(conv.settings?.resumedOn).toEqual([{ planner: 'planner:real', shared: 'shared:real', scripted: false }]);
  });

  it('runs a GRPO group whose planner calls carry group-normalized advantages', async () => {
    const db = freshDb();
    // Shared engines across the group: the first run multiplies the right numbers, the second the wrong ones.
    const e = engines({
      analysis: ['x'],
      planner: [plan('Multiply 6 by 7'), plan('Multiply 6 by 8')],
      executor: ['{"a": 6, "b": 7}', '{"a": 6, "b": 8}'],
      verifier: ['STOP'],
      generator: [answerFromMemory],
    });
    const runs = await runGroup('6*7?', { kind: 'numeric', reference: 42 }, 2, { runId: 'grpo-1', groupId: 'q-6x7', tools: [multiply], engines: e, config: { answerTags: true }, dbName: db });
    expect(runs.map((r) => [r.finalAnswer, r.reward])).toEqual([['42', 1], ['48', 0]]);
    const lines = (await exportRunJsonl('grpo-1', db)).trim().split('\n').map((l) => JSON.parse(l) as RolloutJsonLine);
    expect(lines.map((l) => [l.group_id, l.reward])).toEqual([['q-6x7', 1], ['q-6x7', 0]]);
    // rewards 1 and 0: mean 0.5, unbiased std sqrt(0.5)
    expect(lines[0].advantage).toBeCloseTo(0.5 / Math.sqrt(0.5), 5);
    expect(lines[1].advantage).toBeCloseTo(-0.5 / Math.sqrt(0.5), 5);
    await expect(runGroup('q', { kind: 'exact', reference: 'a' }, 0, { runId: 'r', groupId: 'g', tools: [], engines: e, dbName: db })).rejects.toThrow(
      'runGroup: group size must be a positive integer, got 0',
    );
  });
});

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

const seedFor = (i: number) => ({ answerTags: true, maxTurns: 3, generation: { planner: { seed: 5 + i } } });

/** A finished group as stored, without the random conversation ids, in rollout order. */
async function groupView(runs: Array<SessionResult | undefined>, runId: string, db: string) {
  const rollouts = await getRolloutsByRun(runId, db);
  return Promise.all(
    runs.map(async (r) => {
      if (!r) return null;
      const conv = (await getConversation(r.conversationId, db))!;
      return {
        result: [r.status, r.finalAnswer, r.reward, r.turns],
        stored: [conv.title, conv.status, conv.reward, conv.answer],
        steps: (await getSteps(r.conversationId, db)).map((s) => `${s.kind}@${s.turn}`),
        rollouts: rollouts.filter((x) => x.conversationId === r.conversationId).map((x) => [x.groupId, x.turn, x.completion, x.reward, x.tokens.length]),
      };
    }),
  );
}

describe('a GRPO group run concurrently', () => {
  async function multiplyGroup(concurrency: number) {
    const db = freshDb();
    // Calls wait for a second one to overlap them (or 100 ms): without that, one rollout could run ahead alone.
    const engine = new ProbeEngine(byCall, 'probe', concurrency > 1 ? { overlapCalls: 2 } : {});
    const runs = await runGroup('6*7?', { kind: 'numeric', reference: 42 }, 4, { runId: 'grpo', groupId: 'g', tools: [multiply], engines: { planner: engine, shared: engine }, config: seedFor, concurrency, dbName: db });
    return { runs, engine, view: await groupView(runs, 'grpo', db) };
  }

  it('gives every rollout its own config, title and reward, in rollout order, exactly as one at a time', async () => {
    const one = await multiplyGroup(1);
    const three = await multiplyGroup(3);
    expect(one.engine.maxInFlight).toBe(1);
    // The calls of different rollouts overlapped.
    expect(three.engine.maxInFlight).toBeGreaterThan(1);
    expect(three.engine.maxInFlight).toBeLessThanOrEqual(3);
    expect(three.view).toEqual(one.view);
    // Seeds 5..8: 7*5 and 7*7 are odd (one turn), 7*6 and 7*8 even (two turns); only 42 is right.
    expect(three.view.map((v) => v!.result)).toEqual([
      ['done', '35', 0, 1],
      ['done', '42', 1, 2],
      ['done', '49', 0, 1],
      ['done', '56', 0, 2],
    ]);
    expect(three.view.map((v) => v!.stored.slice(0, 3))).toEqual([
      ['g #1', 'done', 0],
      ['g #2', 'done', 1],
      ['g #3', 'done', 0],
      ['g #4', 'done', 0],
    ]);
    // Each conversation's planner calls carry its own seed's plan and its own reward.
    three.view.forEach((v, i) => {
      expect(v!.rollouts.length).toBe(v!.result[3]);
      for (const r of v!.rollouts) expect(r).toEqual(['g', r[1], plan(`Multiply 7 by ${5 + i}`), i === 1 ? 1 : 0, plan(`Multiply 7 by ${5 + i}`).length]);
    });
  });

  it('starts no rollout after an abort and returns the started ones, interrupted', async () => {
    const db = freshDb();
    const engine = new ProbeEngine(byCall);
    engine.hold();
    const ctl = new AbortController();
    const running = runGroup('6*7?', { kind: 'numeric', reference: 42 }, 4, { runId: 'r', groupId: 'g', tools: [multiply], engines: { planner: engine, shared: engine }, config: seedFor, concurrency: 2, signal: ctl.signal, dbName: db });
    while (engine.inFlight < 2) await new Promise((res) => setTimeout(res, 5));
    ctl.abort();
    const runs = await running;
    expect(runs.map((r) => [r.status, r.stopReason])).toEqual([
      ['interrupted', 'aborted'],
      ['interrupted', 'aborted'],
    ]);
    expect(engine.calls.map((c) => c.module)).toEqual(['analysis', 'analysis']);
    const stored = await listConversations(db);
    expect(stored.map((c) => [c.title, c.status]).sort()).toEqual([
      ['g #1', 'interrupted'],
      ['g #2', 'interrupted'],
    ]);
  });

  it('keeps the other rollouts when one throws, and rejects naming it', async () => {
    const db = freshDb();
    const engine = new ProbeEngine(byCall, 'probe', { overlapCalls: 2 });
    // maxTurns 0 makes runAgent throw before any step: the one way a rollout throws without a storage failure.
    const config = (i: number) => (i === 1 ? { ...seedFor(i), maxTurns: 0 } : seedFor(i));
    const err = await runGroup('6*7?', { kind: 'numeric', reference: 49 }, 3, { runId: 'e', groupId: 'g', tools: [multiply], engines: { planner: engine, shared: engine }, config, concurrency: 3, dbName: db }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(GroupRolloutError);
    const e = err as GroupRolloutError;
    expect(e.message).toBe("group 'g': rollout 2 of 3 failed: agent config: maxTurns must be a positive integer, got 0");
    expect(e.rollout).toBe(1);
    expect((e.cause as Error).message).toBe('agent config: maxTurns must be a positive integer, got 0');
    const view = await groupView(e.results, 'e', db);
    expect(view[1]).toBeNull();
    expect([view[0]!.result, view[2]!.result]).toEqual([
      ['done', '35', 0, 1],
      ['done', '49', 1, 1],
    ]);
    expect([view[0]!.stored.slice(0, 3), view[2]!.stored.slice(0, 3)]).toEqual([
      ['g #1', 'done', 0],
      ['g #3', 'done', 1],
    ]);
    expect([view[0]!.rollouts, view[2]!.rollouts]).toEqual([[['g', 1, plan('Multiply 7 by 5'), 0, plan('Multiply 7 by 5').length]], [['g', 1, plan('Multiply 7 by 7'), 1, plan('Multiply 7 by 7').length]]]);
  });

  it('starts no rollout after one has thrown; the running ones finish', async () => {
    const db = freshDb();
    const engine = new ProbeEngine(byCall);
    engine.hold();
    const config = (i: number) => (i === 0 ? { ...seedFor(i), maxTurns: 0 } : seedFor(i));
    const running = runGroup('6*7?', { kind: 'numeric', reference: 42 }, 4, { runId: 'e', groupId: 'g', tools: [multiply], engines: { planner: engine, shared: engine }, config, concurrency: 2, dbName: db }).catch((e: unknown) => e);
    while (engine.inFlight < 1) await new Promise((res) => setTimeout(res, 5));
    engine.release();
    const e = (await running) as GroupRolloutError;
    expect(e).toBeInstanceOf(GroupRolloutError);
    expect(e.rollout).toBe(0);
    expect(e.results.map((r) => r?.finalAnswer ?? null)).toEqual([null, '42', null, null]);
    expect((await listConversations(db)).map((c) => c.title).sort()).toEqual(['g #1', 'g #2']);
  });

  it('rejects a concurrency that is not a positive integer', async () => {
    const engine = new ProbeEngine(byCall);
    for (const bad of [0, 1.5, Number.NaN]) {
      await expect(runGroup('q', { kind: 'exact', reference: 'a' }, 2, { runId: 'r', groupId: 'g', tools: [], engines: { planner: engine, shared: engine }, concurrency: bad, dbName: freshDb() })).rejects.toThrow(
        `runGroup: concurrency must be a positive integer, got ${bad}`,
      );
    }
    expect(engine.calls).toHaveLength(0);
  });

  it('tells the planner how many rollouts may still plan, and gives each the time budget times the number at once', async () => {
    const db = freshDb();
    const announced: number[] = [];
    const planner = Object.assign(new ProbeEngine(byCall, 'planner'), { expectConcurrentCalls: (k: number) => void announced.push(k) });
    const shared = new ProbeEngine(byCall, 'shared');
    const config = (i: number) => ({ ...seedFor(i), timeBudgetMs: 60_000 });
    const runs = await runGroup('6*7?', { kind: 'numeric', reference: 42 }, 4, { runId: 'b', groupId: 'g', tools: [multiply], engines: { planner, shared }, config, concurrency: 3, dbName: db });
    expect(runs.map((r) => r.finalAnswer)).toEqual(['35', '42', '49', '56']);
    // 3 at the start; as rollouts finish their turns the count drops, rising again when rollout 4 takes a
    // lane (when depends on the interleaving); 1 at the end.
    expect(announced[0]).toBe(3);
    expect(announced[announced.length - 1]).toBe(1);
    expect(announced.every((k) => k >= 1 && k <= 3)).toBe(true);
    const calls = announced.length;
    // The budget each ran under is stored with its conversation: 3 x 60 s, its other settings as given.
    for (const [i, r] of runs.entries()) {
      const settings = (await getConversation(r.conversationId, db))!.settings as { config: Record<string, unknown> };
      expect(settings.config).toEqual({ ...seedFor(i), timeBudgetMs: 180_000 });
    }
    const alone = await runGroup('6*7?', { kind: 'numeric', reference: 42 }, 2, { runId: 'b1', groupId: 'g1', tools: [multiply], engines: { planner, shared }, config, dbName: db });
    expect(((await getConversation(alone[1].conversationId, db))!.settings as { config: Record<string, unknown> }).config).toEqual({ ...seedFor(1), timeBudgetMs: 60_000 });
    expect(announced).toHaveLength(calls);
  });
});

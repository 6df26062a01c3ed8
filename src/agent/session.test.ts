// A stored run end to end on fake-indexeddb: conversation record, steps, rollouts with the broadcast reward,
// and an interrupted run resumed from storage.
import 'fake-indexeddb/auto';
import { describe, expect, it } from 'vitest';
import { getConversation, getSteps, listConversations, markStaleRunsInterrupted } from '../store/conversations';
import { getRolloutsByRun } from '../store/rollout-store';
import { ProbeEngine, type ProbeReplyFn } from './probe-engine';
import { ScriptedEngine, type Script } from './scripted-engine';
import { EngineMismatchError } from './engines-used';
import { resumeConversation, startConversation } from './session';
import { answerFromMemory, multiplyPlan as plan, multiplyTool } from '../../tests/support/test-tools';

let n = 0;
const freshDb = () => `session-test-${++n}-${Math.random()}`;

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
      tools: [multiplyTool],
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
    const wrong = await startConversation('Who?', { tools: [multiplyTool], engines: engines(script), config: { answerTags: true }, reward: { kind: 'exact', reference: ['james madison'] }, dbName: db });
    expect(wrong.reward).toBe(0);
    const judge = new ScriptedEngine({ other: ['yes'] }, 'judge');
    const judged = await startConversation('Who?', { tools: [multiplyTool], engines: engines(script), config: { answerTags: true }, reward: { kind: 'exact', reference: ['james madison'], judge }, dbName: db });
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
    const running = startConversation('6*7*10?', { id: 'cut', tools: [multiplyTool], engines: first, signal: ctl.signal, config: { answerTags: true }, rollouts: { runId: 'run-2', groupId: 'g' }, dbName: db });
    while (first.shared.count('executor') < 2) await new Promise((res) => setTimeout(res, 5));
    ctl.abort();
    expect((await running).status).toBe('interrupted');
    expect((await getConversation('cut', db))!.status).toBe('interrupted');
    expect((await getSteps('cut', db)).map((s) => `${s.kind}@${s.turn}`)).toEqual(['analysis@0', 'planner@1', 'executor@1', 'verifier@1', 'planner@2']);
    expect(await markStaleRunsInterrupted(new Set(), db)).toEqual([]); // already marked by the abort

    const second = engines({ ...script, executor: ['{"a": 42, "b": 10}'], verifier: ['STOP'] });
    const r = await resumeConversation('cut', { tools: [multiplyTool], engines: second, config: { answerTags: true }, rollouts: { runId: 'run-2', groupId: 'g' }, reward: { kind: 'numeric', reference: 420 }, dbName: db });
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
    const running = startConversation('6*7?', { id: 'mixed', tools: [multiplyTool], engines: demo, signal: ctl.signal, dbName: db });
    while (demo.shared.count('executor') < 1) await new Promise((res) => setTimeout(res, 5));
    ctl.abort();
    expect((await running).status).toBe('interrupted');
    expect((await getConversation('mixed', db))!.settings?.engines).toEqual({ planner: 'planner:test', shared: 'shared:test', scripted: true });

    const replies: Record<string, string> = { executor: '{"a": 6, "b": 7}', verifier: 'STOP', generator: '<answer>42</answer>' };
    const real = { planner: new ProbeEngine(() => plan('Multiply 6 by 7'), 'planner:real'), shared: new ProbeEngine((m) => replies[m] ?? '', 'shared:real') };
    const refused = resumeConversation('mixed', { tools: [multiplyTool], engines: real, dbName: db });
    await expect(refused).rejects.toBeInstanceOf(EngineMismatchError);
    await expect(refused).rejects.toThrow(/This run started on the scripted demo \(planner:test \+ shared:test\); the engines now are planner:real \+ shared:real\./);
    // Refusing touched nothing: still interrupted, same steps.
    expect((await getConversation('mixed', db))!.status).toBe('interrupted');
    expect((await getSteps('mixed', db)).map((s) => s.kind)).toEqual(['analysis', 'planner']);

    const r = await resumeConversation('mixed', { tools: [multiplyTool], engines: real, dbName: db, allowEngineChange: true });
    expect(r.status).toBe('done');
    const conv = (await getConversation('mixed', db))!;
    expect(conv.settings?.engines).toEqual({ planner: 'planner:test', shared: 'shared:test', scripted: true });
    expect(conv.settings?.resumedOn).toEqual([{ planner: 'planner:real', shared: 'shared:real', scripted: false }]);
  });

});

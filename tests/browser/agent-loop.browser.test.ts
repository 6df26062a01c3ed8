// The whole agent loop in Chromium on scripted engines with real IndexedDB: steps, rollouts and reward
// stored as the run goes, an interruption mid-run, a resume from storage, and the JSON/JSONL exports.
import { describe, expect, it } from 'vitest';
import { resumeConversation, startConversation } from '../../src/agent/session';
import { exportRunJsonl, type RolloutJsonLine } from '../../src/agent/rollouts';
import { deleteConversation, exportConversation, getConversation, getSteps, listConversations, type ConversationExport } from '../../src/store/conversations';
import { scriptedLogprob } from '../../src/agent/scripted-engine';
import { EXPECTED_ANSWER, QUERY, multiplyTool, resumedEngines, scenarioEngines } from '../e2e/pages/agent-scenario';

const DB = `agent-browser-${Date.now()}`;
const common = { tools: [multiplyTool], config: { answerTags: true }, reward: { kind: 'numeric' as const, reference: 420 }, dbName: DB };

describe('agent loop in the browser', () => {
  it('runs to the answer, persisting every step, planner call and the reward', async () => {
    const e = scenarioEngines(false);
    const seen: string[] = [];
    const r = await startConversation(QUERY, { ...common, id: 'full', engines: e, rollouts: { runId: 'b-run', groupId: 'g1' }, onStep: (s) => seen.push(s.kind) });
    expect(r).toMatchObject({ status: 'done', finalAnswer: EXPECTED_ANSWER, reward: 1, turns: 2, stopReason: 'verifier' });
    const stored = await getSteps('full', DB);
    expect(stored.map((s) => s.kind)).toEqual(['analysis', 'planner', 'executor', 'verifier', 'planner', 'executor', 'verifier', 'generator']);
    expect(seen).toEqual(stored.map((s) => s.kind));
    expect(stored.filter((s) => s.kind === 'executor').map((s) => s.data.result)).toEqual(['42', '420']);

    const lines = (await exportRunJsonl('b-run', DB)).trim().split('\n').map((l) => JSON.parse(l) as RolloutJsonLine);
    expect(lines.map((l) => [l.turn, l.reward, l.adapter_id])).toEqual([[1, 1, 'lora-demo'], [2, 1, 'lora-demo']]);
    expect(lines[0].completion[0].content).toBe(JSON.stringify({ justification: 'arithmetic', context: '', sub_goal: 'Multiply 6 by 7', tool_name: 'Multiply_Tool' }));
    expect(lines[0].logprobs[3]).toBe(scriptedLogprob(lines[0].completion_token_ids[3], 3));
    expect(lines[0].advantage).toBe(0); // a group of one conversation carries no signal

    const exported = JSON.parse(await exportConversation('full', DB)) as ConversationExport;
    expect(exported.conversation).toMatchObject({ id: 'full', status: 'done', reward: 1 });
    expect(exported.steps).toHaveLength(8);
  });

  it('stops on interruption with the completed steps stored, then resumes from them', async () => {
    const ctl = new AbortController();
    const e = scenarioEngines(true);
    const running = startConversation(QUERY, { ...common, id: 'cut', engines: e, signal: ctl.signal });
    while (e.shared.count('executor') < 2) await new Promise((res) => setTimeout(res, 10));
    ctl.abort();
    const cut = await running;
    expect(cut.status).toBe('interrupted');
    expect((await getConversation('cut', DB))?.status).toBe('interrupted');
    expect((await getSteps('cut', DB)).map((s) => s.kind)).toEqual(['analysis', 'planner', 'executor', 'verifier', 'planner']);

    const r = await resumeConversation('cut', { ...common, engines: resumedEngines(1) });
    expect(r).toMatchObject({ status: 'done', finalAnswer: EXPECTED_ANSWER, reward: 1 });
    expect((await getSteps('cut', DB)).map((s) => s.seq)).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);

    expect((await listConversations(DB)).map((c) => c.id).sort()).toEqual(['cut', 'full']);
    await deleteConversation('cut', DB);
    expect(await getSteps('cut', DB)).toEqual([]);
    expect((await listConversations(DB)).map((c) => c.id)).toEqual(['full']);
  });
});

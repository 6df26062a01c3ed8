// The phase rules on stored records, including records in the shape stored before the step types existed
// (parsed from JSON, as IndexedDB gives them back): they must still resume and show the next module.
import { describe, expect, it } from 'vitest';
import type { StepRecord } from '../store/records';
import { nextModule, stateFromSteps } from './phases';

// A conversation as stored by the version of 2026-11 (no toolMatch, no errorKind on executor steps).
const STORED = JSON.parse(`[
  {"conversationId":"c","seq":0,"kind":"analysis","turn":0,"startedAt":0,"endedAt":1,"data":{"text":"Needs arithmetic.","engineId":"shared"}},
  {"conversationId":"c","seq":1,"kind":"planner","turn":1,"startedAt":1,"endedAt":2,"data":{"raw":"{}","action":{"justification":"j","context":"","subGoal":"Add 3 and 4","toolName":"python"},"parseMethod":"json","resolvedTool":"python"}},
  {"conversationId":"c","seq":2,"kind":"executor","turn":1,"startedAt":2,"endedAt":3,"data":{"subGoal":"Add 3 and 4","toolName":"python","args":{"code":"print(3+4)"},"ok":true,"result":"7"}},
  {"conversationId":"c","seq":3,"kind":"verifier","turn":1,"startedAt":3,"endedAt":4,"data":{"raw":"CONTINUE","verdict":"CONTINUE","explanation":"check","parseMethod":"fields"}},
  {"conversationId":"c","seq":4,"kind":"error","turn":2,"startedAt":4,"endedAt":5,"data":{"module":"planner","message":"unusable output"}}
]`) as StepRecord[];

describe('phase rules', () => {
  it('names the module after each kind of step', () => {
    expect(STORED.map(nextModule)).toEqual(['planner', 'executor', 'verifier', 'planner', null]);
    const stop = { ...STORED[3], data: { ...STORED[3].data, verdict: 'STOP' } } as StepRecord;
    expect(nextModule(stop)).toBe('generator');
  });

  it('rebuilds where a stored conversation stands, whatever order the steps come in', () => {
    const s = stateFromSteps([...STORED].reverse());
    expect(s).toMatchObject({ phase: 'plan', turn: 3, analysis: 'Needs arithmetic.', nextSeq: 5, turnsUsed: 2, resolvedTool: 'python' });
    expect(s.memory).toEqual([
      { turn: 1, subGoal: 'Add 3 and 4', toolName: 'python', args: { code: 'print(3+4)' }, result: '7', ok: true },
      { turn: 2, subGoal: '', toolName: '', args: null, result: '', ok: false, error: 'planner: unusable output' },
    ]);
    expect(stateFromSteps(STORED.slice(0, 2))).toMatchObject({ phase: 'execute', turn: 1, action: { subGoal: 'Add 3 and 4', toolName: 'python' } });
  });
});

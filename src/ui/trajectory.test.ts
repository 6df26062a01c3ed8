import { describe, expect, it } from 'vitest';
import type { StepRecord } from '../store/records';
import { RAW_SHOWN, toolUsage, trajectoryFromSteps } from './trajectory';

const step = (seq: number, kind: StepRecord['kind'], turn: number, ms: number, data: Record<string, unknown>): StepRecord => ({ conversationId: 'c', seq, kind, turn, startedAt: 1000 * seq, endedAt: 1000 * seq + ms, data }) as unknown as StepRecord;

// A stored run: analysis; turn 1 python (fails); turn 2 planner output unusable; turn 3 wikipedia then STOP.
const steps: StepRecord[] = [
  step(0, 'analysis', 0, 5, { text: 'needs a lookup' }),
  step(1, 'planner', 1, 10, { action: { subGoal: 'compute', toolName: 'Python' }, resolvedTool: 'python' }),
  step(2, 'executor', 1, 20, { subGoal: 'compute', toolName: 'python', args: { code: '1/0' }, ok: false, result: '', error: 'ZeroDivisionError' }),
  step(3, 'verifier', 1, 3, { verdict: 'CONTINUE', explanation: 'failed' }),
  step(4, 'error', 2, 7, { module: 'planner', message: 'no JSON' }),
  step(6, 'planner', 3, 10, { action: { subGoal: 'look up', toolName: 'wikipedia' }, resolvedTool: 'wikipedia' }),
  step(5, 'verifier', 2, 2, { verdict: 'CONTINUE', explanation: '' }),
  step(7, 'executor', 3, 30, { subGoal: 'look up', toolName: 'wikipedia', args: { query: 'x' }, ok: true, result: 'found' }),
  step(8, 'verifier', 3, 1, { verdict: 'STOP', explanation: 'done' }),
  step(9, 'generator', 3, 40, { text: 'The answer is <answer>x</answer>', finalAnswer: 'x' }),
];

describe('trajectoryFromSteps', () => {
  it('groups steps by turn in seq order with sub-goal, tool, arguments, result, verdict, errors and time', () => {
    const t = trajectoryFromSteps(steps);
    expect(t.analysis).toBe('needs a lookup');
    expect(t.answer).toBe('x');
    expect(t.totalMs).toBe(5 + 10 + 20 + 3 + 7 + 10 + 2 + 30 + 1 + 40);
    expect(t.turns.map((v) => v.turn)).toEqual([1, 2, 3]);
    expect(t.turns[0]).toMatchObject({ subGoal: 'compute', tool: 'python', args: { code: '1/0' }, ok: false, verdict: 'CONTINUE', errors: ['ZeroDivisionError'], ms: 33 });
    expect(t.turns[1]).toMatchObject({ errors: ['planner: no JSON'], verdict: 'CONTINUE', ms: 9 });
    expect(t.turns[2]).toMatchObject({ subGoal: 'look up', tool: 'wikipedia', result: 'found', ok: true, verdict: 'STOP', explanation: 'done', errors: [], ms: 41 });
  });

  it("keeps what the planner wrote when its reply could not be used, the first RAW_SHOWN characters of it", () => {
    const reply = 'I think we should use <b>python</b> to compute it';
    const long = 'x'.repeat(RAW_SHOWN + 10);
    const t = trajectoryFromSteps([
      step(0, 'error', 1, 1, { module: 'planner', message: 'planner output has no usable sub_goal and tool_name', errorKind: 'unusable-output', raw: reply }),
      step(1, 'error', 2, 1, { module: 'planner', message: 'planner engine failed: boom', errorKind: 'engine-error' }),
      step(2, 'error', 3, 1, { module: 'planner', message: 'planner output has no usable sub_goal and tool_name', errorKind: 'unusable-output', raw: long }),
    ]);
    expect(t.turns.map((v) => v.unusable)).toEqual([[{ module: 'planner', raw: reply, length: reply.length }], [], [{ module: 'planner', raw: long.slice(0, RAW_SHOWN), length: long.length }]]);
  });

  it('counts executor tool calls that had arguments, and collects errors', () => {
    expect(toolUsage(steps)).toEqual({ toolCalls: { python: 1, wikipedia: 1 }, errors: ['turn 1: ZeroDivisionError', 'turn 2 planner: no JSON'] });
  });
});

import { describe, expect, it } from 'vitest';
import type { StepRecord } from '../../store/records';
import type { Live } from './conversation-state';
import { afterStep, startLive, withToken } from './live-line';

const step = (kind: StepRecord['kind'], turn: number, seq: number, data: Record<string, unknown> = {}): StepRecord => ({ conversationId: 'c', seq, kind, turn, startedAt: 0, endedAt: 0, data }) as unknown as StepRecord;

describe('the live line', () => {
  it('streams a call’s tokens, a new call starting its text afresh and the generator’s being the answer too', () => {
    let l = startLive('c', new AbortController(), false, 0);
    expect(l).toMatchObject({ id: 'c', module: null, turn: 0, text: '', answer: '', waitingForStorage: true, calls: [] });
    l = withToken(withToken(l, 'planner', 1, 'a', 10), 'planner', 1, 'b', 20);
    expect(l).toMatchObject({ module: 'planner', turn: 1, text: 'ab', answer: '' });
    expect(l.call.firstTokenAt).toBe(10);
    l = withToken(withToken(l, 'generator', 1, 'x', 30), 'generator', 1, 'y', 40);
    expect(l).toMatchObject({ module: 'generator', text: 'xy', answer: 'xy' });
  });

  it('after a step, lists the call it ended and names the next before its first token', () => {
    const plan = step('planner', 1, 1, { action: { subGoal: 's', toolName: 'echo' } });
    let l: Live = { ...withToken(startLive('c', new AbortController(), true, 0), 'planner', 1, 'p', 5), toolNote: 'busy' };
    l = afterStep(l, [step('analysis', 0, 0), plan], 3, 50);
    expect(l).toMatchObject({ module: 'executor', turn: 1, text: '', toolNote: null, resuming: false });
    expect(l.calls.map((c) => [c.module, c.turn])).toEqual([['planner', 1]]);
    expect(l.call.startedAt).toBe(50);
    // The last step: nothing comes next, the line keeps its module and text.
    const done = afterStep({ ...l, module: 'generator', text: 'answer' }, [step('analysis', 0, 0), plan, step('executor', 1, 2), step('generator', 1, 3, { text: 'a' })], 1, 60);
    expect(done).toMatchObject({ module: 'generator', text: 'answer' });
    expect(done.calls.map((c) => c.module)).toEqual(['planner', 'generator']);
  });
});

// The trajectory as the page shows it, in Chromium: a turn whose planner reply could not be used offers what
// the planner wrote, behind a disclosure and as text (model output is never markup).
import { render } from 'lit';
import { describe, expect, it } from 'vitest';
import type { StepRecord } from '../store/records';
import { RAW_SHOWN, renderTrajectory, trajectoryFromSteps } from './trajectory';

const step = (seq: number, kind: StepRecord['kind'], turn: number, data: Record<string, unknown>): StepRecord =>
  ({ conversationId: 'c', seq, kind, turn, startedAt: seq, endedAt: seq + 1, data }) as unknown as StepRecord;

function shown(steps: StepRecord[]): HTMLElement {
  const el = document.createElement('div');
  document.body.append(el);
  render(renderTrajectory(trajectoryFromSteps(steps)), el);
  return el;
}

const unusable = (seq: number, turn: number, raw?: string) =>
  step(seq, 'error', turn, { module: 'planner', message: 'planner output has no usable sub_goal and tool_name', errorKind: 'unusable-output', ...(raw === undefined ? {} : { raw }) });

describe('trajectory view', () => {
  it("shows what the planner wrote behind 'What the planner wrote', as text", () => {
    const reply = 'Let me think.\n<img src=x onerror="window.__hit = 1"><b>python</b> {"tool": ';
    const el = shown([unusable(0, 1, reply), step(1, 'verifier', 1, { verdict: 'CONTINUE', explanation: '' })]);
    const details = el.querySelectorAll('details');
    expect(details.length).toBe(1);
    const d = details[0]!;
    expect(d.open).toBe(false);
    expect(d.querySelector('summary')?.textContent).toBe('What the planner wrote');
    expect(d.querySelector('pre')?.textContent).toBe(reply);
    expect(d.querySelectorAll('img, b').length).toBe(0);
    expect(el.textContent).toContain('planner output has no usable sub_goal and tool_name');
    el.remove();
  });

  it('says when the reply was empty, cut, or not stored (older records, engine failures)', () => {
    const long = 'y'.repeat(RAW_SHOWN + 5);
    const el = shown([unusable(0, 1, '  '), unusable(1, 2, long), unusable(2, 3)]);
    const turns = [...el.querySelectorAll('li.turn')];
    expect(turns[0]!.querySelector('details')?.textContent).toContain('(nothing: the reply was empty)');
    expect(turns[1]!.querySelector('details pre')?.textContent).toBe('y'.repeat(RAW_SHOWN));
    expect(turns[1]!.querySelector('details')?.textContent).toContain(`(its first ${RAW_SHOWN} of ${RAW_SHOWN + 5} characters)`);
    expect(turns[2]!.querySelector('details')).toBeNull();
    el.remove();
  });
});

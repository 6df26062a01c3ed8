import { describe, expect, it } from 'vitest';
import type { StepRecord } from '../store/records';
import { callOfStep, callStat, conversationGroup, nextCall, startCall, tokenArrived, upcomingCall } from '../controllers/conversation/module-calls';
import { executorPreview, formatCall, formatLiveCall, liveHeading, livePreview, plannerPreview, oneLine, tailLine, verifierPreview } from './chat-view';

const step = (kind: StepRecord['kind'], turn: number, data: Record<string, unknown> = {}): StepRecord => ({ conversationId: 'c', seq: 0, kind, turn, startedAt: 0, endedAt: 0, data }) as unknown as StepRecord;

describe('chat-view', () => {
  it('times a call: waiting, first token, rate from the streamed pieces (≈) or the engine’s own count', () => {
    let c = startCall(1000);
    expect(formatLiveCall(c, 3400)).toBe('2.4 s · waiting for the first token');
    c = tokenArrived(c, 2000);
    for (let t = 2100; t <= 2500; t += 100) c = tokenArrived(c, t);
    expect(formatLiveCall(c, 2600)).toBe('1.6 s · first token after 1.0 s · 6 tokens, 10 tokens/s');
    // web-llm reports no token ids: the pieces stand in, marked ≈.
    expect(formatCall(callStat('generator', 2, c, 2600))).toBe('Answering (turn 2): 1.6 s, first token after 1.0 s, ≈6 tokens at 10 tokens/s');
    // The planner counts its tokens and times its decode.
    const planned = callStat('planner', 1, c, 2600, step('planner', 1, { completionTokenCount: 50, timings: { prefillMs: 900, decodeMs: 2000 } }));
    expect(formatCall(planned)).toBe('Planning (turn 1): 1.6 s, first token after 1.0 s, 50 tokens at 25 tokens/s');
    expect(formatCall(callStat('executor', 1, startCall(0), 300))).toBe('Calling a tool (turn 1): 0.3 s, no tokens streamed');
    // The prompt's length says what the wait for the first token is spent on, live and once done.
    expect(formatLiveCall({ ...startCall(0), promptTokens: 2345 }, 8200)).toBe('8.2 s · waiting for the first token (reading a prompt of 2,345 tokens)');
    const read = callStat('planner', 2, c, 2600, step('error', 2, { module: 'planner', errorKind: 'unusable-output', completionTokenCount: 50, promptTokenCount: 2345, timings: { prefillMs: 900, decodeMs: 2000, cachedPromptTokens: 2000 } }), 'unusable');
    expect(formatCall(read)).toBe('Planning (turn 2): 1.6 s, first token after 1.0 s, 50 tokens at 25 tokens/s, prompt 2,345 tokens (2,000 reused) — its reply could not be used');
  });

  it('heads the live line with the call, and what its tool says it is doing', () => {
    expect(liveHeading(null, 0)).toBe('Starting…');
    expect(liveHeading('planner', 2)).toBe('Planning (turn 2)…');
    expect(liveHeading('executor', 1, 'starting Python (first use)')).toBe('Calling a tool (turn 1): starting Python (first use)…');
  });

  it("shows the executor's streamed output as the tool and a one-line summary of its arguments, never raw", () => {
    expect(executorPreview('{"args": {"code": "import math\nprint(math.pi)"}}', 'python')).toBe('python: code = import math print(math.pi)');
    expect(executorPreview('Sure: {"query": "x", "limit": 3}', null)).toBe('query = x, limit = 3');
    // Still streaming: what has come so far, repaired; text with no object in it, only its length.
    expect(executorPreview('{"args": {"code": "pri', 'python')).toBe('python: code = pri');
    expect(executorPreview('```python\nprint(1', 'python')).toBe('python: writing the arguments (17 characters)');
    // Long or hostile text stays one short line: no line breaks, no direction overrides.
    const long = executorPreview(`{"code": "${'x'.repeat(500)}\u202e<b>"}`, 'python\n\u202eevil');
    expect(long).toHaveLength(120);
    expect(long).toMatch(/^python evil: code = x+…$/);
  });

  it("shows the planner's streamed reply as the tool and sub-goal chosen so far, before them its reasoning", () => {
    const reply = '{"justification": "Arithmetic: Python computes it.", "context": "", "sub_goal": "Compute 6*7", "tool_name": "python"}';
    expect(plannerPreview(reply)).toBe('tool: python · sub-goal: Compute 6*7');
    // Every prefix reads sensibly: reasoning first, then the fields as they arrive, never raw JSON.
    expect(plannerPreview(reply.slice(0, 40))).toBe('reasoning: Arithmetic: Python co');
    expect(plannerPreview(reply.slice(0, reply.indexOf('Compute') + 4))).toBe('tool: … · sub-goal: Comp');
    expect(plannerPreview(reply.slice(0, 5))).toBe('writing the plan (5 characters)');
    // Once the reasoning shows, something chosen stays on the line (no flicking back between fields).
    const shown = Array.from({ length: reply.length }, (_, n) => plannerPreview(reply.slice(0, n + 1)));
    expect(shown.filter((t) => /[{}"]/.test(t))).toEqual([]);
    const firstReasoning = shown.findIndex((t) => t.startsWith('reasoning: '));
    expect(firstReasoning).toBeGreaterThan(0);
    expect(shown.slice(firstReasoning).filter((t) => t.startsWith('writing the plan'))).toEqual([]);
    // Fenced, as Qwen often writes it: not a backtick or brace on the line at any point.
    const fenced = '```json\n{\n  "justification": "Arithmetic",\n  "sub_goal": "Compute 6*7",\n  "tool_name": "Python_Coder_Tool"\n}\n```';
    const fencedShown = Array.from({ length: fenced.length }, (_, n) => plannerPreview(fenced.slice(0, n + 1)));
    expect(fencedShown.filter((t) => /[`{}"]/.test(t))).toEqual([]);
    expect(fencedShown.at(-1)).toBe('tool: Python_Coder_Tool · sub-goal: Compute 6*7');
    const verdict = '```json\n{"explanation": "Memory has 42.", "verdict": "STOP"}\n```';
    expect(Array.from({ length: verdict.length }, (_, n) => verifierPreview(verdict.slice(0, n + 1))).filter((t) => /[`{}"]/.test(t))).toEqual([]);
    // Labelled fields (the paper's format), and prose: its newest part, on one line.
    expect(plannerPreview('Justification: needs a search\nSub-Goal: find the capital\nTool Name: wikipedia')).toBe('tool: wikipedia · sub-goal: find the capital');
    expect(plannerPreview(`I think ${'very '.repeat(60)}carefully\nnow`)).toMatch(/^….* carefully now$/);
    expect(plannerPreview(`I think ${'very '.repeat(60)}carefully`)).toHaveLength(120);
    // Hostile text stays one line without direction overrides.
    expect(plannerPreview('{"tool_name": "py\u202ethon\n<b>", "sub_goal": "x"}')).toBe('tool: py thon <b> · sub-goal: x');
  });

  it("shows the verifier's verdict once written, with its explanation", () => {
    expect(verifierPreview('{"explanation": "A tool answered.", "verdict": "STOP"}')).toBe('STOP: A tool answered.');
    expect(verifierPreview('{"verdict": "CONTINUE"}')).toBe('CONTINUE');
    // Not decided yet: the explanation so far, or how much is written; prose as it is.
    expect(verifierPreview('{"explanation": "The result')).toBe('weighing: The result');
    expect(verifierPreview('{"expl')).toBe('writing the verdict (6 characters)');
    expect(verifierPreview('The memory holds 42, so STOP')).toBe('The memory holds 42, so STOP');
    const reply = '{"explanation": "A tool answered.", "verdict": "STOP"}';
    const shown = Array.from({ length: reply.length }, (_, n) => verifierPreview(reply.slice(0, n + 1)));
    expect(shown.filter((t) => /[{}"]/.test(t))).toEqual([]);
    expect(livePreview('generator', 'the answer', null)).toBe('');
    expect(livePreview('executor', '{"args": {"code": "1"}}', 'python')).toBe('python: code = 1');
    expect(livePreview('analysis', 'line one\n\nline two', null)).toBe('line one line two');
    expect(tailLine('abcdef', 4)).toBe('…def');
  });

  it('never cuts an emoji in half when it shortens a line (half a surrogate pair shows as U+FFFD)', () => {
    const lone = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;
    const text = 'ab🙂cd🙂🙂ef🙂';
    for (let max = 2; max < text.length; max++) {
      for (const shown of [tailLine(text, max), oneLine(text, max), livePreview('analysis', text.repeat(200), null)]) expect(shown).not.toMatch(lone);
      expect(tailLine(text, max).length).toBeLessThanOrEqual(max);
      expect(oneLine(text, max).length).toBeLessThanOrEqual(max);
    }
    expect(tailLine(text, 4)).toBe('…f🙂');
    expect(tailLine(text, 3)).toBe('…🙂');
    expect(tailLine('x🙂ab', 4)).toBe('…ab');
    expect(oneLine('ab🙂cd', 4)).toBe('ab…');
    expect(oneLine('ab🙂cd', 5)).toBe('ab🙂…');
  });

  it('says which call comes next and where a conversation belongs', () => {
    expect(nextCall(step('analysis', 0))).toEqual({ module: 'planner', turn: 1 });
    expect(nextCall(step('verifier', 2, { verdict: 'CONTINUE' }))).toEqual({ module: 'planner', turn: 3 });
    expect(nextCall(step('executor', 3), 3)).toEqual({ module: 'generator', turn: 3 });
    // The steps so far, in order (seq), as the loop stored them.
    const run = (...st: StepRecord[]) => st.map((x, seq) => ({ ...x, seq }) as StepRecord);
    const plan = step('planner', 1, { action: { subGoal: 's', toolName: 'echo' } });
    expect(upcomingCall([])).toEqual({ module: 'analysis', turn: 0 });
    expect(upcomingCall(run(step('analysis', 0)))).toEqual({ module: 'planner', turn: 1 });
    expect(upcomingCall(run(step('analysis', 0), plan))).toEqual({ module: 'executor', turn: 1 });
    const turn1 = run(step('analysis', 0), plan, step('executor', 1), step('verifier', 1, { verdict: 'CONTINUE' }));
    expect(upcomingCall(turn1)).toEqual({ module: 'planner', turn: 2 });
    expect(upcomingCall(run(...turn1.slice(0, 3), step('verifier', 1, { verdict: 'STOP' })))).toEqual({ module: 'generator', turn: 1 });
    // An unusable plan goes on to the next turn's planner, and after the last turn to the answer.
    const unusable = step('error', 1, { module: 'planner', message: 'no sub_goal', errorKind: 'unusable-output' });
    expect(upcomingCall(run(step('analysis', 0), unusable), 3)).toEqual({ module: 'planner', turn: 2 });
    expect(upcomingCall(run(step('analysis', 0), unusable), 1)).toEqual({ module: 'generator', turn: 1 });
    // The last turn asks no verifier: its tool call is followed by the answer.
    expect(upcomingCall(run(step('analysis', 0), plan, step('executor', 1)), 3)).toEqual({ module: 'verifier', turn: 1 });
    expect(upcomingCall(run(step('analysis', 0), plan, step('executor', 1)), 1)).toEqual({ module: 'generator', turn: 1 });
    expect(upcomingCall(run(step('analysis', 0), plan, step('executor', 1), step('generator', 1, { text: 'a' })), 1)).toBeNull();
    // A failed call is a call: listed as its module's, with how it ended.
    expect(callOfStep(unusable)).toEqual({ module: 'planner', outcome: 'unusable' });
    expect(callOfStep(step('error', 2, { module: 'verifier', message: 'x', errorKind: 'engine-error' }))).toEqual({ module: 'verifier', outcome: 'failed' });
    expect(callOfStep(plan)).toEqual({ module: 'planner' });
    expect(liveHeading('planner', 3, null, true)).toBe('Resuming at turn 3: planning…');
    expect(liveHeading('analysis', 0, null, true)).toBe('Resuming at the start: analysing the query…');
    expect(liveHeading(null, 0, null, true)).toBe('Resuming…');
    const conv = { id: 'x', title: 't', createdAt: 0, updatedAt: 0, status: 'done' as const, query: 'q' };
    expect(conversationGroup({ ...conv, settings: { rollouts: null } })).toBe('chat');
    expect(conversationGroup({ ...conv, reference: '"4"' })).toBe('experiment');
    expect(conversationGroup({ ...conv, settings: { experiment: { id: 'e' } } })).toBe('experiment');
    expect(conversationGroup({ ...conv, reference: '"4"', settings: { training: true } })).toBe('training');
  });
});

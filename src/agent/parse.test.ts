import { describe, expect, it } from 'vitest';
import { Rng } from '../util/rng';
import type { ToolCard } from '../tools/tool';
import {
  extractAnswerTag,
  extractJson,
  matchToolName,
  parsePlannerOutput,
  plannerDraft,
  parseToolArgs,
  parseVerdict,
  parseYesNo,
  verdictDraft,
} from './parse';

const TOOLS = ['Python_Coder_Tool', 'Wikipedia_Search_Tool', 'Base_Generator_Tool', 'Web_Search_Tool'];

const card = (over: Partial<ToolCard['input']> = {}): ToolCard => ({
  name: 'Calc_Tool',
  description: 'adds',
  input: {
    type: 'object',
    properties: {
      expression: { type: 'string', description: 'what to compute' },
      precision: { type: 'integer', description: 'digits' },
      exact: { type: 'boolean', description: 'exact arithmetic' },
      mode: { type: 'string', description: 'mode', enum: ['fast', 'slow'] },
    },
    required: ['expression'],
    ...over,
  },
  output: 'a number',
  limitations: [],
  examples: [],
  usesNetwork: false,
});

describe('extractJson', () => {
  it('reads bare, fenced, trailing-text and slightly broken JSON', () => {
    expect(extractJson('{"a": 1}')).toEqual({ a: 1 });
    expect(extractJson('Sure! ```json\n{"a": "x"}\n``` hope this helps')).toEqual({ a: 'x' });
    expect(extractJson('{"a": {"b": "}"}} and then {"c": 2}')).toEqual({ a: { b: '}' } });
    expect(extractJson("{'a': 'b', c: 3,}")).toEqual({ a: 'b', c: 3 });
    expect(extractJson('{"flag": True, "none": None}')).toEqual({ flag: true, none: null });
    // Cut off by the token limit mid-object.
    expect(extractJson('{"sub_goal": "find x", "tool_name": "Web')).toEqual({ sub_goal: 'find x', tool_name: 'Web' });
    // ... inside an escape (dropped), inside a key or after its colon (the member dropped), or in a nested object.
    expect(extractJson('{"tool_name": "python", "sub_goal": "say \\')).toEqual({ tool_name: 'python', sub_goal: 'say ' });
    expect(extractJson('{"a": "x\\\\')).toEqual({ a: 'x\\' });
    expect(extractJson('{"a": "x\\u00')).toEqual({ a: 'x' });
    expect(extractJson('{"tool_name": "python", "sub_goal": "s", "cont')).toEqual({ tool_name: 'python', sub_goal: 's' });
    expect(extractJson('{"tool_name": "python", "sub_goal": "s", "context": ')).toEqual({ tool_name: 'python', sub_goal: 's' });
    expect(extractJson('{"args": {"query": "x", "max_results": ')).toEqual({ args: { query: 'x' } });
    expect(extractJson('no braces here')).toBeNull();
    expect(extractJson('[1, 2]')).toBeNull();
  });
});

describe('parsePlannerOutput', () => {
  it('takes JSON with any spelling of the keys', () => {
    const r = parsePlannerOutput(
      'Here is my plan:\n```json\n{"Justification": "need facts", "context": "Q about Paris", "Sub-Goal": "Find the population of Paris", "Tool_Name": "Wikipedia_Search_Tool"}\n```',
    );
    expect(r).toEqual({
      ok: true,
      method: 'json',
      action: { justification: 'need facts', context: 'Q about Paris', subGoal: 'Find the population of Paris', toolName: 'Wikipedia_Search_Tool' },
    });
  });

  it('falls back to labelled fields, with markdown', () => {
    const r = parsePlannerOutput(
      '**Justification:** the tool computes.\n**Context:** numbers 3 and 4\n**Sub-Goal:** Multiply 3 by 4\n**Tool Name:** Python_Coder_Tool\n',
    );
    expect(r.ok && r.method).toBe('fields');
    expect(r.ok && r.action).toEqual({
      justification: 'the tool computes.',
      context: 'numbers 3 and 4',
      subGoal: 'Multiply 3 by 4',
      toolName: 'Python_Coder_Tool',
    });
  });

  it('uses the single tool a reply mentions when it names none in a field', () => {
    const r = parsePlannerOutput('Sub-goal: compute 2+2\nI will use Python_Coder_Tool for this.', TOOLS);
    expect(r.ok && r.action.toolName).toBe('Python_Coder_Tool');
    const two = parsePlannerOutput('Sub-goal: x\nPython_Coder_Tool or Web_Search_Tool', TOOLS);
    expect(two.ok).toBe(false);
  });

  it('reports what is missing when nothing is usable', () => {
    const r = parsePlannerOutput('I like turtles.');
    expect(r).toEqual({ ok: false, method: 'default', error: 'planner output has no usable sub_goal and tool_name' });
    const r2 = parsePlannerOutput('{"sub_goal": "look it up"}');
    expect(!r2.ok && r2.error).toBe('planner output has no usable tool_name');
  });
});

describe('plannerDraft', () => {
  it('reads the fields of a reply still being written, JSON first, then labelled fields', () => {
    expect(plannerDraft('{"justification": "needs math", "sub_goal": "Comp')).toEqual({ justification: 'needs math', subGoal: 'Comp', toolName: '' });
    expect(plannerDraft('{"reason": "r"} {"tool": "Python_Coder_Tool", "goal": "g"}')).toEqual({ justification: 'r', subGoal: 'g', toolName: 'Python_Coder_Tool' });
    expect(plannerDraft('Justification: because\nSub-Goal: look it up\n\nmore\nTool Name: **Wikipedia_Search_Tool**')).toEqual({ justification: 'because', subGoal: 'look it up', toolName: 'Wikipedia_Search_Tool' });
    expect(plannerDraft('I am thinking')).toEqual({ justification: '', subGoal: '', toolName: '' });
  });
});

describe('matchToolName', () => {
  it('matches exact, loose, contained and misspelled names, and refuses ambiguous ones', () => {
    expect(matchToolName('Python_Coder_Tool', TOOLS)).toEqual({ name: 'Python_Coder_Tool', exact: true });
    expect(matchToolName('python coder', TOOLS)).toEqual({ name: 'Python_Coder_Tool', exact: false });
    expect(matchToolName('Wikipedia', TOOLS)).toEqual({ name: 'Wikipedia_Search_Tool', exact: false });
    expect(matchToolName('Wikipedai_Serach_Tool', TOOLS)).toEqual({ name: 'Wikipedia_Search_Tool', exact: false });
    expect(matchToolName('Search', TOOLS)).toBeNull(); // in both Wikipedia_Search and Web_Search
    expect(matchToolName('Calculator', TOOLS)).toBeNull();
    expect(matchToolName('', TOOLS)).toBeNull();
  });
});

describe('parseToolArgs', () => {
  it('accepts flat and wrapped JSON, coerces types, drops unknown keys', () => {
    const r = parseToolArgs('{"tool_name": "Calc_Tool", "args": {"Expression": "2+2", "precision": "3", "exact": "true", "color": "red"}}', card());
    expect(r).toEqual({ ok: true, method: 'json', args: { expression: '2+2', precision: 3, exact: true }, dropped: ['color'] });
    expect(parseToolArgs('{"expression": 7}', card())).toMatchObject({ ok: true, args: { expression: '7' } });
  });

  it('rejects wrong types, enum values and missing required arguments with a message naming them', () => {
    expect(parseToolArgs('{"expression": "1", "precision": 2.5}', card())).toMatchObject({
      ok: false,
      error: "tool 'Calc_Tool': field 'precision' must be an integer, got 2.5",
    });
    expect(parseToolArgs('{"expression": "1", "mode": "medium"}', card())).toMatchObject({
      ok: false,
      error: 'tool \'Calc_Tool\': field \'mode\' must be one of "fast", "slow", got "medium"',
    });
    expect(parseToolArgs('{"precision": 2}', card())).toMatchObject({ ok: false, error: "tool 'Calc_Tool': missing required field 'expression'" });
  });

  it('falls back to "name: value" lines, then to a fenced block for a single string argument', () => {
    expect(parseToolArgs('expression: 6*7\nprecision: 2', card())).toEqual({
      ok: true,
      method: 'fields',
      args: { expression: '6*7', precision: 2 },
      dropped: [],
    });
    expect(parseToolArgs('Run this:\n```python\nprint(6*7)\n```', card())).toEqual({
      ok: true,
      method: 'default',
      args: { expression: 'print(6*7)' },
      dropped: [],
    });
    expect(parseToolArgs('no idea', card())).toEqual({ ok: false, method: 'default', error: 'no arguments for Calc_Tool found in the executor output' });
  });
});

describe('parseVerdict', () => {
  it('reads JSON, then the last verdict word, then defaults to CONTINUE', () => {
    expect(parseVerdict('{"explanation": "enough", "verdict": "STOP"}')).toEqual({ verdict: 'STOP', method: 'json', explanation: 'enough' });
    expect(parseVerdict('We could CONTINUE, but the memory answers it.\nConclusion: STOP').verdict).toBe('STOP');
    expect(parseVerdict('Conclusion: continue').verdict).toBe('CONTINUE');
    expect(parseVerdict('hmm')).toEqual({ verdict: 'CONTINUE', method: 'default', explanation: '' });
  });
});

describe('verdictDraft', () => {
  it('reads the verdict once written, and the explanation so far', () => {
    expect(verdictDraft('{"explanation": "Enough.", "verdict": "STOP"}')).toEqual({ verdict: 'STOP', explanation: 'Enough.' });
    expect(verdictDraft('{"reason": "More is needed", "decision": "continue"}')).toEqual({ verdict: 'CONTINUE', explanation: 'More is needed' });
    expect(verdictDraft('{"explanation": "The res')).toEqual({ verdict: null, explanation: 'The res' });
    // Prose is not a draft: the word STOP in text is parseVerdict's last resort, not something to show as decided.
    expect(verdictDraft('I would STOP here')).toEqual({ verdict: null, explanation: '' });
  });
});

describe('extractAnswerTag and parseYesNo', () => {
  it('takes the last answer tag, or an unclosed one to the end', () => {
    expect(extractAnswerTag('think <answer>a</answer> more <answer> Paris </answer>')).toBe('Paris');
    expect(extractAnswerTag('so <ANSWER>42')).toBe('42');
    expect(extractAnswerTag('42')).toBeNull();
  });
  it('reads yes and no in several forms', () => {
    expect(parseYesNo('Yes.')).toBe(true);
    expect(parseYesNo('{"answer": "no"}')).toBe(false);
    expect(parseYesNo('{"correct": true}')).toBe(true);
    expect(parseYesNo('The answers are equivalent')).toBe(true);
    expect(parseYesNo('The response is incorrect')).toBe(false);
    expect(parseYesNo('maybe')).toBeNull();
  });
});

describe('parsers on random input', () => {
  const pieces = ['{', '}', '"', "'", ':', ',', '```', '```json\n', '\n', 'Sub-Goal:', 'Tool:', 'tool_name', 'STOP', 'CONTINUE',
    '<answer>', '</answer>', '\\', 'null', 'True', '[', ']', ' ', 'Python_Coder_Tool', 'expression', '=', '**', '\u0000', '😀', '1e999'];

  function randomText(rng: Rng): string {
    let s = '';
    const n = rng.int(60);
    for (let i = 0; i < n; i++) {
      s += rng.next() < 0.5 ? pieces[rng.int(pieces.length)] : String.fromCharCode(rng.int(0x2fff));
    }
    return s;
  }

  it('gets through runaway generations (long repeats of structure characters)', () => {
    const c = card();
    const runaway = ['*'.repeat(40_000), ' '.repeat(40_000) + 'Sub-Goal: x', '{'.repeat(20_000), '```'.repeat(10_000), '"'.repeat(40_000),
      '{"a": '.repeat(5_000), '\n- '.repeat(10_000) + 'Tool: adder', 'Sub-Goal: ' + 'a'.repeat(100_000)];
    for (const t of runaway) {
      expect(parsePlannerOutput(t, TOOLS).ok).toBe(false);
      expect(Object.values(plannerDraft(t)).every((v) => typeof v === 'string')).toBe(true);
      expect(parseToolArgs(t, c).ok).toBe(false);
      expect(parseVerdict(t).verdict).toBe('CONTINUE');
      expect(verdictDraft(t).verdict).toBeNull();
      expect(extractAnswerTag(t)).toBeNull();
      expect(matchToolName(t, TOOLS)).toBeNull();
    }
  }, 120_000);

  it('never throws and always returns a well-formed result', () => {
    const rng = new Rng(1234);
    const c = card();
    for (let i = 0; i < 2000; i++) {
      const t = randomText(rng);
      const p = parsePlannerOutput(t, TOOLS);
      const d = plannerDraft(t);
      expect([d.justification, d.subGoal, d.toolName].every((v) => typeof v === 'string')).toBe(true);
      if (p.ok) {
        expect(typeof p.action.subGoal).toBe('string');
        expect(p.action.subGoal.length).toBeGreaterThan(0);
        expect(p.action.toolName.length).toBeGreaterThan(0);
      } else expect(p.error).toMatch(/^planner output has no usable/);
      const a = parseToolArgs(t, c);
      if (a.ok) expect(typeof a.args.expression).toBe('string');
      else expect(a.error.length).toBeGreaterThan(0);
      expect(['STOP', 'CONTINUE']).toContain(parseVerdict(t).verdict);
      const tag = extractAnswerTag(t);
      expect(tag === null || typeof tag === 'string').toBe(true);
      expect([true, false, null]).toContain(parseYesNo(t));
      const m = matchToolName(t, TOOLS);
      expect(m === null || TOOLS.includes(m.name)).toBe(true);
    }
  }, 120_000);
});

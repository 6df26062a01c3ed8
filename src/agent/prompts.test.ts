import { describe, expect, it } from 'vitest';
import type { ToolCard } from '../tools/tool';
import { trimForPrompt, type MemoryEntry } from './memory';
import {
  analysisMessages,
  detectModule,
  executorMessages,
  generatorMessages,
  plannerMessages,
  renderMemory,
  renderMemoryBrief,
  renderToolCardFull,
  renderToolCardsCompact,
  verifierMessages,
} from './prompts';

const wiki: ToolCard = {
  name: 'Wikipedia_Search_Tool',
  description: 'Searches Wikipedia and returns the best page extract.',
  input: {
    type: 'object',
    properties: { query: { type: 'string', description: 'search words' }, lang: { type: 'string', description: 'language', enum: ['en', 'de'] } },
    required: ['query'],
  },
  output: 'page title and extract',
  limitations: ['English and German only'],
  examples: [{ goal: 'Find who founded Citibank', args: { query: 'Citibank founder' } }],
  usesNetwork: true,
};

describe('trimForPrompt', () => {
  it('keeps short text, and head and tail of long text within the budget', () => {
    expect(trimForPrompt('short', 10)).toBe('short');
    const long = 'H'.repeat(500) + 'M'.repeat(2000) + 'T'.repeat(500);
    const t = trimForPrompt(long, 300);
    expect(t.length).toBeLessThanOrEqual(300);
    expect(t.startsWith('HHHH')).toBe(true);
    expect(t.endsWith('TTTT')).toBe(true);
    const kept = t.replace(/\n\[\.\.\. \d+ characters trimmed \.\.\.\]\n/, '').length;
    expect(t).toContain(`[... ${3000 - kept} characters trimmed ...]`);
  });
});

describe('prompts', () => {
  const memory: MemoryEntry[] = [
    { turn: 1, subGoal: 'Find founder', toolName: 'Wikipedia_Search_Tool', args: { query: 'Citibank' }, result: 'x'.repeat(5000), ok: true },
    { turn: 2, subGoal: 'Find year', toolName: 'Wikipedia_Search_Tool', args: null, result: '', ok: false, error: 'timed out' },
  ];

  it('render tool cards compactly for the planner and fully for the executor', () => {
    expect(renderToolCardsCompact([wiki])).toBe(
      '- Wikipedia_Search_Tool: Searches Wikipedia and returns the best page extract. Inputs: query (string), lang (string, optional). Limits: English and German only.',
    );
    const full = renderToolCardFull(wiki);
    expect(full).toContain('  - lang (string, optional, one of "en"/"de"): language');
    expect(full).toContain('Args: {"query":"Citibank founder"}');
  });

  it('render memory with trimmed results and errors', () => {
    const text = renderMemory(memory, 200);
    expect(text).toContain('Call: Wikipedia_Search_Tool {"query":"Citibank"}');
    expect(text).toContain('[... 4');
    expect(text).toContain('Turn 2:\nSub-goal: Find year\nCall: Wikipedia_Search_Tool\nError: timed out');
    expect(text.length).toBeLessThan(600);
    expect(renderMemory([], 100)).toBe('(empty: no tool has been used yet)');
  });

  it('share the memory budget among many results', () => {
    const many: MemoryEntry[] = Array.from({ length: 10 }, (_, i) => ({ turn: i + 1, subGoal: 'g', toolName: 'T', args: {}, result: String(i).repeat(5000), ok: true }));
    const user = verifierMessages('Q?', 'A', many, { resultChars: 1200, memoryChars: 6000, analysisChars: 100 })[1].content;
    const shown = [...user.matchAll(/Result: ([\s\S]*?)(?=\n\nTurn|\n\nYour JSON)/g)].map((m) => m[1].length);
    expect(shown).toHaveLength(10);
    for (const len of shown) expect(len).toBeLessThanOrEqual(600);
    expect(Math.min(...shown)).toBeGreaterThan(500);
  });

  it('build one system and one user message per module, recognisable by detectModule', () => {
    const action = { justification: 'j', context: 'ctx', subGoal: 'sg', toolName: 'Wikipedia_Search_Tool' };
    const all = {
      analysis: analysisMessages('Q?', [wiki]),
      planner: plannerMessages({ query: 'Q?', analysis: 'A', cards: [wiki], memory, turn: 3, maxTurns: 5 }),
      executor: executorMessages('Q?', action, wiki),
      verifier: verifierMessages('Q?', 'A', memory),
      generator: generatorMessages('Q?', memory, { answerTags: true }),
    };
    for (const [name, msgs] of Object.entries(all)) {
      expect(msgs.map((m) => m.role)).toEqual(['system', 'user']);
      expect(detectModule(msgs)).toBe(name);
      expect(msgs[1].content).toContain('Q?');
    }
    expect(all.planner[0].content).toContain('"tool_name": "one of: Wikipedia_Search_Tool"');
    expect(all.planner[1].content).toContain('This is step 3 of at most 5.');
    expect(all.executor[1].content).toContain('Sub-goal: sg');
    expect(all.verifier[0].content).toContain('"verdict": "STOP" or "CONTINUE"');
    expect(all.generator[0].content).toContain('<answer></answer>');
    expect(generatorMessages('Q?', memory, { answerTags: false })[0].content).not.toContain('<answer>');
    expect(detectModule([{ role: 'user', content: 'hi' }])).toBeNull();
  });

  it('build a brief planner prompt: the query, the tool names, a line per memory turn, and still the planner', () => {
    const brief = plannerMessages({ query: 'Q?', analysis: 'A long analysis', cards: [wiki], memory, turn: 3, maxTurns: 5, style: 'brief' });
    expect(detectModule(brief)).toBe('planner');
    expect(brief[1].content).toBe(`Query: Q?\nTools: Wikipedia_Search_Tool\nMemory:\n${renderMemoryBrief(memory, 80)}\nStep 3 of 5.`);
    expect(renderMemoryBrief(memory, 80).split('\n')).toEqual([`Turn 1: Wikipedia_Search_Tool -> ${trimForPrompt('x'.repeat(5000), 80).replace(/\s+/g, ' ')}`, 'Turn 2: Wikipedia_Search_Tool -> error: timed out']);
    expect(renderMemoryBrief([], 80)).toBe('(empty)');
    const full = plannerMessages({ query: 'Q?', analysis: 'A long analysis', cards: [wiki], memory, turn: 3, maxTurns: 5 });
    expect(brief[0].content.length + brief[1].content.length).toBeLessThan((full[0].content.length + full[1].content.length) / 3);
    expect(brief[1].content).not.toContain('A long analysis');
  });
});

import { describe, expect, it } from 'vitest';
import { ToolRegistry } from '../tools/registry';
import type { Tool } from '../tools/tool';
import { arithmeticIn, demoEngines, demoScript } from './demo';
import { runAgent } from './loop';
import { toolsFromRegistry } from './registry-tools';

const reverse: Tool = {
  card: {
    name: 'reverse',
    description: 'Reverses text.',
    input: { type: 'object', properties: { text: { type: 'string', description: 'text to reverse' } }, required: ['text'] },
    output: 'the reversed text',
    limitations: [],
    examples: [{ goal: 'reverse abc', args: { text: 'abc' } }],
    usesNetwork: false,
  },
  async run(args) {
    return { ok: true, output: [...String(args.text)].reverse().join('') };
  },
};

describe('demo engines over the tool registry', () => {
  it('run the loop for any query, through the registry, to an answer built from the tool result', async () => {
    const registry = new ToolRegistry();
    registry.register(reverse);
    const r = await runAgent({ conversationId: 'demo', query: 'stressed', tools: toolsFromRegistry(registry), engines: demoEngines() });
    expect(r.status).toBe('done');
    expect(r.memory).toEqual([{ turn: 1, subGoal: 'stressed', toolName: 'reverse', args: { text: 'stressed' }, result: 'desserts', ok: true }]);
    expect(r.answer).toBe('desserts');
  });

  it('see a tool switched off after the run started as a failed call', async () => {
    const registry = new ToolRegistry();
    registry.register(reverse);
    const tools = toolsFromRegistry(registry);
    registry.setEnabled('reverse', false);
    const r = await runAgent({ conversationId: 'demo2', query: 'abc', tools, engines: demoEngines(), config: { maxTurns: 2 } });
    expect(r.memory[0]).toMatchObject({ ok: false, error: "tool 'reverse' is switched off in the tool settings" });
    expect(r.answer).toBe("The tools gave no result, so I cannot answer. The last error: tool 'reverse' is switched off in the tool settings");
  });

  it('do not call a failing tool again while another is left, and answer from that one', async () => {
    let calls = 0;
    const brokenPython: Tool = {
      card: { ...reverse.card, name: 'python', description: 'Runs Python.', input: { type: 'object', properties: { code: { type: 'string', description: 'code' } }, required: ['code'] }, examples: [] },
      async run() {
        calls++;
        return { ok: false, output: '', error: 'python: Pyodide could not load from http://x/pyodide/: Failed to fetch' };
      },
    };
    const registry = new ToolRegistry();
    registry.register(brokenPython);
    registry.register(reverse);
    const r = await runAgent({ conversationId: 'd5', query: 'What is 6*7?', tools: toolsFromRegistry(registry), engines: demoEngines(), config: { maxTurns: 5 } });
    expect(calls).toBe(1);
    expect(r.memory.map((m) => [m.toolName, m.ok])).toEqual([['python', false], ['reverse', true]]);
    expect(r.answer).toBe('?7*6 si tahW');
    // With no other tool, the one there is tried each turn, and the answer gives the last error.
    const alone = new ToolRegistry();
    alone.register(brokenPython);
    const a = await runAgent({ conversationId: 'd6', query: 'What is 6*7?', tools: toolsFromRegistry(alone), engines: demoEngines(), config: { maxTurns: 2 } });
    expect(a.answer).toBe('The tools gave no result, so I cannot answer. The last error: python: Pyodide could not load from http://x/pyodide/: Failed to fetch');
  });

  it('give Python only arithmetic, as code, and every other question to the first other tool', async () => {
    const ran: unknown[] = [];
    const python: Tool = {
      card: { ...reverse.card, name: 'python', description: 'Runs Python.', input: { type: 'object', properties: { code: { type: 'string', description: 'code' } }, required: ['code'] }, examples: [{ goal: 'add', args: { code: 'print(1+1)' } }] },
      async run(args) {
        ran.push(args);
        return { ok: true, output: '391' };
      },
    };
    const registry = new ToolRegistry();
    registry.register(python);
    registry.register(reverse);
    const sum = await runAgent({ conversationId: 'd3', query: 'What is 17 × 23?', tools: toolsFromRegistry(registry), engines: demoEngines() });
    expect(ran).toEqual([{ code: 'print(17 * 23)' }]);
    expect(sum.answer).toBe('391');
    const prose = await runAgent({ conversationId: 'd4', query: 'What is the capital of France?', tools: toolsFromRegistry(registry), engines: demoEngines() });
    expect(prose.memory.map((m) => m.toolName)).toEqual(['reverse']);
    expect(ran).toHaveLength(1);
  });
});

describe('demo query analysis', () => {
  it('ends the query with one mark: its own question mark, or a full stop', () => {
    const analyse = demoScript().analysis![0] as (m: { role: 'user'; content: string }[]) => string;
    expect(analyse([{ role: 'user', content: 'Query: Who wrote Hamlet?\n\nTools:' }])).toBe('The query asks: Who wrote Hamlet? A tool can look this up or compute it.');
    expect(analyse([{ role: 'user', content: 'Query: 17 * 23\n\nTools:' }])).toBe('The query asks: 17 * 23. A tool can look this up or compute it.');
  });
});

describe('arithmeticIn', () => {
  it('finds a sum in a question, with Python operators, and nothing in prose', () => {
    expect(arithmeticIn('What is 2+2?')).toBe('2+2');
    expect(arithmeticIn('compute (3 + 4) * 2^10 please')).toBe('(3 + 4) * 2**10');
    expect(arithmeticIn('12 ÷ 4')).toBe('12 / 4');
    expect(arithmeticIn('What is the capital of France?')).toBeNull();
    expect(arithmeticIn('How many moons has Mars, 2?')).toBeNull();
    expect(arithmeticIn('1) + 2')).toBeNull();
  });
});

import { describe, expect, it } from 'vitest';
import { ToolRegistry } from '../tools/registry';
import type { Tool } from '../tools/types';
import { demoEngines } from './demo';
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
    expect(r.answer).toBe('From the tool: desserts');
  });

  it('see a tool switched off after the run started as a failed call', async () => {
    const registry = new ToolRegistry();
    registry.register(reverse);
    const tools = toolsFromRegistry(registry);
    registry.setEnabled('reverse', false);
    const r = await runAgent({ conversationId: 'demo2', query: 'abc', tools, engines: demoEngines(), config: { maxTurns: 2 } });
    expect(r.memory[0]).toMatchObject({ ok: false, error: "tool 'reverse' is switched off in the tool settings" });
    expect(r.answer).toBe('The tools gave no result, so I cannot answer.');
  });
});

import { describe, expect, it } from 'vitest';
import { BUILTIN_CARDS, PYTHON_CARD } from './cards';
import { renderToolCardFull } from '../agent/prompts';
import { checkCard, validateArgs } from './validate';
import { PythonTool } from './python';
import { WikipediaTool } from './wikipedia';
import { BaseGeneratorTool } from './base-generator';
import { WebSearchTool } from './web-search';
import { chatStream } from '../engine/chat-stream';

describe('built-in tool cards', () => {
  it('are valid, uniquely named, and their examples pass their own schema', () => {
    for (const card of BUILTIN_CARDS) expect(checkCard(card), card.name).toEqual([]);
    expect(new Set(BUILTIN_CARDS.map((c) => c.name)).size).toBe(BUILTIN_CARDS.length);
    expect(BUILTIN_CARDS.map((c) => c.name)).toEqual(['python', 'wikipedia', 'base_generator', 'web_search']);
  });

  it('mark exactly the tools that send data off the device', () => {
    expect(BUILTIN_CARDS.filter((c) => c.usesNetwork).map((c) => c.name)).toEqual(['wikipedia', 'web_search']);
    for (const c of BUILTIN_CARDS.filter((c) => c.usesNetwork)) expect(c.limitations.join(' ')).toMatch(/internet|search service/);
  });

  it('stay short enough for a small model, with examples and limitations', () => {
    for (const c of BUILTIN_CARDS) {
      expect(c.description.length, c.name).toBeLessThanOrEqual(300);
      expect(c.examples.length, c.name).toBeGreaterThanOrEqual(2);
      expect(c.limitations.length, c.name).toBeGreaterThanOrEqual(2);
    }
  });

  it('are the cards the tools carry', () => {
    const tools = [new PythonTool({ indexURL: 'http://localhost/pyodide/' }), new WikipediaTool(), new BaseGeneratorTool({ engine: { id: 'x', stream: () => chatStream(() => Promise.reject(new Error('unused'))) } }), new WebSearchTool()];
    expect(tools.map((t) => t.card)).toEqual(BUILTIN_CARDS);
  });

  it('render for the executor with every argument and every example, and each example is a valid call', () => {
    // The executor sees cards through the agent's renderer: test the text the model really gets.
    for (const card of BUILTIN_CARDS) {
      const text = renderToolCardFull(card);
      expect(text.split('\n').slice(0, 2)).toEqual([`Tool: ${card.name}`, `What it does: ${card.description}`]);
      for (const name of Object.keys(card.input.properties)) expect(text).toContain(`  - ${name} (`);
      for (const ex of card.examples.slice(0, 2)) {
        expect(text).toContain(`Args: ${JSON.stringify(ex.args)}`);
      }
      for (const ex of card.examples) expect(validateArgs(card, ex.args).ok).toBe(true);
    }
    expect(renderToolCardFull(PYTHON_CARD)).toContain('  - code (string, required): Complete Python 3 code. Print the result with print(...).');
  });
});

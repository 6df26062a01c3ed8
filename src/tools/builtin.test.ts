import { describe, expect, it } from 'vitest';
import { registerBuiltinTools } from './builtin';
import { ToolRegistry } from './registry';
import { chatStream } from '../engine/chat-stream';

describe('registerBuiltinTools', () => {
  it('starts with only the on-device tools available; web search off; network tools need permission', () => {
    const reg = new ToolRegistry();
    registerBuiltinTools(reg, { engine: { id: 'x', stream: () => chatStream(() => Promise.reject(new Error('unused'))) }, python: { indexURL: 'http://localhost/pyodide/' } });
    expect(reg.list().map((s) => [s.name, s.enabled, s.usesNetwork, s.available])).toEqual([
      ['python', true, false, true],
      ['wikipedia', true, true, false],
      ['base_generator', true, false, true],
      ['web_search', false, true, false],
    ]);
    reg.allowNetwork('wikipedia');
    reg.allowNetwork('web_search');
    expect(reg.cards().map((c) => c.name)).toEqual(['python', 'wikipedia', 'base_generator']);
    reg.setEnabled('web_search', true);
    expect(reg.cards().map((c) => c.name)).toEqual(['python', 'wikipedia', 'base_generator', 'web_search']);
    reg.dispose();
  });
});

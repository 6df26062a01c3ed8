// <agentflow-chat> asked for what runs on its engines (engineUse, which the app stops before replacing them)
// while a question is still being checked (its token count, before the run starts), in Chromium.
import { describe, expect, it } from 'vitest';
import { scriptedDemoEngines } from '../controllers/engines/demo-engines';
import './agentflow-chat';
import type { AgentFlowChat } from './agentflow-chat';

describe('<agentflow-chat> engine use while a question is checked', () => {
  it('counts a question being checked as a use, and stopping it keeps the question unasked in the input', async () => {
    const engines = scriptedDemoEngines();
    let counts = 0;
    let release!: (n: number) => void;
    const held = new Promise<number>((r) => (release = r));
    // A planner that states its context and counts tokens slowly (a worker round trip), so ask() waits there.
    Object.assign(engines.planner, { contextTokens: 4096, countPromptTokens: () => (counts++, held) });
    const el = document.createElement('agentflow-chat') as AgentFlowChat;
    el.dbName = `chat-swap-${Math.random()}`;
    el.engines = engines;
    document.body.append(el);
    try {
      await el.updateComplete;
      const ta = el.renderRoot.querySelector('textarea')!;
      ta.value = 'What is 2+2?';
      const asked = el.ask('What is 2+2?');
      await expect.poll(() => counts).toBeGreaterThan(0);
      const use = el.engineUse();
      expect(use?.what).toBe('a chat answer');
      const stopped = use!.stop();
      release(10);
      await stopped;
      expect(await asked).toBeNull();
      // Nothing started on the engines the page is about to dispose.
      expect(el.engineUse()).toBeNull();
      expect(el.error).toMatch(/^Not asked: the models were being replaced/);
      expect(ta.value).toBe('What is 2+2?');
    } finally {
      el.remove();
    }
  });
});

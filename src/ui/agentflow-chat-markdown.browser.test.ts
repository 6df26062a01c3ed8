// <agentflow-chat> with an answer that is hostile to the Markdown parser (thousands of nested block quotes,
// which overflow marked's stack): it shows as plain text, a later answer in the same chat still renders as
// Markdown, and reopening the conversation in a new element (a reload) shows it again.
import { describe, expect, it } from 'vitest';
import { ProbeEngine, type ProbeReplyFn } from '../agent/probe-engine';
import type { Tool } from '../tools/tool';
import './agentflow-chat';
import type { AgentFlowChat } from './agentflow-chat';

const HOSTILE = `${'>'.repeat(3000)} deep`;

const reply: ProbeReplyFn = (module, messages) => {
  if (module === 'planner') return JSON.stringify({ justification: 'j', context: '', sub_goal: 'Echo it', tool_name: 'echo' });
  if (module === 'executor') return '{"text": "x"}';
  if (module === 'verifier') return '{"verdict": "STOP"}';
  if (module === 'generator') return messages.some((m) => m.content.includes('Quote deeply')) ? HOSTILE : 'A **fine** answer.';
  return 'Echo it.';
};

const echo: Tool = {
  card: { name: 'echo', description: 'Echoes text.', input: { type: 'object', properties: { text: { type: 'string', description: 'text' } }, required: ['text'] }, output: 'the text', limitations: [], examples: [], usesNetwork: false },
  async run(args) {
    return { ok: true, output: String(args.text) };
  },
};

async function mount(dbName: string): Promise<AgentFlowChat> {
  const el = document.createElement('agentflow-chat');
  el.dbName = dbName;
  el.maxTurns = 1;
  el.engines = { planner: new ProbeEngine(reply, 'planner:probe'), shared: new ProbeEngine(reply, 'shared:probe') };
  el.extraTools = [echo];
  el.tools = 'echo';
  document.body.append(el);
  await el.updateComplete;
  return el;
}

const answers = (el: AgentFlowChat) => [...el.renderRoot.querySelectorAll('[data-testid="answer"]')];

describe('<agentflow-chat> and Markdown hostile to the parser', () => {
  it('shows it as plain text, then renders a later answer, and reopens the conversation', async () => {
    const dbName = `chat-md-${Math.random()}`;
    const el = await mount(dbName);
    const errors: unknown[] = [];
    const onError = (e: ErrorEvent) => errors.push(e.error);
    window.addEventListener('error', onError);
    try {
      const t0 = performance.now();
      const hostile = await el.ask('Quote deeply');
      expect(hostile?.answer).toBe(HOSTILE);
      const hostileId = answers(el)[0].getAttribute('data-conversation')!;
      await expect.poll(() => answers(el)[0]?.querySelector('.text.plain')?.textContent).toBe(HOSTILE);
      expect(answers(el)[0].querySelector('[data-testid="plain-why"]')?.textContent).toMatch(/nested more than 50 levels/);

      await el.ask('Something else');
      // A new question gets its own view: the later answer is the one shown.
      await expect.poll(() => answers(el)[0]?.querySelector('.text.md strong')?.textContent).toBe('fine');
      expect(answers(el)).toHaveLength(1);
      expect(performance.now() - t0).toBeLessThan(5000);

      // Reopened after a reload: a new element on the same database.
      el.remove();
      const again = await mount(dbName);
      await expect.poll(() => again.conversations.length).toBe(2);
      await again.open(hostileId);
      await expect.poll(() => answers(again)[0]?.querySelector('.text.plain')?.textContent).toBe(HOSTILE);
      again.remove();
      expect(errors).toEqual([]);
    } finally {
      window.removeEventListener('error', onError);
    }
  });
});

// <agentflow-chat> and the planner at work (issue 28 item 2), in Chromium: every planner call is listed
// under "Module calls so far" with its numbers, an unusable reply included (a planner that has not learnt the
// reply format yet wrote only those, so none was listed); after a reload cut an answer off, the chat reopens
// that conversation, and resuming it says where it picks up and reads "running" in the list.
import { describe, expect, it } from 'vitest';
import { runAgent } from '../agent/loop';
import { detectModule } from '../agent/prompts';
import { ScriptedEngine, scriptedResult, sleep } from '../agent/scripted-engine';
import type { ChatEngine, ChatMessage, GenerateOptions, GenerationResult } from '../engine/chat-engine';
import { chatStream, type ChatStream } from '../engine/chat-stream';
import { createConversation, getConversation, idbStepSink, updateConversation } from '../store/conversations';
import type { Tool } from '../tools/tool';
import './agentflow-chat';
import type { AgentFlowChat } from './agentflow-chat';

const echo: Tool = {
  card: { name: 'echo', description: 'Echoes text.', input: { type: 'object', properties: { text: { type: 'string', description: 'text' } }, required: ['text'] }, output: 'the text', limitations: [], examples: [], usesNetwork: false },
  async run(args) {
    return { ok: true, output: String(args.text) };
  },
};

const PLAN = JSON.stringify({ justification: 'j', context: '', sub_goal: 'Echo it', tool_name: 'echo' });

/**
 * Streams each reply a piece at a time after a short "prefill". The planner's first reply is unusable (no
 * sub_goal or tool_name), its later ones plan; the verifier says CONTINUE once, then STOP. With `holdPlanner`,
 * planner calls hang until stopped.
 */
class PlannerEngine implements ChatEngine {
  readonly id = 'planner:streaming';
  private planner = 0;
  private verifier = 0;
  constructor(private readonly holdPlanner = false) {}
  /** As the scripted engines count: one token per character of the rendered prompt. */
  async countPromptTokens(messages: ChatMessage[]): Promise<number> {
    return ScriptedEngine.renderPrompt(messages).length;
  }
  stream(messages: ChatMessage[], o: GenerateOptions = {}): ChatStream {
    return chatStream((emit) => this.reply(messages, o, emit));
  }

  private async reply(messages: ChatMessage[], o: GenerateOptions, emit: (piece: string) => void): Promise<GenerationResult> {
    const module = detectModule(messages);
    const text =
      module === 'planner' ? (this.planner++ === 0 ? 'I think I should look at the question more closely.' : PLAN)
      : module === 'executor' ? '{"text": "x"}'
      : module === 'verifier' ? (this.verifier++ === 0 ? '{"verdict": "CONTINUE", "explanation": "more"}' : '{"verdict": "STOP"}')
      : module === 'generator' ? 'The answer is x.'
      : 'Echo it.';
    await sleep(150, o.signal);
    if (module === 'planner' && this.holdPlanner) {
      emit('{"justifi');
      await sleep(600_000, o.signal);
    }
    for (const p of text.match(/.{1,4}/g) ?? []) {
      emit(p);
      await sleep(10, o.signal);
    }
    return scriptedResult(messages, text, null);
  }
}

const text = (el: AgentFlowChat, selector: string) => (el.renderRoot.querySelector(selector)?.textContent ?? '').replace(/\s+/g, ' ').trim();

async function mount(dbName: string, engine?: ChatEngine): Promise<AgentFlowChat> {
  const el = document.createElement('agentflow-chat');
  el.dbName = dbName;
  el.maxTurns = 3;
  if (engine) el.engines = { planner: engine, shared: engine };
  el.extraTools = [echo];
  el.tools = 'echo';
  document.body.append(el);
  await el.updateComplete;
  await expect.poll(() => el.toolRegistry.isAvailable('echo')).toBe(true);
  return el;
}

describe('<agentflow-chat>: the planner at work', () => {
  it('lists every planner call with its numbers, an unusable reply too, and announces the next turn’s planner', async () => {
    const el = await mount(`chat-planner-${Math.random()}`, new PlannerEngine());
    const seen: string[] = [];
    const observer = new MutationObserver(() => {
      const now = text(el, '[data-testid="live"]');
      if (now && now !== seen.at(-1)) seen.push(now);
    });
    observer.observe(el.renderRoot, { subtree: true, childList: true, characterData: true });
    // The list shows while the run works: the generator is the last call, so it is read before the end.
    const lists: string[] = [];
    el.addEventListener('agentflow-turn', () => void el.updateComplete.then(() => lists.push(text(el, '[data-testid="live-calls"]'))));
    try {
      const result = await el.ask('Question');
      expect(result?.status).toBe('done');
      const calls = lists.at(-1) ?? '';
      // Turn 1's plan could not be used; it is listed with its time to first token and tokens/s all the same.
      // With the prompt's length, which is what the wait for the first token is spent reading.
      expect(calls).toMatch(/Planning \(turn 1\): \d+\.\d s, first token after \d+\.\d s, \d+ tokens at \d+(\.\d)? tokens\/s, prompt [1-9][\d,]* tokens — its reply could not be used/);
      expect(calls).toMatch(/Planning \(turn 2\): \d+\.\d s, first token after \d+\.\d s, \d+ tokens at \d+(\.\d)? tokens\/s, prompt [1-9][\d,]* tokens(?! —)/);
      expect(calls).toMatch(/Planning \(turn 3\): /);
      // After the unusable plan the line says turn 2's planner is next, before its first token.
      expect(seen.some((t) => /^Planning \(turn 2\)… \d+\.\d s · waiting for the first token/.test(t))).toBe(true);
      // While it waits, how long a prompt it is reading (the engine counted it).
      expect(seen.some((t) => /^Planning \(turn 2\)… \d+\.\d s · waiting for the first token \(reading a prompt of [1-9][\d,]* tokens\)$/.test(t))).toBe(true);
      const turn2 = seen.findIndex((t) => t.startsWith('Planning (turn 2)'));
      expect(seen.slice(turn2).filter((t) => t.startsWith('Planning (turn 1)'))).toEqual([]);
    } finally {
      observer.disconnect();
      el.remove();
    }
  });

  it('after a reload cut an answer off, reopens it; resuming says where it picks up and the list says running', async () => {
    const dbName = `chat-resume-${Math.random()}`;
    // The page before the reload: turn 1 ran (plan, tool, CONTINUE), and turn 2's planner was writing when the
    // page went away. A reload leaves the record "running", which is what this writes back after the stop.
    const first = new ScriptedEngine({
      analysis: ['Echo it.'],
      planner: [PLAN, { delayMs: 600_000 }],
      executor: ['{"text": "x"}'],
      verifier: ['{"verdict": "CONTINUE", "explanation": "more"}'],
    });
    const conv = await createConversation({ query: 'Cut off by a reload', settings: { config: { maxTurns: 3 }, engines: { planner: 'planner:streaming', shared: 'planner:streaming', scripted: false } } }, dbName);
    const stop = new AbortController();
    const cut = runAgent({ conversationId: conv.id, query: conv.query, tools: [echo], engines: { planner: first, shared: first }, config: { maxTurns: 3 }, signal: stop.signal, sink: idbStepSink(dbName) });
    await expect.poll(() => first.count('planner'), { timeout: 10_000 }).toBe(2);
    stop.abort();
    await cut;
    await updateConversation(conv.id, { status: 'running' }, dbName);

    const el = await mount(dbName, new PlannerEngine(true));
    try {
      // The interrupted conversation is on screen, with its Resume button, and listed as interrupted.
      await expect.poll(() => text(el, '[data-testid="query"]')).toBe('Cut off by a reload');
      expect((await getConversation(conv.id, dbName))?.status).toBe('interrupted');
      expect(text(el, '[data-testid="conversation-status"]')).toBe('interrupted');
      const resume = [...el.renderRoot.querySelectorAll('button')].find((b) => b.textContent?.trim() === 'Resume');
      expect(resume).toBeDefined();
      resume!.click();
      // It picks up at turn 2's planner and says so (not "Starting…"), streaming as it goes.
      await expect.poll(() => text(el, '[data-testid="live"]')).toMatch(/^Resuming at turn 2: planning… \d+\.\d s · /);
      expect(text(el, '[data-testid="live-phase"]')).toBe('Resuming at turn 2: planning…');
      await expect.poll(() => text(el, '[data-testid="live"]')).toMatch(/first token after \d+\.\d s · 1 token/);
      // The list no longer says interrupted while it runs.
      expect(text(el, '[data-testid="conversation-status"]')).toBe('running');
      el.stop();
      await expect.poll(() => text(el, '[data-testid="conversation-status"]')).toBe('interrupted');
    } finally {
      el.remove();
    }
  });
});

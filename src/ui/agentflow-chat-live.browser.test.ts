// <agentflow-chat> while a run waits (#20.3, #20.7), in Chromium: the call in progress shows its elapsed
// time and "waiting for the first token" until one streams, then the time to it and tokens/s; each finished
// module call is listed with its own; a second question gets its own view (the agent sees no earlier one);
// conversations the Experiments and Training tabs made are kept out of the list, under folded headings.
import { describe, expect, it } from 'vitest';
import { detectModule } from '../agent/prompts';
import { scriptedResult, sleep } from '../agent/scripted-engine';
import type { ChatEngine, ChatMessage, GenerateOptions, GenerationResult } from '../engine/chat-engine';
import { chatStream, type ChatStream } from '../engine/chat-stream';
import { createConversation } from '../store/conversations';
import type { Tool } from '../tools/tool';
import './agentflow-chat';
import type { AgentFlowChat } from './agentflow-chat';

/** Streams its reply a piece every 25 ms after a 300 ms "prefill"; the first generator call then hangs until Stop. */
class StreamingEngine implements ChatEngine {
  readonly id = 'planner:streaming';
  private generatorCalls = 0;
  constructor(private readonly tool = 'echo') {}
  stream(messages: ChatMessage[], o: GenerateOptions = {}): ChatStream {
    return chatStream((emit) => this.reply(messages, o, emit));
  }

  private async reply(messages: ChatMessage[], o: GenerateOptions, emit: (piece: string) => void): Promise<GenerationResult> {
    const module = detectModule(messages);
    const text =
      module === 'planner' ? JSON.stringify({ justification: 'j', context: '', sub_goal: 'Echo it', tool_name: this.tool })
      : module === 'executor' ? '{"text": "x"}'
      : module === 'verifier' ? '{"verdict": "STOP"}'
      : module === 'generator' ? 'The answer is x.'
      : 'Echo it.';
    const hang = module === 'generator' && this.generatorCalls++ === 0;
    await sleep(300, o.signal);
    const pieces = text.match(/.{1,4}/g) ?? [];
    for (const p of pieces) {
      emit(p);
      await sleep(25, o.signal);
    }
    if (hang) await sleep(60_000, o.signal);
    return scriptedResult(messages, text, null);
  }
}

const echo: Tool = {
  card: { name: 'echo', description: 'Echoes text.', input: { type: 'object', properties: { text: { type: 'string', description: 'text' } }, required: ['text'] }, output: 'the text', limitations: [], examples: [], usesNetwork: false },
  async run(args) {
    return { ok: true, output: String(args.text) };
  },
};

/** A chat of one turn on a StreamingEngine whose planner picks `tool`, the one tool enabled. */
async function mountChat(dbName: string, tool: Tool): Promise<AgentFlowChat> {
  const el = document.createElement('agentflow-chat');
  el.dbName = dbName;
  el.maxTurns = 1;
  const engine = new StreamingEngine(tool.card.name);
  el.engines = { planner: engine, shared: engine };
  el.extraTools = [tool];
  el.tools = tool.card.name;
  document.body.append(el);
  await el.updateComplete;
  return el;
}

const text = (el: AgentFlowChat, selector: string) => (el.renderRoot.querySelector(selector)?.textContent ?? '').replace(/\s+/g, ' ').trim();

describe('<agentflow-chat> while a module runs', () => {
  it('shows elapsed time, time to first token and tokens/s per call; each question gets its own view; experiment runs are grouped apart', async () => {
    const dbName = `chat-live-${Math.random()}`;
    const el = await mountChat(dbName, echo);
    // Every state the live line renders (a mutation observer misses none, however short).
    const seen: string[] = [];
    // And what a screen reader is told: the live region's texts, and the answer region's busy flag.
    const phases: string[] = [];
    const busy = new Set<string | null>();
    const observer = new MutationObserver(() => {
      const now = text(el, '[data-testid="live"]');
      if (now && now !== seen.at(-1)) seen.push(now);
      const phase = text(el, '[data-testid="live-phase"]');
      if (phase && phase !== phases.at(-1)) phases.push(phase);
      if (now) busy.add(el.renderRoot.querySelector('[data-testid="answer"]')?.getAttribute('aria-busy') ?? null);
    });
    observer.observe(el.renderRoot, { subtree: true, childList: true, characterData: true });
    try {
      const first = el.ask('First question');
      // Finished calls keep their numbers: the engine counted the tokens (scripted: one per character).
      await expect.poll(() => text(el, '[data-testid="live-calls"]'), { timeout: 10_000 }).toMatch(/Analysing the query: \d+\.\d s, first token after 0\.[3-9] s, 8 tokens/);
      // The generator streams 4 pieces, then hangs: its line shows the rate while it waits.
      await expect.poll(() => text(el, '[data-testid="live"]'), { timeout: 10_000 }).toMatch(/^Answering \(turn 1\)… \d+\.\d s · first token after 0\.[3-9] s · 4 tokens, \d+(\.\d)? tokens\/s$/);
      // Before the analysis streamed, the wait said so (states a few hundred ms long are read from what
      // rendered, not polled for: a loaded machine may skip past them between polls).
      expect(seen.some((t) => /^Starting… 0\.\d s · waiting for the first token$/.test(t))).toBe(true);
      // Then its first token: the time to it, and the pieces so far with their rate.
      expect(seen.some((t) => /^Analysing the query… \d+\.\d s · first token after 0\.[3-9] s · [1-9]\d* tokens?/.test(t))).toBe(true);
      const calls = text(el, '[data-testid="live-calls"]');
      expect(calls).toMatch(/Planning \(turn 1\): \d+\.\d s, first token after 0\.[3-9] s, \d+ tokens at \d+(\.\d)? tokens\/s/);
      expect(calls).toContain('Calling a tool (turn 1)');
      // The planner's reply showed as what it chose so far, never as raw JSON.
      const planning = seen.filter((t) => t.startsWith('Planning (turn 1)'));
      expect(planning.some((t) => t.endsWith('tool: … · sub-goal: Echo it') || t.endsWith('tool: echo · sub-goal: Echo it'))).toBe(true);
      expect(planning.some((t) => t.endsWith('reasoning: j'))).toBe(true);
      expect(planning.filter((t) => t.includes('{'))).toEqual([]);
      // One turn allowed: no verifier runs after its tool call, so none is announced; the answer is.
      expect(seen.filter((t) => t.startsWith('Checking'))).toEqual([]);
      expect(seen.find((t) => t.startsWith('Answering (turn 1)…') && t.endsWith('waiting for the first token'))).toBeDefined();
      // Read out once per call, never the clock or the tokens (which change several times a second).
      expect(phases).toEqual(['Starting…', 'Analysing the query…', 'Planning (turn 1)…', 'Calling a tool (turn 1)…', 'Answering (turn 1)…']);
      expect(el.renderRoot.querySelector('[data-testid="live-phase"]')?.getAttribute('role')).toBe('status');
      expect([...busy]).toEqual(['true']);
      expect(el.renderRoot.querySelector('[data-testid="answer"]')?.getAttribute('aria-live')).toBe('polite');
      observer.disconnect();
      el.stop();
      expect((await first)?.status).toBe('interrupted');
      expect(el.renderRoot.querySelector('[data-testid="live-stats"]')).toBeNull();
      // Done: the region is no longer busy (its content is read out), and the phase line is gone.
      expect(el.renderRoot.querySelector('[data-testid="answer"]')?.getAttribute('aria-busy')).toBe('false');
      expect(el.renderRoot.querySelector('[data-testid="live-phase"]')).toBeNull();

      // A second question: its own view, and the UI says the agent does not see the first.
      await el.ask('Second question');
      await expect.poll(() => [...el.renderRoot.querySelectorAll('[data-testid="query"]')].map((q) => q.textContent)).toEqual(['Second question']);
      expect(text(el, '[data-testid="independent-hint"]')).toBe('Each question starts a new conversation: the agent does not see earlier questions, which stay in the list.');
      await expect.poll(() => el.renderRoot.querySelectorAll('[data-testid="conversation-list"] li').length).toBe(2);

      // Conversations an experiment made: not in the list of questions, but under their own folded heading.
      const bench1 = await createConversation({ query: 'Benchmark item', title: 'bench #1', reference: '"4"', settings: { experiment: { id: 'x', name: 'x' } } }, dbName);
      // The list is newest first by update time in ms; two records made in the same ms come in id order.
      await expect.poll(() => Date.now() > bench1.updatedAt).toBe(true);
      await createConversation({ query: 'Old benchmark item', title: 'bench #2', reference: '"5"' }, dbName);
      await createConversation({ query: 'Rollout', title: 'g #1', reference: '"5"', settings: { training: true, rollouts: { runId: 'r', groupId: 'g' } } }, dbName);
      await el.refreshList();
      await el.updateComplete;
      expect(el.renderRoot.querySelectorAll('[data-testid="conversation-list"] li').length).toBe(2);
      expect(text(el, 'details[data-group="experiment"] summary')).toBe('Experiment items (2)');
      expect(text(el, 'details[data-group="training"] summary')).toBe('Training rollouts (1)');
      (el.renderRoot.querySelector('details[data-group="experiment"] summary') as HTMLElement).click();
      await expect.poll(() => [...el.renderRoot.querySelectorAll('[data-testid="experiment-list"] button.open')].map((b) => b.textContent?.trim())).toEqual(['bench #2', 'bench #1']);
    } finally {
      el.remove();
    }
  });

  it("says what the running tool is doing (e.g. starting Python) and shows the executor's output as one line", async () => {
    let release!: () => void;
    const released = new Promise<void>((r) => (release = r));
    const warming: Tool = {
      card: { ...echo.card, name: 'warming' },
      async run(args, ctx) {
        ctx.note?.('starting Python (first use)');
        await released;
        ctx.note?.(null);
        return { ok: true, output: String(args.text) };
      },
    };
    const el = await mountChat(`chat-live-note-${Math.random()}`, warming);
    try {
      // The element sets its tools up as it connects (the tool switches are read from storage).
      await expect.poll(() => el.toolRegistry.isAvailable('warming')).toBe(true);
      const run = el.ask('Question');
      await expect.poll(() => text(el, '[data-testid="live"]'), { timeout: 10_000 }).toMatch(/^Calling a tool \(turn 1\): starting Python \(first use\)… \d+\.\d s · .* warming: text = x$/);
      release();
      // The note ends with the tool's wait.
      await expect.poll(() => text(el, '[data-testid="live"]'), { timeout: 10_000 }).toMatch(/^(Checking|Answering) \(turn 1\)…/);
      el.stop();
      await run;
    } finally {
      release();
      el.remove();
    }
  });
});

// <agentflow-chat> passes the Tools settings' "Constrain replies" choice to the agent loop, in Chromium with
// real IndexedDB: on by default (the planner, executor and verifier calls carry their reply schema), off once
// the switch is turned off (no call carries one), read per question so a change applies to the next one.
import { describe, expect, it } from 'vitest';
import { detectModule } from '../agent/prompts';
import { scriptedResult } from '../agent/scripted-engine';
import type { ChatEngine, ChatMessage, GenerateOptions, GenerationResult } from '../engine/chat-engine';
import { chatStream, type ChatStream } from '../engine/chat-stream';
import { putSetting } from '../store/settings';
import type { Tool } from '../tools/tool';
import './agentflow-chat';
import type { AgentFlowChat } from './agentflow-chat';
import { CONSTRAIN_REPLIES_KEY } from '../controllers/tools/tool-settings';

/** Answers every module in one go and keeps, per call, the module and whether it came with a schema. */
class RecordingEngine implements ChatEngine {
  readonly id = 'planner:recording';
  readonly calls: Array<{ module: string; schema: boolean }> = [];
  stream(messages: ChatMessage[], o: GenerateOptions = {}): ChatStream {
    return chatStream(async () => this.reply(messages, o));
  }

  private reply(messages: ChatMessage[], o: GenerateOptions): GenerationResult {
    const module = detectModule(messages);
    this.calls.push({ module: module ?? 'unknown', schema: typeof o.jsonSchema === 'string' && o.jsonSchema.length > 0 });
    const text =
      module === 'planner' ? JSON.stringify({ tool_name: 'echo', sub_goal: 'Echo it', context: '', justification: 'j' })
      : module === 'executor' ? '{"args": {"text": "x"}}'
      : module === 'verifier' ? '{"explanation": "done", "verdict": "STOP"}'
      : module === 'generator' ? 'The answer is x.'
      : 'Echo it.';
    return scriptedResult(messages, text, null);
  }
}

const echo: Tool = {
  card: { name: 'echo', description: 'Echoes text.', input: { type: 'object', properties: { text: { type: 'string', description: 'text', maxLength: 40 } }, required: ['text'] }, output: 'the text', limitations: [], examples: [], usesNetwork: false },
  async run(args) {
    return { ok: true, output: String(args.text) };
  },
};

describe('<agentflow-chat> and the "Constrain replies" setting', () => {
  it('sends reply schemas by default and none once the setting is off', async () => {
    const dbName = `chat-constrain-${Math.random()}`;
    const el = document.createElement('agentflow-chat') as AgentFlowChat;
    el.dbName = dbName;
    el.maxTurns = 2;
    const engine = new RecordingEngine();
    el.engines = { planner: engine, shared: engine };
    el.extraTools = [echo];
    el.tools = 'echo';
    document.body.append(el);
    await el.updateComplete;
    // The element sets its tools up after its first render; a question asked before would have none.
    await expect.poll(() => el.toolRegistry.list().some((t) => t.name === 'echo' && t.enabled && t.available)).toBe(true);
    try {
      await el.ask('Say x');
      const constrained = (m: string) => engine.calls.filter((c) => c.module === m);
      for (const m of ['planner', 'executor', 'verifier']) {
        expect(constrained(m).length, JSON.stringify(engine.calls)).toBeGreaterThan(0);
        expect(constrained(m).every((c) => c.schema), JSON.stringify(engine.calls)).toBe(true);
      }
      engine.calls.length = 0;
      await putSetting(CONSTRAIN_REPLIES_KEY, false, dbName);
      await el.ask('Say x again');
      expect(engine.calls.filter((c) => c.module === 'planner').length).toBeGreaterThan(0);
      expect(engine.calls.filter((c) => c.schema)).toEqual([]);
    } finally {
      el.remove();
    }
  });
});

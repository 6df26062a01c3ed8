import { describe, expect, it } from 'vitest';
import { BaseGeneratorTool, BASE_GENERATOR_SYSTEM_PROMPT } from './base-generator';
import type { ChatEngine, ChatMessage, FinishReason, GenerateOptions, GenerationResult } from '../engine/chat-engine';
import { chatStream, type ChatStream } from '../engine/chat-stream';

/** An engine that answers with the reversed user message, recording what it was asked. */
class ReversingEngine implements ChatEngine {
  readonly id = 'test:reverse';
  calls: Array<{ messages: ChatMessage[]; options: GenerateOptions }> = [];
  constructor(private readonly finish: FinishReason = 'stop') {}
  stream(messages: ChatMessage[], options: GenerateOptions = {}): ChatStream {
    this.calls.push({ messages, options });
    const user = messages[messages.length - 1].content;
    const result: GenerationResult = { text: ` ${[...user].reverse().join('')} `, promptTokens: [], tokens: [], logprobs: [], adapterId: null, finishReason: this.finish, timings: { prefillMs: 0, decodeMs: 0 } };
    return chatStream(async () => result);
  }
}

const ctx = () => ({ signal: new AbortController().signal, timeoutMs: 1000 });

describe('base generator tool', () => {
  it("sends the query alone, with a system prompt, and returns the engine's answer", async () => {
    const engine = new ReversingEngine();
    const tool = new BaseGeneratorTool({ engine, maxNewTokens: 77 });
    const c = ctx();
    const r = await tool.run({ query: 'abc def' }, c);
    expect(r).toEqual({ ok: true, output: 'fed cba' });
    expect(engine.calls).toHaveLength(1);
    expect(engine.calls[0].messages).toEqual([
      { role: 'system', content: BASE_GENERATOR_SYSTEM_PROMPT },
      { role: 'user', content: 'abc def' },
    ]);
    expect(engine.calls[0].options).toMatchObject({ maxNewTokens: 77, temperature: 0, signal: c.signal });
  });

  it('takes the engine from a getter at call time and reports one that is missing', async () => {
    let current: ChatEngine | undefined;
    const tool = new BaseGeneratorTool({
      engine: () => {
        if (!current) throw new Error('the model is still loading');
        return current;
      },
    });
    expect((await tool.run({ query: 'x' }, ctx())).error).toBe('base_generator: the language model is not available: the model is still loading');
    current = new ReversingEngine();
    expect(await tool.run({ query: 'xy' }, ctx())).toEqual({ ok: true, output: 'yx' });
  });

  it('flags a cut-off answer, an aborted one and an engine failure', async () => {
    expect((await new BaseGeneratorTool({ engine: new ReversingEngine('length') }).run({ query: 'ab' }, ctx())).output).toBe('ba\n[answer cut off at the length limit]');
    const aborted = await new BaseGeneratorTool({ engine: new ReversingEngine('abort') }).run({ query: 'ab' }, ctx());
    expect(aborted).toMatchObject({ ok: false, error: 'base_generator: cancelled' });
    const broken: ChatEngine = { id: 'x', stream: () => chatStream(async () => { throw new Error('device lost'); }) };
    expect(await new BaseGeneratorTool({ engine: broken }).run({ query: 'ab' }, ctx())).toEqual({ ok: false, output: '', error: 'base_generator: device lost' });
  });
});

import { describe, expect, it } from 'vitest';
import type { ChatEngine, ChatMessage } from '../engine/chat-engine';
import { chatStream } from '../engine/chat-stream';
import { PYTHON_CARD } from '../tools/cards';
import { checkQueryFits, QueryTooLongError } from './query-fit';
import { ScriptedEngine } from './scripted-engine';

/** An engine whose "tokens" are characters, with a stated context; it is never asked to chat. */
function counted(id: string, contextTokens: number, counts = true): ChatEngine {
  return {
    id,
    contextTokens,
    ...(counts ? { countPromptTokens: async (m: ChatMessage[]) => m.reduce((n, x) => n + x.content.length, 0) } : {}),
    stream: () => chatStream(() => Promise.reject(new Error('checkQueryFits must not run the engine'))),
  };
}

describe('checkQueryFits', () => {
  it('refuses a question that cannot fit the first prompt, with its token count and the limit', async () => {
    const engines = { planner: counted('planner:tiny', 4096), shared: counted('web-llm:big', 100_000) };
    const q = 'x'.repeat(10_000);
    const err = await checkQueryFits(q, engines, [PYTHON_CARD]).catch((e) => e as QueryTooLongError);
    expect(err).toBeInstanceOf(QueryTooLongError);
    expect(err).toMatchObject({ queryTokens: 10_000, limit: 4096, replyTokens: 256, engineId: 'planner:tiny' });
    expect((err as Error).message).toMatch(/^This question is 10,000 tokens long, too long for planner:tiny: it takes at most 4,096 tokens per call/);
    expect((err as Error).message).toMatch(/Shorten the question to at most about \d[\d,]* tokens\.$/);
  });

  it('lets a question through that fits, and skips engines that state no context or cannot count', async () => {
    const engines = { planner: counted('planner:tiny', 4096), shared: counted('web-llm:big', 100_000) };
    await expect(checkQueryFits('What is 2+2?', engines, [PYTHON_CARD])).resolves.toBeUndefined();
    // The shared engine cannot count: the planner counts for it (one tokenizer family).
    const borrowed = { planner: counted('planner:big', 1_000_000), shared: counted('web-llm:small', 500, false) };
    await expect(checkQueryFits('y'.repeat(1000), borrowed, [PYTHON_CARD])).rejects.toThrow(/too long for web-llm:small/);
    const demo = { planner: new ScriptedEngine({}, 'planner:demo'), shared: new ScriptedEngine({}, 'shared:demo') };
    await expect(checkQueryFits('z'.repeat(100_000), demo, [PYTHON_CARD])).resolves.toBeUndefined();
  });
});

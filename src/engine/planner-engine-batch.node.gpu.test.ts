// PlannerEngine calls that overlap in time are decoded as one generateBatch (qwen2-tiny fixture, byte-level
// tokenizer). Each must come out exactly as the same call run alone without prefix reuse: same tokens, same
// logprobs, its own text stream, and the adapter that was active when it was made.
import { describe, expect, it } from 'vitest';
import { fixturePlannerEngine } from '../../tests/support/tiny-agent';
import { PlannerEngine } from './planner-engine';
import type { TokenGeneration } from './runtime';

const questions = ['Hi!', 'What is 2 + 2?', 'Name a colour.', 'Say something.'];

describe('PlannerEngine: overlapping generations run as one batch', () => {
  let engine: PlannerEngine;

  /** The same call awaited alone, without the KV prefix reuse a lone generate may use. */
  const alone = (prompt: number[], seed: number, maxNewTokens: number, adapter: string | null): Promise<TokenGeneration> => {
    engine.setActiveAdapter(adapter);
    return engine.runtime.generate(prompt, { temperature: 1, seed, maxNewTokens, stopIds: engine.stopIds, reusePrefix: false });
  };

  /**
   * The runtime calls the engine's generations became, as request counts per generateBatch (a lone call
   * goes to generate: 1). The step counters would not do: GPU-drawn tokens the CPU must redraw, and
   * steps in flight past a stop, add steps.
   */
  const runtimeCalls = (): number[] => {
    const rt = engine.runtime;
    const calls: number[] = [];
    const batch = rt.generateBatch.bind(rt);
    const one = rt.generate.bind(rt);
    rt.generateBatch = (reqs) => (calls.push(reqs.length), batch(reqs));
    rt.generate = (p, o) => (calls.push(1), one(p, o));
    return calls;
  };

  it('3 concurrent calls at temperature 1 give exactly the tokens and logprobs of the calls run alone', async () => {
    engine = await fixturePlannerEngine();
    const prompts = questions.slice(0, 3).map((q) => engine.promptIds([{ role: 'user', content: q }]));
    const seeds = [11, 12, 13];
    const want: TokenGeneration[] = [];
    for (const [i, p] of prompts.entries()) want.push(await alone(p, seeds[i], 16, 'fixture'));

    const calls = runtimeCalls();
    const streams: string[][] = prompts.map(() => []);
    const got = await Promise.all(
      prompts.map((p, i) => engine.generate(p, { temperature: 1, seed: seeds[i], maxNewTokens: 16 }, (piece) => void streams[i].push(piece))),
    );
    for (const [i, g] of got.entries()) {
      expect(g.tokens, `call ${i}`).toEqual(want[i].tokens);
      expect(g.logprobs, `call ${i}`).toEqual(want[i].logprobs);
      expect(g.finishReason).toBe(want[i].finishReason);
      expect(g.adapterId).toBe('fixture');
      // Chat prompts share the template's head: the batch copies it from the first one's cache rows.
      if (i > 0) expect(g.timings.cachedPromptTokens).toBeGreaterThan(0);
      expect(streams[i].join('')).toBe(g.text);
      const ended = engine.stopIds.includes(g.tokens[g.tokens.length - 1]);
      expect(g.text).toBe(engine.tokenizer.decode((ended ? g.tokens.slice(0, -1) : g.tokens).filter((t) => t < 256), {}));
    }
    expect(calls, 'one batch of 3').toEqual([3]);
    const lengths = got.map((g) => g.tokens.length);
    expect(lengths.filter((n) => n > 1).length).toBeGreaterThanOrEqual(2);
  });

  it('merges a chat call with a token-id call; calls made under another adapter run next, under it', async () => {
    const prompts = questions.map((q) => engine.promptIds([{ role: 'user', content: q }]));
    const seeds = [21, 22, 23, 24];
    const adapters = ['fixture', 'fixture', null, null];
    const want: TokenGeneration[] = [];
    for (const [i, p] of prompts.entries()) want.push(await alone(p, seeds[i], 10, adapters[i]));

    const calls = runtimeCalls();
    engine.setActiveAdapter('fixture');
    const chat0 = engine.generate(prompts[0], { temperature: 1, seed: seeds[0], maxNewTokens: 10 });
    // The planner worker's generateIds path: token ids straight to the shared batcher.
    const ids1 = engine.batcher.submit(prompts[1], { temperature: 1, seed: seeds[1], maxNewTokens: 10, stopIds: engine.stopIds });
    engine.setActiveAdapter(null);
    const chat2 = engine.generate(prompts[2], { temperature: 1, seed: seeds[2], maxNewTokens: 10 });
    const chat3 = engine.generate(prompts[3], { temperature: 1, seed: seeds[3], maxNewTokens: 10 });
    const [g0, g1, g2, g3] = await Promise.all([chat0, ids1, chat2, chat3]);
    for (const [i, g] of [g0, g1, g2, g3].entries()) {
      expect(g.tokens, `call ${i}`).toEqual(want[i].tokens);
      expect(g.logprobs, `call ${i}`).toEqual(want[i].logprobs);
    }
    expect([g0.adapterId, g2.adapterId, g3.adapterId]).toEqual(['fixture', null, null]);
    // The base model, chosen last, is active again after the 'fixture' batch ran.
    expect(engine.activeAdapterId).toBeNull();
    expect(calls, 'two batches of two').toEqual([2, 2]);
    engine.destroy();
  });
});

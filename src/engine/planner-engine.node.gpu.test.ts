// PlannerEngine (ChatEngine) on the qwen2-tiny fixture with a byte-level tokenizer: the prompt ids are
// exactly the ChatML rendering's bytes, the sampled ids and logprobs agree with scoring the same
// sequence, text streams in pieces that add up to the result, stop strings and aborts end generation.
import { describe, expect, it } from 'vitest';
import { join } from 'node:path';
import { gpuFor } from '../../tests/support/gpu';
import { fixturePlannerEngine } from '../../tests/support/tiny-agent';
import { maxAbsDiff } from '../../tests/support/compare';
import { TINY } from '../../tests/support/qwen2-fixture';
import { BYTE_SPECIALS, byteTokenizerConfig, byteTokenizerJson } from '../../tests/support/byte-tokenizer';
import { PlannerEngine } from './planner-engine';
import { readFileSync } from 'node:fs';
import { memorySource } from './memory-source';

const bytes = (s: string) => [...new TextEncoder().encode(s)];

describe('PlannerEngine on qwen2-tiny', () => {
  let engine: PlannerEngine;
  const messages = [{ role: 'user' as const, content: 'Hi!' }];

  it('reports exact prompt ids, sampled ids, their logprobs and the adapter', async () => {
    engine = await fixturePlannerEngine();
    expect(engine.id).toBe('planner:qwen2-tiny');
    // eos from config.json (319) and the chat end tokens of the tokenizer.
    expect(engine.stopIds.sort((a, b) => a - b)).toEqual([BYTE_SPECIALS.endoftext, BYTE_SPECIALS.im_end, 319]);
    engine.setActiveAdapter('fixture');
    const pieces: string[] = [];
    const stream = engine.stream(messages, { maxNewTokens: 12, temperature: 1, seed: 3 });
    for await (const p of stream) pieces.push(p);
    const r = await stream.result;
    expect(r.promptTokens).toEqual([
      BYTE_SPECIALS.im_start, ...bytes('user\nHi!'), BYTE_SPECIALS.im_end, ...bytes('\n'), BYTE_SPECIALS.im_start, ...bytes('assistant\n'),
    ]);
    expect(r.adapterId).toBe('fixture');
    expect(r.tokens.length).toBe(r.logprobs.length);
    expect(r.tokens.length).toBeGreaterThan(0);
    const scored = await engine.score([[...r.promptTokens, ...r.tokens]]);
    expect(maxAbsDiff(r.logprobs, scored[0].slice(r.promptTokens.length - 1))).toBeLessThan(2e-3);
    expect(pieces.join('')).toBe(r.text);
    const ended = engine.stopIds.includes(r.tokens[r.tokens.length - 1]);
    const textIds = ended ? r.tokens.slice(0, -1) : r.tokens;
    expect(r.text).toBe(engine.tokenizer.decode(textIds.filter((t) => t < 256), {}));
    expect(r.finishReason).toBe(ended ? 'stop' : 'length');
  });

  it('greedy logprobs equal scoring the same tokens; base model reports adapterId null', async () => {
    engine.setActiveAdapter(null);
    const r = await engine.stream(messages, { maxNewTokens: 8 }).result;
    expect(r.adapterId).toBeNull();
    const scored = await engine.score([[...r.promptTokens, ...r.tokens]]);
    expect(maxAbsDiff(r.logprobs, scored[0].slice(r.promptTokens.length - 1))).toBeLessThan(2e-3);
  });

  it('stops at a stop string without returning it, and stops on abort', async () => {
    engine.setActiveAdapter(null);
    const free = await engine.stream(messages, { maxNewTokens: 20 }).result;
    // Pick a stop string from the greedy text itself (deterministic), if it has one.
    const printable = free.text.replace(/[^\x20-\x7e]/g, '');
    expect(printable.length).toBeGreaterThanOrEqual(3);
    const stop = printable.slice(1, 3);
    const at = free.text.indexOf(stop);
    const streamed: string[] = [];
    const stream = engine.stream(messages, { maxNewTokens: 20, stop: [stop] });
    for await (const p of stream) streamed.push(p);
    const r = await stream.result;
    expect(r.finishReason).toBe('stop');
    expect(r.text).toBe(free.text.slice(0, at));
    expect(streamed.join('')).toBe(r.text);
    const ac = new AbortController();
    let seen = 0;
    const aborted = await engine.generate(free.promptTokens, { maxNewTokens: 50, signal: ac.signal }, () => {
      if (++seen === 1) ac.abort();
    });
    expect(seen).toBeGreaterThan(0);
    expect(aborted.finishReason).toBe('abort');
    expect(aborted.tokens.length).toBeLessThan(50);
  });

  it('loads from a Hugging Face folder with tokenizer files, taking eos ids from generation_config.json', async () => {
    const json = (v: unknown) => new TextEncoder().encode(JSON.stringify(v));
    const files = {
      'config.json': readFileSync(join(TINY, 'config.json')),
      'model.safetensors': readFileSync(join(TINY, 'model.safetensors')),
      'tokenizer.json': json(byteTokenizerJson()),
      'tokenizer_config.json': json(byteTokenizerConfig()),
      'generation_config.json': json({ eos_token_id: [300, 301] }),
    };
    const loaded = await PlannerEngine.load(await gpuFor('packed'), memorySource(files, 'models/qwen2-tiny'), { maxContext: 64 });
    try {
      expect(loaded.id).toBe('planner:qwen2-tiny');
      expect([...loaded.stopIds].sort((a, b) => a - b)).toEqual([BYTE_SPECIALS.endoftext, BYTE_SPECIALS.im_end, 300, 301, 319]);
      const r = await loaded.stream(messages, { maxNewTokens: 4 }).result;
      // Same weights and prompt as the engine built by hand: the same greedy tokens.
      engine.setActiveAdapter(null);
      const want = await engine.stream(messages, { maxNewTokens: 4 }).result;
      expect(r.tokens).toEqual(want.tokens);
      expect(r.promptTokens).toEqual(want.promptTokens);
    } finally {
      loaded.destroy();
    }
    await expect(PlannerEngine.load(await gpuFor('packed'), memorySource({ 'config.json': files['config.json'], 'model.safetensors': files['model.safetensors'] }))).rejects.toThrow(/no tokenizer\.json/);
  });
});

// Schema-constrained decoding on a small random Qwen2 (in memory, so it runs in Node/Dawn and in Chromium,
// where Vite bundles the grammar's wasm): a verdict reply parses and names an allowed verdict, its fixed
// keys come by jump-forward, and every token's logprob is the model's own (scoring gives it back).
import { describe, expect, it } from 'vitest';
import { gpuFor } from '../../tests/support/gpu';
import { byteTokenizerConfig, byteTokenizerJson } from '../../tests/support/byte-tokenizer';
import { randomQwen2, toQwen2Config, toWeightSource } from '../../tests/support/random-qwen2';
import { PlannerEngine } from './planner-engine';
import { Qwen2Runtime } from './runtime';
import { Tokenizer } from './tokenizer/tokenizer';

const VERDICT = JSON.stringify({ type: 'object', properties: { verdict: { enum: ['STOP', 'CONTINUE'] }, why: { type: 'string', maxLength: 4 } }, required: ['verdict', 'why'] });

describe('schema-constrained decoding (random model)', () => {
  it('replies parse, follow the enum, take forced tokens, and keep the model logprobs', async () => {
    // 259 byte-level tokens (bytes and three specials) plus a few unused ids.
    const { config, weights } = randomQwen2(41, { numHeads: 2, numKvHeads: 1, headDim: 8, intermediateSize: 24, vocabSize: 264, numLayers: 1, tie: true });
    const rt = await Qwen2Runtime.create(await gpuFor('packed'), toQwen2Config(config), toWeightSource(config, weights), { maxContext: 128, maxBatchRows: 64, logitsRows: 8 });
    const engine = new PlannerEngine(rt, new Tokenizer({ tokenizerJson: byteTokenizerJson(), tokenizerConfig: byteTokenizerConfig() }), 'random');
    try {
      for (const seed of [1, 2]) {
        const r = await engine.stream([{ role: 'user', content: 'Done?' }], { maxNewTokens: 64, temperature: 1, seed, jsonSchema: VERDICT }).result;
        expect(r.finishReason, r.text).toBe('stop');
        const v = JSON.parse(r.text) as { verdict: string; why: string };
        expect(['STOP', 'CONTINUE']).toContain(v.verdict);
        expect(typeof v.why).toBe('string');
        expect(r.forcedTokens).toBeGreaterThanOrEqual('{"verdict": "'.length);
        const scored = await rt.score([[...r.promptTokens, ...r.tokens]]);
        const got = scored[0].slice(r.promptTokens.length - 1);
        r.logprobs.forEach((lp, t) => expect(Math.abs(lp - got[t]), `token ${t}`).toBeLessThan(1e-4));
      }
    } finally {
      rt.destroy();
    }
  });
});

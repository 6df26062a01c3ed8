// Schema-constrained decoding on the random-weight tiny planners (qwen2-tiny in f16/bf16 on the packed
// path, and the 4-bit MLC build on the fused decode), with the byte-level test tokenizer: every reply
// parses and follows its schema, the fixed keys come by jump-forward (forcedTokens > 0), rows of one batch
// with different schemas stay independent, and (issue 26 item 2) re-scoring the rollouts with no update in
// between gives the recorded logprobs to 1e-4 and a clip fraction of 0.
import { describe, expect, it } from 'vitest';
import { join } from 'node:path';
import { gpuFor } from '../../tests/support/gpu';
import { FIXTURES, TINY } from '../../tests/support/qwen2-fixture';
import { byteTokenizerConfig, byteTokenizerJson } from '../../tests/support/byte-tokenizer';
import { GpuPolicyBackend } from '../trainer/gpu-backend';
import { initLoraAdapter } from '../trainer/lora-init';
import { packBatch, type TurnSample } from '../model/samples';
import { Rng } from '../util/rng';
import { loadCheckpoint } from './load-checkpoint';
import { directorySource } from '../io/sources';
import { PlannerEngine } from './planner-engine';
import { Qwen2Runtime } from './runtime';
import { Tokenizer } from './tokenizer/tokenizer';
import type { GenerationResult } from './chat-engine';

const TOOLS = ['Python_Coder_Tool', 'Wikipedia_Search', 'Unit_Converter'];
const PLAN = { type: 'object', properties: { tool_name: { enum: TOOLS }, sub_goal: { type: 'string', maxLength: 8 } }, required: ['tool_name', 'sub_goal'] };
const VERDICT = { type: 'object', properties: { verdict: { enum: ['STOP', 'CONTINUE'] }, explanation: { type: 'string', maxLength: 6 } }, required: ['verdict', 'explanation'] };

/** The reply parsed and checked against one of the two schemas (their keys in order, enums, lengths). */
function follows(r: GenerationResult, schema: typeof PLAN | typeof VERDICT): void {
  expect(r.finishReason, r.text).toBe('stop');
  const v = JSON.parse(r.text) as Record<string, unknown>;
  const keys = Object.keys(schema.properties);
  expect(Object.keys(v)).toEqual(keys);
  const [choice, free] = keys as [keyof typeof v, keyof typeof v];
  expect((schema.properties as Record<string, { enum?: string[] }>)[choice].enum).toContain(v[choice]);
  expect(typeof v[free]).toBe('string');
  // (maxLength is not checked: random weights draw invalid UTF-8, whose stray bytes xgrammar counts as
  // characters while the decoder turns each into U+FFFD; it still bounds the string.)
  expect(r.forced?.length).toBe(r.tokens.length);
  // '{"tool_name": "' (15 bytes) or '{"verdict": "' at least, then the rest of the chosen name and the next key.
  expect(r.forcedTokens).toBeGreaterThanOrEqual(13);
  expect(r.forced!.filter(Boolean).length).toBe(r.forcedTokens);
}

const tokenizer = () => new Tokenizer({ tokenizerJson: byteTokenizerJson(), tokenizerConfig: byteTokenizerConfig() });
const ask = (q: string) => [{ role: 'user' as const, content: q }];

describe('schema-constrained decoding on the tiny planners', () => {
  for (const [label, dir] of [['qwen2-tiny (packed f16 path)', TINY], ['qwen2-tiny 4-bit (fused decode)', join(FIXTURES, 'qwen2-tiny-q4f16_1-MLC')]] as const) {
    it(`${label}: replies follow the schema alone and in a batch with another schema, rows independent`, async () => {
      const ckpt = await loadCheckpoint(directorySource(dir));
      const rt = await Qwen2Runtime.create(await gpuFor('packed'), ckpt.config, ckpt.tensors, { maxContext: 256 });
      ckpt.release();
      const engine = new PlannerEngine(rt, tokenizer(), 'tiny');
      try {
        const alone: GenerationResult[] = [];
        for (let seed = 1; seed <= 4; seed++) {
          const r = await engine.stream(ask(`Question ${seed}?`), { maxNewTokens: 120, temperature: 1, seed, jsonSchema: JSON.stringify(PLAN) }).result;
          follows(r, PLAN);
          alone.push(r);
        }
        // Greedy too (a mask over the argmax).
        follows(await engine.stream(ask('Go?'), { maxNewTokens: 120, jsonSchema: JSON.stringify(VERDICT) }).result, VERDICT);
        // Overlapping calls decode as one batch: plan and verdict rows side by side.
        engine.expectConcurrentCalls(4);
        const before = rt.decodeCounters.rows;
        const mixed = await Promise.all([1, 2, 3, 4].map((seed) => engine.stream(ask(`Question ${seed}?`), { maxNewTokens: 120, temperature: 1, seed, jsonSchema: JSON.stringify(seed % 2 ? PLAN : VERDICT) }).result));
        engine.expectConcurrentCalls(1);
        expect(rt.decodeCounters.rows - before).toBeGreaterThan(0);
        mixed.forEach((r, i) => follows(r, i % 2 === 0 ? PLAN : VERDICT));
        // The plan rows of the batch are what each gives alone (same seed, same prompt): a row sees only its own grammar.
        for (const i of [0, 2]) expect(mixed[i].tokens).toEqual(alone[i].tokens);
        // Each row's logprobs are the model's own: scoring the sequences gives them back.
        const scored = await rt.score(mixed.map((r) => [...r.promptTokens, ...r.tokens]));
        mixed.forEach((r, i) => {
          const got = scored[i].slice(r.promptTokens.length - 1);
          r.logprobs.forEach((lp, t) => expect(Math.abs(lp - got[t]), `row ${i} token ${t}`).toBeLessThan(1e-4));
        });
      } finally {
        rt.destroy();
      }
    });
  }

  it('re-scoring constrained rollouts with no update in between: recorded logprobs to 1e-4, clip fraction 0', async () => {
    const ckpt = await loadCheckpoint(directorySource(TINY));
    const rt = await Qwen2Runtime.create(await gpuFor('packed'), ckpt.config, ckpt.tensors, { maxContext: 256, maxBatchRows: 512 });
    ckpt.release();
    // A LoRA adapter with nonzero B, so the policy is not the base model.
    const adapter = initLoraAdapter(rt.config, { r: 4, alpha: 8 }, new Rng(11));
    const rng = new Rng(12);
    for (const pair of adapter.pairs.values()) pair.B.forEach((_, j, b) => (b[j] = (rng.next() - 0.5) * 0.2));
    const backend = await GpuPolicyBackend.create(rt, adapter, { maxRows: 512 });
    const engine = new PlannerEngine(rt, tokenizer(), 'tiny');
    try {
      engine.expectConcurrentCalls(4);
      const rollouts = await Promise.all([1, 2, 3, 4].map((seed) => engine.stream(ask(`Q${seed}`), { maxNewTokens: 120, temperature: 1, seed, jsonSchema: JSON.stringify(PLAN) }).result));
      engine.expectConcurrentCalls(1);
      rollouts.forEach((r) => expect(r.adapterId).toBe('training'));
      const samples: TurnSample[] = rollouts.map((r, i) => ({
        groupId: 'g', rolloutId: `r${i}`, turn: 0, promptTokens: r.promptTokens, responseTokens: r.tokens, reward: i % 2,
        oldLogprobs: r.logprobs, forced: r.forced, advantage: i % 2 ? 1 : -1, refLogprobs: r.logprobs,
      }));
      const batch = packBatch(samples, undefined, rt.config.vocabSize);
      // Forced tokens take no part in the loss.
      expect(batch.responseTokens).toBe(rollouts.reduce((n, r) => n + r.tokens.length - r.forcedTokens!, 0));
      const current = await backend.logprobs(batch, true);
      for (const row of batch.lossRows) expect(Math.abs(current[row] - batch.oldLogprobs[row]), `row ${row}`).toBeLessThan(1e-4);
      const sums = await backend.accumulate(batch, { epsLow: 0.2, epsHigh: 0.28, beta: 0, klClamp: 10 }, batch.responseTokens);
      expect(sums.tokens).toBe(batch.responseTokens);
      expect(sums.clipped).toBe(0);
      expect(Math.abs(sums.ratio / sums.tokens - 1)).toBeLessThan(1e-4);
    } finally {
      backend.destroy();
      rt.destroy();
    }
  });
});

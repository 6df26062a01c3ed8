// generateBatch decodes several sequences in lockstep, each in its own region of the KV cache. Each
// sequence must come out exactly as generate() makes it alone (same tokens, same logprobs: the kernels
// compute each row as they compute a lone one), on the general decode (f16/f32 weights) and on the fused
// 4-bit decode, with stops, aborts, more requests than decode rows and more rows than the cache holds.
import { describe, expect, it } from 'vitest';
import { alsoInBrowser, gpuFor, isBrowser, weightPaths } from '../../tests/support/gpu';
import { maxAbsDiff } from '../../tests/support/compare';
import { countEncoders } from '../../tests/support/encoder-counts';
import { quantizeModel } from '../../tests/support/q4-model';
import { randomAdapter, randomQwen2, randomTokens, toLoraAdapter, toQwen2Config, toWeightSource } from '../../tests/support/random-qwen2';
import { COPY_DST, MAP_READ } from '../gpu/buffers';
import { Rng } from '../util/rng';
import { GpuStallError } from './decode-stall';
import { Qwen2Runtime, type GenerateRequest, type GenerateTokensOptions, type RuntimeOptions } from './runtime';

const shape = { numHeads: 4, numKvHeads: 2, headDim: 16, intermediateSize: 64, vocabSize: 90, tie: true };

describe('generateBatch: each sequence = generate() alone', async () => {
  const { config, weights } = randomQwen2(81, shape);
  const adapter = randomAdapter(82, config, 4, 8);
  const rng = new Rng(83);
  const prompts = [5, 9, 3, 12, 7, 4, 6, 10].map((n) => randomTokens(rng, n, config.vocabSize));
  const options: GenerateTokensOptions[] = [
    { temperature: 0, maxNewTokens: 10 },
    { temperature: 1, seed: 5, maxNewTokens: 6 },
    { temperature: 0.8, topK: 20, topP: 0.9, seed: 7, maxNewTokens: 12 },
    { temperature: 1.5, seed: 8, maxNewTokens: 8 },
    { temperature: 1, seed: 9, maxNewTokens: 5 },
    { temperature: 0.7, topP: 0.8, seed: 10, maxNewTokens: 9 },
    { temperature: 0, maxNewTokens: 7 },
    { temperature: 1.2, topK: 30, seed: 11, maxNewTokens: 11 },
  ];
  // With the decode rows each serves: the general forward's f16 rows kernel takes 4, the fused 4-bit one 8.
  const models = [
    ['f16/f32 weights (general decode)', () => toWeightSource(config, weights), 4],
    ['4-bit weights (fused decode)', () => quantizeModel(config, weights, 'f16').source, 8],
  ] as const;

  const alone = async (rt: Qwen2Runtime, reqs: GenerateRequest[]) => {
    const out = [];
    for (const r of reqs) out.push(await rt.generate(r.prompt, { ...r.options, reusePrefix: false }));
    return out;
  };

  // One weight path: batching is path-blind, each kernel's two paths are checked against float64 in its own
  // test, and the browser project runs this file on the packed path. (Both paths here doubled what a cold
  // shader cache compiles, minutes on a software GPU.) For the same reason the browser runs the general
  // decode's batches alone: the 4-bit model's (fused decode, 8 rows) took 100 of its 162 s.
  for (const path of (await weightPaths()).slice(0, 1)) {
    for (const [name, source, decodeRows] of alsoInBrowser(models, ([, , rows]) => rows === 4)) {
      const make = async (o: RuntimeOptions = {}) => {
        const rt = await Qwen2Runtime.create(await gpuFor(path), toQwen2Config(config), source(), { maxContext: 64, maxBatchRows: 16, ...o });
        await rt.addAdapter('a', toLoraAdapter(config, adapter));
        rt.setActiveAdapter('a');
        return rt;
      };

      it(`${path}, ${name}: 4 sequences in one batch, then 8 (one batch of 8 or two of 4), with a stop id and onToken`, async () => {
        const rt = await make({ batchContext: 256 });
        try {
          expect(rt.maxDecodeRows).toBe(decodeRows);
          const reqs = prompts.slice(0, 4).map((prompt, i) => ({ prompt, options: options[i] }));
          const want = await alone(rt, reqs);
          const steps0 = rt.decodeCounters.steps;
          const rows0 = rt.decodeCounters.rows;
          const pad0 = rt.decodeCounters.padRows;
          const got = await rt.generateBatch(reqs);
          for (const [i, g] of got.entries()) {
            expect(g.tokens, `request ${i}`).toEqual(want[i].tokens);
            expect(g.logprobs, `request ${i}`).toEqual(want[i].logprobs);
            expect(g.finishReason).toBe('length');
            expect(g.reusedPrefixTokens).toBe(0);
          }
          // One step per token of the longest, every sequence a row of it: 12 - 1 steps for 36 - 4 rows.
          expect(rt.decodeCounters.steps - steps0).toBe(11);
          expect(rt.decodeCounters.rows - rows0).toBe(10 + 6 + 12 + 8 - 4);
          // Steps 6 and 7 have 3 sequences left and compute a padding row each (decodeRowBucket: 3 -> 4), which
          // the exact tokens and logprobs above show changes nothing.
          expect(rt.decodeCounters.padRows - pad0, 'padding rows').toBe(2);

          // Stops: request 0 stops at the id it drew third, request 3 by onToken after 2 tokens.
          const stopAt = want[0].tokens[2];
          let seen = 0;
          const stopping: GenerateRequest[] = [
            { prompt: prompts[0], options: { ...options[0], stopIds: [stopAt] } },
            ...reqs.slice(1, 3),
            { prompt: prompts[3], options: { ...options[3], onToken: () => ++seen >= 2 } },
          ];
          const stopped = await rt.generateBatch(stopping);
          const first = want[0].tokens.indexOf(stopAt);
          expect(stopped[0].tokens).toEqual(want[0].tokens.slice(0, first + 1));
          expect(stopped[0].finishReason).toBe('stop');
          expect(stopped[3].tokens).toEqual(want[3].tokens.slice(0, 2));
          expect(stopped[3].finishReason).toBe('stop');
          // The others run on after their batch-mates left, still exactly as alone.
          expect(stopped[1].tokens).toEqual(want[1].tokens);
          expect(stopped[2].tokens).toEqual(want[2].tokens);
          expect(stopped[2].logprobs).toEqual(want[2].logprobs);

          // 8 requests (a default Flow-GRPO group) of 8 tokens each: one batch of 8 rows on the fused decode,
          // two of 4 on the general one; 8 x 7 rows either way. (Equal lengths keep every step at 8 rows:
          // software GPUs take minutes to compile the kernels of each row count; 4-row batches above cover
          // rows leaving.)
          const eight = prompts.map((prompt, i) => ({ prompt, options: { ...options[i], maxNewTokens: 8 } }));
          const wantEight = await alone(rt, eight);
          const s8 = { ...rt.decodeCounters };
          const gotEight = await rt.generateBatch(eight);
          expect(rt.decodeCounters.steps - s8.steps).toBe(decodeRows === 8 ? 7 : 14);
          expect(rt.decodeCounters.rows - s8.rows).toBe(8 * 7);
          gotEight.forEach((g, i) => {
            expect(g.tokens, `request ${i}`).toEqual(wantEight[i].tokens);
            expect(g.logprobs, `request ${i}`).toEqual(wantEight[i].logprobs);
          });

          // The logprobs are the model's: scoring a batched sequence gives them back.
          const [scored] = await rt.score([[...prompts[2], ...got[2].tokens]]);
          expect(maxAbsDiff(got[2].logprobs, scored.slice(prompts[2].length - 1))).toBeLessThan(2e-3);
        } finally {
          rt.destroy();
        }
      });

      it(`${path}, ${name}: a prompt the batch shares is prefilled once, and region 0 reuses and leaves the cache's prefix`, async () => {
        const rt = await make({ batchContext: 128 });
        try {
          // A GRPO group's first turn: the same prompt G times (different seeds), plus one sharing 8 tokens.
          const P = prompts[3];
          const other = [...P.slice(0, 8), ...prompts[2]];
          const reqs: GenerateRequest[] = [
            { prompt: P, options: { temperature: 1, seed: 1, maxNewTokens: 6 } },
            { prompt: P, options: { temperature: 1, seed: 2, maxNewTokens: 6 } },
            { prompt: P, options: { temperature: 1, seed: 3, maxNewTokens: 6 } },
            { prompt: other, options: { temperature: 0, maxNewTokens: 6 } },
          ];
          // The first batch grows the cache to 128 rows (dropping what it held); later ones fit.
          await rt.generateBatch(reqs);
          const want = await alone(rt, reqs);
          // The cache now holds `other` (the last one run): P's region, at row 0, reuses its first 8 rows.
          const s0 = { ...rt.decodeCounters };
          const got = await rt.generateBatch(reqs);
          expect(rt.decodeCounters.steps - s0.steps, 'one batch').toBe(5);
          expect(got.map((g) => g.reusedPrefixTokens)).toEqual([8, P.length - 1, P.length - 1, 8]);
          got.forEach((g, i) => {
            // Copied rows were computed in another prefill batch: equal up to f32 summation order.
            expect(g.tokens, `request ${i}`).toEqual(want[i].tokens);
            expect(maxAbsDiff(g.logprobs, want[i].logprobs), `request ${i}`).toBeLessThan(1e-4);
          });
          // After the batch the cache holds request 0's tokens at rows 0.., as a lone generate leaves them.
          const next = [...P, ...got[0].tokens.slice(0, -1)];
          const after = await rt.generate(next, { temperature: 0, maxNewTokens: 3 });
          expect(after.reusedPrefixTokens).toBe(next.length - 1);
          const fresh = await rt.generate(next, { temperature: 0, maxNewTokens: 3, reusePrefix: false });
          expect(after.tokens).toEqual(fresh.tokens);
          // reusePrefix: false shares nothing.
          const none = await rt.generateBatch(reqs.map((r) => ({ prompt: r.prompt, options: { ...r.options, reusePrefix: false } })));
          expect(none.map((g) => g.reusedPrefixTokens)).toEqual([0, 0, 0, 0]);
          none.forEach((g, i) => expect(g.logprobs, `request ${i}`).toEqual(want[i].logprobs));
        } finally {
          rt.destroy();
        }
      });

      it(`${path}, ${name}: a prompt head every sequence shares is stored once on the fused decode, so 8 fit where whole regions would not`, async () => {
        // 8 rollouts' later turns: a 24-token head (system prompt, tools, query) and tails of their own.
        // Whole regions need 8 x 30 + 32 = 272 rows; the head stored once (region 0 whole, the others'
        // tails, staging rows for one prompt) needs 134, within the 192-row cache.
        const r3 = new Rng(86);
        const head = randomTokens(r3, 24, config.vocabSize);
        const tails = [3, 5, 2, 4, 6, 3, 4, 5].map((n) => randomTokens(r3, n, config.vocabSize));
        const reqs: GenerateRequest[] = tails.map((t, b) => ({ prompt: [...head, ...t], options: { ...options[b], maxNewTokens: 6 } }));
        const rt = await make({ batchContext: 192 });
        try {
          const want = await alone(rt, reqs);
          const s0 = { ...rt.decodeCounters };
          const got = await rt.generateBatch(reqs);
          const steps = rt.decodeCounters.steps - s0.steps;
          got.forEach((g, i) => {
            expect(g.tokens, `request ${i}`).toEqual(want[i].tokens);
            // The tails were prefilled in chunks of their own (from position 24): f32 summation order only.
            expect(maxAbsDiff(g.logprobs, want[i].logprobs), `request ${i}`).toBeLessThan(1e-4);
          });
          if (decodeRows === 8) {
            expect(steps, 'one batch of 8').toBe(5);
            expect(got.map((g) => g.reusedPrefixTokens)).toEqual([0, 24, 24, 24, 24, 24, 24, 24]);
          } else {
            // The general decode reads one key range per row: whole regions, batches of 4.
            expect(steps, 'two batches').toBe(10);
          }
          expect(rt.decodeCounters.rows - s0.rows).toBe(8 * 5);
          // The last batch's first sequence is left at rows 0.. as a lone generate leaves it: its next turn
          // reuses it.
          const first = decodeRows === 8 ? 0 : 4;
          const next = [...reqs[first].prompt, ...got[first].tokens.slice(0, -1)];
          const after = await rt.generate(next, { temperature: 0, maxNewTokens: 3 });
          expect(after.reusedPrefixTokens).toBe(next.length - 1);
          expect(after.tokens).toEqual((await rt.generate(next, { temperature: 0, maxNewTokens: 3, reusePrefix: false })).tokens);
        } finally {
          rt.destroy();
        }
      });

      it(`${path}, ${name}: the cache's rows decide the batches; batchContext grows it; the next generate reuses nothing`, async () => {
        // Each needs prompt + 20 rows: 25 + 29 fit a 64-row cache, a third does not.
        const reqs = prompts.slice(0, 4).map((prompt, i) => ({ prompt, options: { ...options[i], maxNewTokens: 20 } }));
        const rt = await make();
        try {
          const want = await alone(rt, reqs);
          const kv0 = rt.memory().kvCache;
          const s0 = { ...rt.decodeCounters };
          const got = await rt.generateBatch(reqs);
          got.forEach((g, i) => {
            expect(g.tokens, `request ${i}`).toEqual(want[i].tokens);
            expect(g.logprobs, `request ${i}`).toEqual(want[i].logprobs);
          });
          // Batches {0, 1} and {2, 3} (23 + 32 rows): 19 steps each, two rows per step.
          expect(rt.decodeCounters.steps - s0.steps).toBe(38);
          expect(rt.decodeCounters.rows - s0.rows).toBe(76);
          expect(rt.memory().kvCache).toBe(kv0);
          // A generate after the batches: the cache's first rows hold the last batch's first sequence
          // (request 2), which shares no prefix with prompt 0, so nothing is reused.
          const after = await rt.generate(prompts[0], options[0]);
          expect(after.reusedPrefixTokens).toBe(0);
          expect(after.tokens).toEqual(want[0].tokens.slice(0, 10));
        } finally {
          rt.destroy();
        }
        const big = await make({ batchContext: 128 });
        try {
          const want = await alone(big, reqs);
          const kv0 = big.memory().kvCache;
          const s0 = { ...big.decodeCounters };
          const got = await big.generateBatch(reqs);
          // 109 rows: one batch of 4 in a cache grown from 64 to 128 rows.
          expect(big.decodeCounters.steps - s0.steps).toBe(19);
          expect(big.decodeCounters.rows - s0.rows).toBe(76);
          got.forEach((g, i) => expect(g.tokens, `request ${i}`).toEqual(want[i].tokens));
          expect(big.memory().kvCache).toBe(2 * kv0);
        } finally {
          big.destroy();
        }
      });
    }

    if (!isBrowser) it(`${path}, 4-bit weights: a step's draws are one set of sampler dispatches for all its rows (one more per other options), and no copies; generate() is a batch of one`, async () => {
      const ctx = await gpuFor(path);
      const rt = await Qwen2Runtime.create(ctx, toQwen2Config(config), quantizeModel(config, weights, 'f16').source, { maxContext: 64, maxBatchRows: 16, batchContext: 256 });
      await rt.addAdapter('a', toLoraAdapter(config, adapter));
      rt.setActiveAdapter('a');
      // Counts what each batch step's submission encodes (the runtime labels it 'decoding a batch'), and
      // generate()'s steps ('decoding') and first draw ('sampling').
      let steps: Array<{ dispatches: number; copies: number }> = [];
      let lone: Array<{ label: string; dispatches: number; copies: number }> = [];
      const restore = countEncoders(ctx.device, (label) => {
        if (!['decoding a batch', 'decoding', 'sampling'].includes(label)) return null;
        const step = { label, dispatches: 0, copies: 0 };
        if (label === 'decoding a batch') steps.push(step);
        else lone.push(step);
        return step;
      });
      const run = async (n: number, o: (b: number) => GenerateTokensOptions) => {
        steps = [];
        const reqs = prompts.slice(0, n).map((prompt, b) => ({ prompt, options: { maxNewTokens: 5, seed: b + 1, ...o(b) } }));
        const want = await alone(rt, reqs);
        const got = await rt.generateBatch(reqs);
        got.forEach((g, b) => expect(g.tokens, `request ${b}`).toEqual(want[b].tokens));
        return steps;
      };
      try {
        expect(rt.maxDecodeRows).toBe(8);
        // Equal lengths: steps 1..4 (token 0 comes from the prefill), each with its draws, at 2 and 8 rows.
        const two = await run(2, () => ({ temperature: 1 }));
        const eight = await run(8, () => ({ temperature: 1 }));
        expect(two.length).toBe(4);
        expect(eight.length).toBe(4);
        // The fused forward's dispatches do not depend on the rows; neither do the draws' now.
        expect(eight.map((s) => s.dispatches)).toEqual(two.map((s) => s.dispatches));
        // Tokens go from each draw straight into the next step's ids: nothing is copied (before, each row's
        // logits went to its own sampler and its token back, 2 copies per row).
        expect([...two, ...eight].map((s) => s.copies)).toEqual(Array(8).fill(0));
        // Half the rows greedy: a second plan, whose set is a temperature-1 log-sum-exp, one top-k pass
        // (90 logits are one slice) and the draw.
        const mixed = await run(8, (b) => ({ temperature: b % 2 ? 0 : 1 }));
        expect(mixed.map((s) => s.dispatches)).toEqual(two.map((s) => s.dispatches + 3));
        // Row 0 leaves after 3 tokens: the step after it takes the 7 others' tokens from the draw log.
        const leaving = await run(8, (b) => ({ temperature: 1, maxNewTokens: b === 0 ? 3 : 5 }));
        expect(leaving.map((s) => s.copies)).toEqual([0, 0, 7, 0]);
        // In step (a logits callback), row 0's logits are drawn from where the step left them: only the
        // other row's go to its slot.
        const inStep = await run(2, (b) => ({ temperature: 1, onLogits: b === 1 ? () => undefined : undefined }));
        expect(inStep.map((s) => [s.dispatches, s.copies])).toEqual(two.map((s) => [s.dispatches - 3, 1]));
        // generate() is a batch of one with none of a batch's copies: its first token drawn from the
        // prefill's logits (a temperature-1 log-sum-exp, one top-k pass, the draw), each step after it
        // its forward, logits and draw.
        lone = [];
        await rt.generate(prompts[0], { temperature: 0, maxNewTokens: 5 });
        expect(lone.map((s) => [s.label, s.copies])).toEqual([['sampling', 0], ...Array(4).fill(['decoding', 0])]);
        expect(lone[0].dispatches).toBe(3);
      } finally {
        restore();
        rt.destroy();
      }
    });

    // 4 rows on the general decode, 8 on the fused one (draw-log entries i * 8 + b).
    for (const q4 of alsoInBrowser([false, true], (q) => !q)) it(`${path}${q4 ? ', 4-bit weights, 8 rows' : ''}: tokens the GPU draw leaves undecided are redrawn on the CPU, rows stopping mid-flight, onLogits`, async () => {
      // A top-p nucleus wider than the 64 GPU candidates (a 300-token vocabulary at high temperature) is
      // redrawn on the CPU; pure temperature past their mass is the GPU's tail draw.
      const wide = randomQwen2(84, { ...shape, vocabSize: 300 });
      const src = q4 ? quantizeModel(wide.config, wide.weights, 'f16').source : toWeightSource(wide.config, wide.weights);
      const rt = await Qwen2Runtime.create(await gpuFor(path), toQwen2Config(wide.config), src, { maxContext: 64, maxBatchRows: 16, batchContext: 256 });
      if (q4) {
        // The adapter of the tests above: the same 8-row kernels, compiled once (minutes on software GPUs).
        await rt.addAdapter('a', toLoraAdapter(wide.config, adapter));
        rt.setActiveAdapter('a');
      }
      try {
        const r2 = new Rng(85);
        const ps = [6, 4, 9, 5, 7, 3, 8, 5].map((n) => randomTokens(r2, n, 300));
        const first = await rt.generate(ps[2], { temperature: 0, maxNewTokens: 8, reusePrefix: false });
        const reqs: GenerateRequest[] = q4
          ? // 8 rows to the end (each row count compiles its own kernels, minutes on software GPUs); rows
            // leaving mid-flight are the general case's.
            [4, 20, 0, 1.5, 6, 0.5, 12, 3].map((temperature, i) => ({ prompt: ps[i], options: { temperature, seed: i + 1, maxNewTokens: 12, ...(i === 6 ? { topK: 40 } : {}), ...(i === 1 ? { topP: 0.95 } : {}) } }))
          : [
              { prompt: ps[0], options: { temperature: 4, seed: 1, maxNewTokens: 12 } },
              { prompt: ps[1], options: { temperature: 20, topP: 0.95, seed: 2, maxNewTokens: 12 } },
              // Stops at its third token while later steps are already in flight.
              { prompt: ps[2], options: { temperature: 0, maxNewTokens: 12, stopIds: [first.tokens[2]] } },
              { prompt: ps[3], options: { temperature: 1.5, topP: 0.9, seed: 3, maxNewTokens: 10 } },
            ];
        const want = await alone(rt, reqs);
        const got = await rt.generateBatch(reqs);
        expect(rt.maxDecodeRows).toBe(q4 ? 8 : 4);
        got.forEach((g, i) => {
          expect(g.tokens, `request ${i}`).toEqual(want[i].tokens);
          expect(g.logprobs, `request ${i}`).toEqual(want[i].logprobs);
          expect(g.finishReason, `request ${i}`).toBe(want[i].finishReason);
        });
        if (!q4) expect(got[2].tokens.length).toBeLessThanOrEqual(3);
        expect(got[1].redrawnTokens, 'the CPU redraw path ran').toBeGreaterThan(0);
        // A logits callback puts the whole batch in step: the CPU draws every token, nothing is redrawn.
        const seen: number[] = [];
        const inStep = await rt.generateBatch(reqs.map((r, i) => ({ prompt: r.prompt, options: { ...r.options, onLogits: i === 1 ? (x: Float32Array) => void seen.push(x.length) : undefined } })));
        inStep.forEach((g, i) => {
          expect(g.tokens, `request ${i}`).toEqual(want[i].tokens);
          expect(g.redrawnTokens).toBe(0);
        });
        expect(seen).toEqual(Array(12).fill(300));
      } finally {
        rt.destroy();
      }
    });

    // A GPU read that never settles (a driver dropping a map callback) must fail the decode with an error
    // naming the read within stallTimeoutMs, not hold the runtime's call queue for ever. The backstop
    // timeout covers compiling the kernels on a cold shader cache; the stalls themselves take 2 x 3 s.
    it(`${path}: a GPU read that never settles fails the decode with a GpuStallError naming it, and the runtime goes on`, { timeout: 300_000 }, async () => {
      const ctx = await gpuFor(path);
      const reqs = prompts.slice(0, 4).map((prompt, i) => ({ prompt, options: { ...options[i], maxNewTokens: 6 } }));
      const inStep = reqs.map((r, i) => ({ ...r, options: { ...r.options, onLogits: i === 1 ? () => undefined : undefined } }));
      const create = (o: RuntimeOptions) => Qwen2Runtime.create(ctx, toQwen2Config(config), toWeightSource(config, weights), { maxContext: 64, maxBatchRows: 16, ...o });
      // Kernels compile at their first dispatch on software adapters (inside a read's wait): a runtime with
      // the default bound runs both batches first, so the bounded one's reads wait only on the steps.
      const warm = await create({});
      const want = await warm.generateBatch(reqs);
      await warm.generateBatch(inStep);
      warm.destroy();
      const rt = await create({ stallTimeoutMs: 3000 });
      const proto = Object.getPrototypeOf(ctx.device.createBuffer({ size: 4, usage: MAP_READ | COPY_DST })) as GPUBuffer;
      const mapAsync = proto.mapAsync;
      // From the `from`th read of a buffer labelled `label` on, its map never settles.
      const hang = (label: string, from: number) => {
        let n = 0;
        proto.mapAsync = function (this: GPUBuffer, ...a: Parameters<GPUBuffer['mapAsync']>) {
          return this.label === `readback:${label}` && ++n >= from ? new Promise<undefined>(() => undefined) : mapAsync.apply(this, a);
        };
      };
      try {
        hang('runtime.drawLog', 3);
        const ahead = await rt.generateBatch(reqs).catch((e: unknown) => e);
        expect(ahead).toBeInstanceOf(GpuStallError);
        expect((ahead as GpuStallError).waitedFor).toBe('the draw log of step 3 (rows 0, 1, 2, 3)');
        expect((ahead as GpuStallError).message).toMatch(/within 3 s while decoding a batch/);
        // In step (a logits callback), row 1's logits are read from its slot.
        hang('runtime.batchLogits1', 2);
        const stepped = await rt.generateBatch(inStep).catch((e: unknown) => e);
        expect(stepped).toBeInstanceOf(GpuStallError);
        expect((stepped as GpuStallError).waitedFor).toBe('the logits of token 1 (row 1)');
        proto.mapAsync = mapAsync;
        const got = await rt.generateBatch(reqs);
        got.forEach((g, i) => expect(g.tokens, `request ${i}`).toEqual(want[i].tokens));
      } finally {
        proto.mapAsync = mapAsync;
        rt.destroy();
      }
    });

    it(`${path}: aborts, empty budgets and bad requests`, async () => {
      const rt = await Qwen2Runtime.create(await gpuFor(path), toQwen2Config(config), toWeightSource(config, weights), { maxContext: 64, maxBatchRows: 16 });
      try {
        const aborted = new AbortController();
        aborted.abort();
        const running = new AbortController();
        let n = 0;
        const out = await rt.generateBatch([
          { prompt: prompts[0], options: { maxNewTokens: 8, signal: aborted.signal } },
          { prompt: prompts[1], options: { maxNewTokens: 0 } },
          { prompt: prompts[2], options: { maxNewTokens: 8, signal: running.signal, onToken: () => void (++n === 3 && running.abort()) } },
          { prompt: prompts[3], options: { maxNewTokens: 8 } },
        ]);
        expect(out.map((g) => [g.finishReason, g.tokens.length])).toEqual([['abort', 0], ['length', 0], ['abort', 3], ['length', 8]]);
        expect(await rt.generateBatch([])).toEqual([]);
        await expect(rt.generateBatch([{ prompt: prompts[0], options: { maxNewTokens: 3 } }, { prompt: [1, 2, 900], options: { maxNewTokens: 3 } }])).rejects.toThrow(/request 1: prompt/);
        await expect(rt.generateBatch([{ prompt: prompts[0], options: { maxNewTokens: 3 } }, { prompt: prompts[1], options: { maxNewTokens: 60 } }])).rejects.toThrow(/request 1: .*context limit 64/);
        await expect(rt.generateBatch([{ prompt: prompts[0], options: { maxNewTokens: 3 } }, { prompt: prompts[1], options: { temperature: -1, maxNewTokens: 3 } }])).rejects.toThrow(/request 1: .*temperature/);
        // A failed call leaves the runtime working.
        const [ok] = await rt.generateBatch([{ prompt: prompts[0], options: { maxNewTokens: 3 } }]);
        expect(ok.tokens.length).toBe(3);
      } finally {
        rt.destroy();
      }
    });
  }
});

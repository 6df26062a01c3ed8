// The planner worker driven from the page over comlink, in Chromium: a random model and adapter made
// here are sent as file bytes, then scored, chatted with (streaming) and aborted, against the float64
// reference computed in the page.
import { describe, expect, it } from 'vitest';
import { maxAbsDiff } from '../../tests/support/compare';
import { qwen2RefForward } from '../../tests/support/qwen2-ref';
import { randomAdapter, randomQwen2, toHfFiles, toLoraAdapter } from '../../tests/support/random-qwen2';
import { BYTE_SPECIALS, byteTokenizerConfig, byteTokenizerJson } from '../../tests/support/byte-tokenizer';
import { exportAdapter } from '../io/peft';
import { PlannerClient, RemotePlannerEngine } from './planner-client';
import { WorkerGoneError } from '../util/worker-watch';
import type { TokenGeneration } from '../engine/runtime';

const json = (v: unknown) => new TextEncoder().encode(JSON.stringify(v));

describe('planner worker over comlink', () => {
  it('loads from bytes, scores, switches adapters, streams a chat and aborts', async () => {
    const { config, weights } = randomQwen2(5, { numHeads: 4, numKvHeads: 2, headDim: 8, vocabSize: 300, intermediateSize: 48 });
    const adapter = randomAdapter(6, config);
    const files = {
      ...toHfFiles(config, weights, [BYTE_SPECIALS.im_end]),
      'tokenizer.json': json(byteTokenizerJson()),
      'tokenizer_config.json': json(byteTokenizerConfig()),
    };
    const client = new PlannerClient();
    try {
      const progress: string[] = [];
      const info = await client.load({ kind: 'bytes', files, label: 'random' }, { maxContext: 128 }, (p) => void progress.push(p.file));
      expect(info.hasTokenizer).toBe(true);
      expect(info.chatTemplateSource).toBe('tokenizer_config.json');
      expect(info.noChat).toBeNull();
      expect(info.id).toBe('planner:random');
      expect(progress).toContain('model.safetensors');
      const seqs = [[1, 200, 3, 45, 6], [299, 0, 17]];
      const base = await client.score(seqs);
      seqs.forEach((s, i) => expect(maxAbsDiff(base[i], qwen2RefForward(config, weights, s).logprobs)).toBeLessThan(2e-3));

      const peft = exportAdapter(toLoraAdapter(config, adapter));
      await client.addAdapterBytes('a', peft.config, peft.weights);
      await client.setActiveAdapter('a');
      const ad = await client.score(seqs);
      seqs.forEach((s, i) => expect(maxAbsDiff(ad[i], qwen2RefForward(config, weights, s, adapter).logprobs)).toBeLessThan(2e-3));

      const engine = new RemotePlannerEngine(client, info.id);
      const pieces: string[] = [];
      const stream = engine.stream([{ role: 'user', content: 'hello' }], { maxNewTokens: 6, temperature: 1, seed: 1 });
      for await (const p of stream) pieces.push(p);
      const r = await stream.result;
      expect(r.adapterId).toBe('a');
      expect(r.promptTokens.slice(0, 1)).toEqual([BYTE_SPECIALS.im_start]);
      expect(r.tokens.length).toBe(r.logprobs.length);
      expect(pieces.join('')).toBe(r.text);
      const full = [...r.promptTokens, ...r.tokens];
      const want = qwen2RefForward(config, weights, full, adapter).logprobs.slice(r.promptTokens.length - 1);
      expect(maxAbsDiff(r.logprobs, want)).toBeLessThan(2e-3);

      const ac = new AbortController();
      ac.abort();
      const aborted = await client.generateIds([1, 2, 3], { maxNewTokens: 50, signal: ac.signal });
      expect(aborted.finishReason).toBe('abort');
      expect(aborted.tokens.length).toBeLessThanOrEqual(1);
      // Stop mid-generation: the cancel crosses on the generation's own port, the worker's signal ends it after
      // the current token, and every token it streamed reaches the callback before the call settles.
      const mid = new AbortController();
      const seen: number[] = [];
      const onToken = (id: number) => {
        seen.push(id);
        if (seen.length === 3) mid.abort();
      };
      const stopped = await client.generateIds([1, 2, 3], { maxNewTokens: 100, temperature: 1, seed: 4, signal: mid.signal, onToken });
      expect(stopped.finishReason).toBe('abort');
      expect(stopped.tokens.length).toBeGreaterThanOrEqual(3);
      expect(stopped.tokens.length).toBeLessThan(100);
      expect(seen).toEqual(stopped.tokens);
      await expect(client.score([[1, 300]])).rejects.toThrow(/id 300.*\[0, 300\)/);

      // Calls that reach the worker together are decoded as batches: the same tokens and logprobs as the
      // calls awaited one by one (no prefix reuse on either side, so each sequence runs the same kernels).
      const prompts = [[1, 200, 3], [45, 6, 7, 8], [299, 0, 17, 2, 9], [5, 5]];
      const opts = (i: number) => ({ maxNewTokens: 8, temperature: 1, seed: 10 + i, reusePrefix: false });
      const oneByOne: TokenGeneration[] = [];
      const d0 = await client.decodeStats();
      for (const [i, p] of prompts.entries()) oneByOne.push(await client.generateIds(p, opts(i)));
      const d1 = await client.decodeStats();
      // One by one: every decode step serves one sequence (a step per token after the first, plus any step a
      // CPU redraw recomputes).
      const alone = oneByOne.reduce((a, g) => a + g.tokens.length - 1, 0);
      expect(d1.rows - d0.rows).toBe(d1.steps - d0.steps);
      expect(d1.steps - d0.steps).toBeGreaterThanOrEqual(alone);
      const before = (await client.info()).memory.activations;
      const together = await Promise.all(prompts.map((p, i) => client.generateIds(p, opts(i))));
      // Together: steps serve several sequences (the fixture's f32 weights take up to 4 a step).
      const d2 = await client.decodeStats();
      expect(d2.maxRows).toBe(4);
      expect(d2.rows - d1.rows).toBeGreaterThan(d2.steps - d1.steps);
      together.forEach((g, i) => {
        expect(g.tokens, `call ${i}`).toEqual(oneByOne[i].tokens);
        expect(g.logprobs, `call ${i}`).toEqual(oneByOne[i].logprobs);
      });
      // A batch ran: its per-sequence logits slots and draw log now exist in the worker's runtime.
      expect((await client.info()).memory.activations).toBeGreaterThan(before);

      // Without a chat template the model still scores, and info says why chat is off.
      const { 'tokenizer_config.json': _, ...noTemplate } = files;
      const bare = await client.load({ kind: 'bytes', files: noTemplate, label: 'bare' }, { maxContext: 64 });
      expect(bare).toMatchObject({ hasTokenizer: false, chatTemplateSource: null });
      expect(bare.noChat).toMatch(/^bare has no chat template: tokenizer_config\.json has no chat_template \(or is not there\) and there is no chat_template\.jinja/);
      expect((await client.score([[1, 200, 3]]))[0]).toHaveLength(2);
    } finally {
      client.terminate();
    }
  });

  it('trains through the worker\'s optimizer: start, a step, a checkpoint, export, stop, and its errors reach the page', async () => {
    const { config, weights } = randomQwen2(8, { numHeads: 2, numKvHeads: 1, headDim: 8, vocabSize: 300, intermediateSize: 32 });
    const client = new PlannerClient();
    try {
      await client.load({ kind: 'bytes', files: toHfFiles(config, weights, [BYTE_SPECIALS.im_end]), label: 'trained' }, { maxContext: 64 });
      await expect(client.trainStep([])).rejects.toThrow('no training session is running; call trainStart() first');
      const dbName = `planner-train-${Math.random()}`;
      const started = await client.trainStart({ runId: 'w', adapter: { rank: 2, alpha: 4, targets: ['q', 'v'] }, config: { groupSize: 2, queriesPerStep: 1, microBatchTokens: 16, learningRate: 0.01 }, dbName });
      expect(started).toMatchObject({ runId: 'w', step: 0, resumed: false });
      expect((await client.info()).activeAdapter).toBe(started.adapterId);
      const turn = (rolloutId: string, reward: number, response: number[]) => ({ groupId: 'g', rolloutId, turn: 1, promptTokens: [1, 200, 3], responseTokens: response, reward });
      const stats = await client.trainStep([turn('a', 1, [7, 8]), turn('b', 0, [9, 10])]);
      expect(stats).toMatchObject({ step: 1, optimizerSteps: 1, rewardMean: 0.5, noGradientGroups: 0 });
      expect(await client.trainInfo()).toMatchObject({ step: 1, optimizerSteps: 1 });
      expect((await client.trainCheckpoint()).step).toBe(1);
      expect((await client.exportAdapter()).config.r).toBe(2);
      await expect(client.trainStep([turn('c', 1, Array.from({ length: 20 }, (_, i) => i + 1))])).rejects.toThrow(/a planner turn has 23 tokens, more than the micro-batch of 16/);
      await client.trainStop();
      expect(await client.trainInfo()).toBeNull();
      expect((await client.info()).activeAdapter).toBeNull();
    } finally {
      client.terminate();
    }
  });

  it('rejects a pending call at once, and every later one, when its worker dies mid-generation', async () => {
    const { config, weights } = randomQwen2(7, { numHeads: 2, numKvHeads: 1, headDim: 8, vocabSize: 300, intermediateSize: 32 });
    const files = toHfFiles(config, weights, [BYTE_SPECIALS.im_end]);
    let worker: Worker | undefined;
    const client = new PlannerClient(() => (worker = new Worker(new URL('../../workers/planner.worker.ts', import.meta.url), { type: 'module', name: 'planner' })));
    try {
      await client.load({ kind: 'bytes', files, label: 'dying' }, { maxContext: 512 });
      // Long enough that it is still running when the worker dies (the random model rarely stops early).
      const pending = client.generateIds([1, 2, 3], { maxNewTokens: 400, temperature: 1, seed: 3 });
      const outcome = pending.then(
        () => 'finished',
        (e: Error) => e,
      );
      // What the browser fires when a worker's code throws and nobody catches it.
      worker!.dispatchEvent(new ErrorEvent('error', { message: 'RangeError: out of memory' }));
      const e = await outcome;
      expect(e).toBeInstanceOf(WorkerGoneError);
      expect(String(e)).toMatch(/the planner worker stopped \(an error: RangeError: out of memory\)/);
      expect(client.goneReason).toBe(e);
      await expect(client.score([[1, 2]])).rejects.toBeInstanceOf(WorkerGoneError);
    } finally {
      client.terminate();
    }
  });
});

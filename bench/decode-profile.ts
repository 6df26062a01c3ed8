// npx tsx bench/decode-profile.ts [--q4 1] [--adapter 1] [--tokens N] [--prompt N] [--layers N] [--vocab N]
//   [--shape 0.5b|1.5b]: where a decode token's time goes, for the Qwen2.5-0.5B-shaped planner (--shape 1.5b:
// Qwen2.5-1.5B's shapes; progress on stderr).
// generate() per token = encode the recorded step list (CPU) + GPU work + sampling and reading the token back.
// This times the parts apart:
// - encodeMs: encoding the decode forward + logits steps into a command encoder (CPU only, not submitted);
// - gpuMs: N decode steps encoded into one command buffer, submitted once, waited for (GPU work per token
//   with no readback in between);
// - generateMs: a real generate() per token (greedy), for comparison: decode steps are encoded ahead of the
//   token read-back, so it approaches max(encodeMs, gpuMs) rather than their sum; also at temperature 1
//   (as rollouts sample) and with top-k 40, with the tokens the GPU draw left to the CPU;
// - batch: generateBatch of 2, 4 and maxDecodeRows (8 on 4-bit weights) sequences (a Flow-GRPO group's
//   rollouts decoded together; the last entry's prompts share all but 16 tokens, stored once on the fused
//   decode), tokens/s over all of them, and the GPU time of one 4-row and one
//   maxDecodeRows-row decode step against the 1-row one;
// - draws: the GPU time of the sampler's draw (log-sum-exps, top-k passes, the draw) for 1 row and for
//   maxDecodeRows rows in one set of dispatches (a batch step's draws), greedy and at temperature 1.
// It reads the runtime's recorded step lists through private members: a profiling tool, not an API.
import { requestGpu } from '../src/gpu/device';
import { createStorage, uploadStorage } from '../src/gpu/buffers';
import { DRAW_LOG_WORDS } from '../src/kernels/sampling/sampling';
import { GpuSampler } from '../src/engine/gpu-sampler';
import { recordForward, recordLogits } from '../src/model/forward';
import { canFuseDecode, recordDecodeForward } from '../src/model/decode-forward';
import { ATTN_DECODE_SINGLE_MAX_KEYS } from '../src/kernels/attention/attention.decode';
import { dispatchStep, encodeSteps, type Step } from '../src/model/graph';
import { Qwen2Runtime } from '../src/engine/runtime';
import type { ActivationPlan } from '../src/model/activations';
import type { KvCache } from '../src/model/kv-cache';
import { initLoraAdapter } from '../src/trainer/lora-init';
import { Rng } from '../src/util/rng';
import { flag, log as progress } from './flags';
import { shapedQ4Weights, shapedWeights, shapeNamed } from './shaped-model';

interface RuntimeInternals {
  res: {
    plan(kind: 'decode', rows: number): Promise<ActivationPlan>;
    kvCache(): Promise<KvCache>;
  };
}

async function main(): Promise<void> {
  const ctx = await requestGpu();
  const q4 = flag('q4', '1') === '1';
  const withAdapter = flag('adapter', '1') === '1';
  const tokens = Number(flag('tokens', ctx.caps.isSoftware ? '2' : '64'));
  // --layers N cuts the model to its first N layers (a quick check of the script on a software adapter).
  const shape = flag('shape', '0.5b');
  const base = shapeNamed(shape);
  // --vocab N shrinks the LM head too (run.sh all's smoke run: the 151,936-row head dominates a software GPU).
  const c = { ...base, numLayers: Number(flag('layers', String(base.numLayers))), vocabSize: Number(flag('vocab', String(base.vocabSize))) };
  const rt = await Qwen2Runtime.create(ctx, c, q4 ? shapedQ4Weights(c) : shapedWeights(c), { maxContext: 4096, batchContext: 8192 });
  if (withAdapter) {
    await rt.addAdapter('lora', initLoraAdapter(c, { r: 16, alpha: 32 }, new Rng(1)));
    rt.setActiveAdapter('lora');
  }
  // --prompt N (default 128): the prompt every generate starts from (the smoke run takes a short one).
  const promptTokens = Number(flag('prompt', '128'));
  if (!Number.isInteger(promptTokens) || promptTokens < 17) throw new Error(`decode-profile: --prompt must be an integer >= 17 (a shared head plus 16 own tokens), got '${flag('prompt', '128')}'`);
  const prompt = Array.from({ length: promptTokens }, (_, i) => (i * 7919 + 13) % c.vocabSize);
  progress(`decode-profile: ${c.numLayers} layers uploaded; generating`);
  await rt.generate(prompt, { maxNewTokens: 4, temperature: 0 }); // compiles and records everything
  const t0 = performance.now();
  const gen = await rt.generate(prompt, { maxNewTokens: tokens + 1, temperature: 0, reusePrefix: false });
  const generateMs = gen.decodeMs / Math.max(1, gen.tokens.length - 1);
  const wallMs = performance.now() - t0;
  // Sampling as rollouts do (temperature 1), and with top-k 40 (always decided on the GPU).
  const sampledRun = async (o: { temperature: number; topK?: number }) => {
    const g = await rt.generate(prompt, { ...o, maxNewTokens: tokens + 1, seed: 2, reusePrefix: false });
    return { msPerToken: g.decodeMs / Math.max(1, g.tokens.length - 1), redrawnTokens: g.redrawnTokens, tokens: g.tokens.length };
  };
  const sampledT1 = await sampledRun({ temperature: 1 });
  const sampledTopK40 = await sampledRun({ temperature: 1, topK: 40 });

  progress('decode-profile: generate timed; encoding and GPU time per kind');
  const internals = (rt as unknown as RuntimeInternals).res;
  const plan = await internals.plan('decode', 1);
  const kv = await internals.kvCache();
  let row = prompt.length;
  // What the step lists read when encoded: the cache row a lone sequence writes, and (the n-row steps below)
  // each row's, 4 apart.
  const inputs = () => ({ cacheRow: row, cacheRows: Array.from({ length: 8 }, (_, r) => row + 4 * r) });
  // The step list generate() runs at this context: the fused 4-bit decode where the weights allow it.
  const fused = canFuseDecode(rt.weights);
  const spec = { plan, weights: rt.weights, adapter: rt.adapters.active, n: 1, cache: { kv, maxKeys: ATTN_DECODE_SINGLE_MAX_KEYS } };
  const forward = fused ? await recordDecodeForward(ctx, spec) : await recordForward(ctx, spec);
  const logits = await recordLogits(ctx, plan, rt.weights, 0, 1);
  const steps: Step[][] = [forward, logits];
  const dispatches = steps.flat().filter((s) => s.kind === 'dispatch').length;

  // CPU: encode only.
  const e0 = performance.now();
  for (let i = 0; i < tokens; i++) {
    const enc = ctx.device.createCommandEncoder();
    for (const s of steps) encodeSteps(ctx, enc, s, inputs());
    enc.finish();
  }
  const encodeMs = (performance.now() - e0) / tokens;

  // GPU: `tokens` decode steps back to back in one submission (positions advance through the cache for the
  // copy-based KV writes; the fused path writes the row at plan.pos, the same each step here, which costs
  // the same).
  const gpuMsPerToken = async (lists: Step[][]): Promise<number> => {
    const enc = ctx.device.createCommandEncoder();
    for (let i = 0; i < tokens; i++) {
      row = prompt.length + i;
      for (const s of lists) encodeSteps(ctx, enc, s, inputs());
    }
    const cb = enc.finish();
    const g0 = performance.now();
    ctx.device.queue.submit([cb]);
    await ctx.device.queue.onSubmittedWorkDone();
    return (performance.now() - g0) / tokens;
  };
  const gpuMs = await gpuMsPerToken(steps);

  // Per kernel kind: only that kind's dispatches, timed the same way. Kernels' speed does not depend on the
  // values they read, so each kind's time is what it costs inside the full step list (dispatch overhead
  // included); the kinds' sum should come near gpuMs.
  const kind = (s: Step) => (s.kind === 'copy' ? 'copy' : (s.d.label ?? s.d.pipeline.label ?? '?').replace(/_(f16|f32|packed|sg|plain|\d+).*$/, ''));
  const kinds = new Map<string, Step[]>();
  for (const s of steps.flat()) {
    const k = kind(s);
    if (!kinds.has(k)) kinds.set(k, []);
    kinds.get(k)!.push(s);
  }
  const byKind: Record<string, { count: number; msPerToken: number; usEach: number }> = {};
  for (const [k, ss] of kinds) {
    const ms = await gpuMsPerToken([ss]);
    byKind[k] = { count: ss.length, msPerToken: ms, usEach: (ms * 1000) / ss.length };
  }

  // Batched: B sequences in lockstep (greedy, and temperature 1 as rollouts sample).
  // With `sharedHead` the prompts differ only in their last 16 tokens and may reuse prefixes, as a group's
  // planner turns do: on the fused decode the head is stored once and every row attends it as its prefix
  // range (attention.decode's prefixed variant).
  const batched = async (B: number, temperature: number, sharedHead = false) => {
    const tail = prompt.length - 16;
    const reqs = Array.from({ length: B }, (_, j) => ({
      prompt: prompt.map((t, k) => (sharedHead && k < tail ? t : (t + 101 * j) % c.vocabSize)),
      options: { temperature, seed: 3 + j, maxNewTokens: tokens + 1, reusePrefix: sharedHead },
    }));
    await rt.generateBatch(reqs.map((r) => ({ ...r, options: { ...r.options, maxNewTokens: 3 } }))); // records the n-row steps
    const c0 = { ...rt.decodeCounters };
    const g = await rt.generateBatch(reqs);
    const ms = Math.max(...g.map((x) => x.decodeMs));
    const newTokens = g.reduce((a, x) => a + x.tokens.length - 1, 0);
    const stepsRun = rt.decodeCounters.steps - c0.steps;
    return {
      sequences: B,
      temperature,
      sharedHead,
      tokensPerSec: newTokens / (ms / 1000),
      vsOneSequence: newTokens / (ms / 1000) / (1000 / generateMs),
      msPerStep: ms / Math.max(1, stepsRun),
      rowsPerStep: (rt.decodeCounters.rows - c0.rows) / Math.max(1, stepsRun),
      redrawnTokens: g.reduce((a, x) => a + x.redrawnTokens, 0),
    };
  };
  progress('decode-profile: batches');
  const B = rt.maxDecodeRows;
  const batch = [await batched(2, 0), await batched(4, 0), await batched(4, 1), ...(B > 4 ? [await batched(B, 0), await batched(B, 1)] : []), await batched(B, 1, true)];
  // One n-row step on the GPU (rows at cache rows 4 apart: their values do not change the cost).
  const gpuMsPerStep = async (n: number) => {
    const plan = await internals.plan('decode', n);
    const rowsBuf = uploadStorage(ctx, `profile.cacheRows${n}`, Uint32Array.from({ length: n }, (_, r) => prompt.length + 4 * r));
    const spec = { plan, weights: rt.weights, adapter: rt.adapters.active, n, cache: { kv, maxKeys: ATTN_DECODE_SINGLE_MAX_KEYS, rows: { buffer: rowsBuf } } };
    const ms = await gpuMsPerToken([fused ? await recordDecodeForward(ctx, spec) : await recordForward(ctx, spec), await recordLogits(ctx, plan, rt.weights, 0, n)]);
    rowsBuf.destroy();
    return ms;
  };
  progress('decode-profile: n-row steps and draws');
  const gpuMs4 = await gpuMsPerStep(4);
  const gpuMsMax = B > 4 ? await gpuMsPerStep(B) : gpuMs4;

  // The draws of one step over the decode plan's logits rows (left there by the batches above).
  const drawGpuMs = async (n: number, temperature: number) => {
    const plan = await internals.plan('decode', B);
    const sampler = await GpuSampler.create(ctx, { logits: plan.logits, vocab: c.vocabSize, rows: n });
    const ids = createStorage(ctx, 'profile.drawIds', n * 4);
    const log = createStorage(ctx, 'profile.drawLog', n * DRAW_LOG_WORDS * 4);
    const p = await sampler.drawPlan({ temperature }, { ids, log }, n);
    sampler.setDraws(Array.from({ length: n }, (_, r) => ({ u: 0.5, index: r })));
    const ms = await gpuMsPerToken([p.dispatches.map(dispatchStep)]);
    sampler.destroy();
    ids.destroy();
    log.destroy();
    return { rows: n, temperature, dispatches: p.dispatches.length, msPerStep: ms };
  };
  const draws = [await drawGpuMs(1, 0), await drawGpuMs(B, 0), await drawGpuMs(1, 1), await drawGpuMs(B, 1)];

  const out = {
    device: ctx.caps.description,
    model: `Qwen2.5-${shape.toUpperCase()} shapes${c.numLayers !== base.numLayers ? ` (${c.numLayers} layers)` : ''}${c.vocabSize !== base.vocabSize ? ` (vocab ${c.vocabSize})` : ''}, ${q4 ? 'q4f16_1' : 'f16'}${withAdapter ? ' + r16 LoRA on 7 targets' : ''}`,
    fusedDecode: fused,
    dispatchesPerToken: dispatches,
    copiesPerToken: steps.flat().filter((s) => s.kind === 'copy').length,
    tokens,
    encodeMsPerToken: encodeMs,
    gpuMsPerTokenNoReadback: gpuMs,
    gpuUsPerDispatch: (gpuMs * 1000) / dispatches,
    generateMsPerToken: generateMs,
    generateTokensPerSec: 1000 / generateMs,
    generateWallMs: wallMs,
    generateT1: sampledT1,
    generateT1TopK40: sampledTopK40,
    byKind,
    batch,
    gpuMsPerStep4Rows: gpuMs4,
    gpuStep4RowsVs1Row: gpuMs4 / gpuMs,
    maxDecodeRows: B,
    gpuMsPerStepMaxRows: gpuMsMax,
    gpuStepMaxRowsVs1Row: gpuMsMax / gpuMs,
    draws,
  };
  process.stdout.write(`${JSON.stringify(out, null, 2)}\n`, () => process.exit(0));
}

main().catch((e: Error) => {
  process.stderr.write(`decode-profile failed: ${e.stack ?? e.message}\n`);
  process.exit(1);
});

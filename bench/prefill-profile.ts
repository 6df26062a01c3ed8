// npx tsx bench/prefill-profile.ts [--shape tiny|0.5b] [--q4 1] [--layers N] [--vocab N] [--prompt 1100] [--rank 4]
// Where a prompt's prefill and a sequence's scoring spend GPU time, per kernel kind, on the shapes the
// agent-planner e2e runs (tests/e2e/agent-planner.e2e.test.ts: the qwen2-tiny fixture with a rank-4 adapter
// on all 7 targets, byte-level prompts of ~1100 tokens prefilled in chunks of up to 512 rows, and the
// planner's rollouts scored). Kernels' speed does not depend on the values they read, so random weights of
// the fixture's shape stand in for it. Prints JSON:
// - prefill: each chunk of the prompt (its rows, start position) as prefill() runs it: whole-list GPU ms
//   and per kind;
// - score: one --prompt-token sequence scored as score() does (forward, then the target-logprob chunks of
//   logitsRows rows): whole-list GPU ms and per kind;
// - generate: the same prompt through generate() for one token, after a warm-up (bench/prefill-timing.ts: no
//   prefix reuse): wall ms from call to first token, and the submissions and pipeline compiles in it (none:
//   the warm-up compiled them), so wall time far above the chunks' GPU ms points at the host, not a kernel.
// --q4 1: web-llm's q4f16_1 layout (4-bit weights, fused q/k/v and gate/up, as the planner downloads) instead
// of f16; the 0.5B shapes only (4-bit groups of 32 need widths the tiny fixture's 176 is not a multiple of).
// Also callable from a browser test (profilePrefill) to measure SwiftShader, what CI's e2e runs on. It reads
// the runtime's resources through private members: a profiling tool, not an API.
import type { GpuContext } from '../src/gpu/device';
import type { ActivationPlan } from '../src/model/activations';
import { packSequences, writeBatch } from '../src/engine/batch';
import { recordForward, recordLogits, recordTargetLogprobs, ROW0_INPUT } from '../src/model/forward';
import { encodeSteps, type EncodeInputs, type Step } from '../src/model/graph';
import type { Qwen2Config } from '../src/io/qwen2-config';
import type { KvCache } from '../src/model/kv-cache';
import { prefillRows } from '../src/engine/prefill';
import { Qwen2Runtime } from '../src/engine/runtime';
import { bucket } from '../src/engine/runtime-options';
import type { RuntimeResources } from '../src/engine/runtime-resources';
import { initLoraAdapter } from '../src/trainer/lora-init';
import { Rng } from '../src/util/rng';
import { timedGenerate } from './prefill-timing';
import { QWEN25_05B, shapedQ4Weights, shapedWeights } from './shaped-model';

/** The qwen2-tiny fixture's config.json (../shared/fixtures/qwen2-tiny), as the runtime parses it. */
export const QWEN2_TINY: Qwen2Config = {
  hiddenSize: 64,
  numLayers: 2,
  numHeads: 4,
  numKvHeads: 2,
  headDim: 16,
  intermediateSize: 176,
  vocabSize: 320,
  ropeTheta: 1000000,
  rmsNormEps: 1e-6,
  tieWordEmbeddings: true,
  maxPositionEmbeddings: 512,
  bosTokenId: 318,
  eosTokenIds: [319],
  torchDtype: 'bfloat16',
};

export interface ProfileOptions {
  config: Qwen2Config;
  prompt: number;
  rank: number;
  maxContext: number;
  /** 4-bit weights in web-llm's q4f16_1 layout (bench/shaped-model.ts) instead of f16. */
  q4?: boolean;
}

interface Timed {
  gpuMs: number;
  /** Compute dispatches and buffer copies the lists encode. */
  dispatches: number;
  copies: number;
  byKind: Record<string, { count: number; ms: number }>;
}

const kindOf = (s: Step) => (s.kind === 'copy' ? 'copy' : (s.d.label ?? s.d.pipeline.label ?? '?'));

async function timeLists(ctx: GpuContext, lists: Array<[Step[], EncodeInputs]>): Promise<number> {
  const enc = ctx.device.createCommandEncoder();
  for (const [steps, inputs] of lists) encodeSteps(ctx, enc, steps, inputs);
  const cb = enc.finish();
  const t0 = performance.now();
  ctx.device.queue.submit([cb]);
  await ctx.device.queue.onSubmittedWorkDone();
  return performance.now() - t0;
}

/** The lists' whole GPU time, then each kernel kind's alone (only its steps, encoded the same way). */
async function timeByKind(ctx: GpuContext, lists: Array<[Step[], EncodeInputs]>): Promise<Timed> {
  await timeLists(ctx, lists); // compiles pipelines, warms caches
  const gpuMs = await timeLists(ctx, lists);
  const kinds = new Set(lists.flatMap(([s]) => s.map(kindOf)));
  const byKind: Timed['byKind'] = {};
  for (const k of kinds) {
    const only = lists.map(([s, i]): [Step[], EncodeInputs] => [s.filter((x) => kindOf(x) === k), i]);
    byKind[k] = { count: only.reduce((a, [s]) => a + s.length, 0), ms: await timeLists(ctx, only) };
  }
  const sorted = Object.fromEntries(Object.entries(byKind).sort((a, b) => b[1].ms - a[1].ms));
  const all = lists.flatMap(([s]) => s);
  const copies = all.filter((x) => x.kind === 'copy').length;
  return { gpuMs, dispatches: all.length - copies, copies, byKind: sorted };
}

export async function profilePrefill(ctx: GpuContext, o: ProfileOptions) {
  const c = o.config;
  const rt = await Qwen2Runtime.create(ctx, c, o.q4 ? shapedQ4Weights(c) : shapedWeights(c), { maxContext: o.maxContext });
  await rt.addAdapter('lora', initLoraAdapter(c, { r: o.rank, alpha: 2 * o.rank }, new Rng(1)));
  rt.setActiveAdapter('lora');
  const res = (rt as unknown as { res: RuntimeResources }).res;
  const tokens = Array.from({ length: o.prompt }, (_, i) => (i * 7919 + 13) % c.vocabSize);
  const kv: KvCache = await res.kvCache();
  const C = res.limits.maxBatchRows;

  // Prefill, chunk by chunk as prefill() runs a prompt into the cache.
  const chunks: Array<{ rows: number; start: number } & Timed> = [];
  for (let start = 0; start < tokens.length; start += C) {
    const P = Math.min(C, tokens.length - start);
    const n = prefillRows(res, P, start, kv);
    const plan: ActivationPlan = await res.plan('batch', n);
    const batch = packSequences([tokens.slice(start, start + P)], n);
    for (let r = 0; r < n; r++) {
      batch.pos[r] = start + r;
      batch.ranges[2 * r] = 0;
      batch.ranges[2 * r + 1] = start + r + 1;
    }
    writeBatch(ctx, plan, batch);
    const forward = await recordForward(ctx, { plan, weights: rt.weights, adapter: rt.adapters.active, n, cache: { kv } });
    const logits = await recordLogits(ctx, plan, rt.weights, ROW0_INPUT, 1);
    const inputs = { cacheRow: start, row0: P - 1 };
    chunks.push({ rows: n, start, ...(await timeByKind(ctx, [[forward, inputs], [logits, inputs]])) });
  }

  // Scoring one sequence of the prompt's length, as scoreSequences runs it.
  const n = bucket(tokens.length, C);
  const plan = await res.plan('batch', n);
  const batch = packSequences([tokens], n);
  writeBatch(ctx, plan, batch);
  const forward = await recordForward(ctx, { plan, weights: rt.weights, adapter: rt.adapters.active, n });
  const lists: Array<[Step[], EncodeInputs]> = [[forward, {}]];
  for (let r0 = 0; r0 < batch.tokens; r0 += plan.logitsRows) {
    const rows = Math.min(plan.logitsRows, batch.tokens - r0);
    lists.push([await recordTargetLogprobs(ctx, plan, rt.weights, ROW0_INPUT, rows), { row0: r0 }]);
  }
  const score = { rows: n, ...(await timeByKind(ctx, lists)) };
  const generate = await countedGenerate(ctx, rt, tokens);
  rt.destroy();
  const weights = o.q4 ? 'q4f16_1' : 'f16';
  return { caps: { isSoftware: ctx.caps.isSoftware, f16: ctx.caps.f16 }, weights, fusedDecode: res.fusedDecode, prompt: o.prompt, rank: o.rank, prefill: chunks, score, generate };
}

/**
 * generate(tokens) for one token as the speed benchmark times it (prefill-timing.ts), counting the timed
 * call's queue submissions and pipeline compiles (the device's methods wrapped for its duration).
 */
async function countedGenerate(ctx: GpuContext, rt: Qwen2Runtime, tokens: number[]) {
  const dev = ctx.device as { createComputePipelineAsync: GPUDevice['createComputePipelineAsync'] };
  const queue = ctx.device.queue as { submit: GPUQueue['submit'] };
  const compile = dev.createComputePipelineAsync;
  const submit = queue.submit;
  const generate = rt.generate.bind(rt);
  const count = { calls: 0, submits: 0, compiles: 0 };
  // Only the second call (the timed one) is counted.
  rt.generate = (p, opts) => (count.calls++, generate(p, opts));
  dev.createComputePipelineAsync = (d) => (count.calls === 2 && count.compiles++, compile.call(ctx.device, d));
  queue.submit = (b) => (count.calls === 2 && count.submits++, submit.call(ctx.device.queue, b));
  try {
    const out = await timedGenerate(rt, tokens, 1);
    return { prefillMs: out.prefillMs, tokensPerSec: tokens.length / (out.prefillMs / 1000), submits: count.submits, compiles: count.compiles };
  } finally {
    dev.createComputePipelineAsync = compile;
    queue.submit = submit;
    rt.generate = generate;
  }
}

async function main(): Promise<void> {
  const { requestGpu } = await import('../src/gpu/device');
  const { flag } = await import('./flags');
  const shape = flag('shape', 'tiny');
  if (shape !== 'tiny' && shape !== '0.5b') throw new Error(`--shape must be tiny or 0.5b, got ${shape}`);
  const base = shape === 'tiny' ? QWEN2_TINY : QWEN25_05B;
  const q4flag = flag('q4', '0');
  if (q4flag !== '0' && q4flag !== '1') throw new Error(`--q4 must be 0 or 1, got ${q4flag}`);
  const q4 = q4flag === '1';
  if (q4 && shape === 'tiny') throw new Error('--q4 1 needs --shape 0.5b: 4-bit groups of 32 do not divide the tiny shape\'s intermediate width 176');
  const config = { ...base, numLayers: Number(flag('layers', String(base.numLayers))), vocabSize: Number(flag('vocab', String(base.vocabSize))) };
  const ctx = await requestGpu();
  const out = await profilePrefill(ctx, { config, prompt: Number(flag('prompt', '1100')), rank: Number(flag('rank', '4')), maxContext: 2048, q4 });
  console.log(JSON.stringify(out, null, 1));
  process.exit(0);
}

if (typeof window === 'undefined' && /prefill-profile\.(ts|mjs)$/.test(process.argv[1] ?? '')) void main();

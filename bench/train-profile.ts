// npx tsx bench/train-profile.ts [--q4 1] [--tokens 512] [--seqs 8] [--rank 16] [--response N]
//   [--micro-batch 768] [--layers 24] [--vocab N] [--logits-rows N (default: the trainer's, 32 or 64 with subgroup matrices)] [--reps N] [--shape 0.5b|1.5b]
// Where one Flow-GRPO update's GPU time goes, for the Qwen2.5-0.5B-shaped planner (random values; --q4 picks the
// 4-bit base; --shape 1.5b: Qwen2.5-1.5B's shapes). The update is what grpoStep runs after the reference logprobs:
// zero the LoRA gradients, then per micro-batch the forward that keeps activations, the logprob chunks, the grpo
// loss kernel, the logits+dlogits+LM-head-backward chunks and the layer backward, then the gradient norm and AdamW.
// This builds exactly those recorded step lists (through the trainer's private members: a profiling tool, not an
// API) and times:
// - realUpdateMs: the trainer's own calls (one submission and logprob read-back per micro-batch), wall clock;
// - encodeMs: encoding the whole update into one command encoder (CPU only, not submitted);
// - gpuMs: the whole update in one submission, waited for, no read-back;
// - byKind: each kernel kind alone (only that kind's dispatches / copies / clears, encoded the same way),
//   sorted by ms: kernels' speed does not depend on the values they read, so the kinds' sum comes near gpuMs;
// - byPhase: each phase alone, the same way.
// Every micro-batch is encoded over the inputs of the first one (they share the pass's buffers); with turns
// of equal length only a shorter last micro-batch would differ, and only in its attention ranges.
// --layers N shrinks the model for a software GPU; numbers there say nothing about GPU speed.
import { requestGpu, type GpuContext } from '../src/gpu/device';
import { encodeDispatch, type Dispatch } from '../src/gpu/pipelines';
import { encodeSteps, dispatchStep, type Step } from '../src/model/graph';
import { Qwen2Runtime } from '../src/engine/runtime';
import { defaultLogitsRows } from '../src/engine/runtime-options';
import type { ActivationPlan } from '../src/model/activations';
import { LORA_MODULES } from '../src/io/peft';
import { DEFAULT_GRPO_CONFIG } from '../src/trainer/grpo-config';
import { GpuPolicyBackend } from '../src/trainer/gpu-backend';
import type { LoraBackwardPass } from '../src/model/backward';
import type { GrpoLossParams } from '../src/model/loss';
import { initLoraAdapter } from '../src/trainer/lora-init';
import { microBatches, packBatch, type PackedBatch, type TurnSample } from '../src/model/samples';
import { Rng } from '../src/util/rng';
import { flag, log } from './flags';
import { shapedQ4Weights, shapedWeights, shapeNamed } from './shaped-model';

interface PassInternals {
  plan: ActivationPlan;
  s: { dnF: GPUBuffer };
  stepsFor: LoraBackwardPass['stepsFor'];
  chunkForward(rows: number): Promise<Step[]>;
  chunkBackward(rows: number): Promise<Step[]>;
  lossChunks(b: PackedBatch): Array<[number, number]>;
  writeInputs(b: PackedBatch, normalizer: number | null): void;
}

interface BackendInternals {
  pass: LoraBackwardPass;
  tensors: Array<{ grad: GPUBuffer }>;
  normSteps: Dispatch[];
  adamSteps: Dispatch[];
}

/** A recorded step, or a clearBuffer the trainer encodes between step lists. */
type Item = Step | { kind: 'clear'; buffer: GPUBuffer };

/**
 * Items encoded as the trainer encodes them: `row0` is the encode input the chunk copies read (graph.ts);
 * `ownPasses` mirrors submitDispatches (one compute pass and a fresh bind group per dispatch), which
 * the gradient norm and AdamW use, against encodeSteps' shared pass for the step lists.
 */
interface Segment {
  phase: string;
  items: Item[];
  row0: number | null;
  ownPasses: boolean;
}

const num = (name: string, fallback: string, min = 1): number => {
  const v = Number(flag(name, fallback));
  if (!Number.isInteger(v) || v < min) throw new Error(`train-profile: --${name} must be an integer >= ${min} (got '${flag(name, fallback)}')`);
  return v;
};

function encodeSegments(ctx: GpuContext, enc: GPUCommandEncoder, segments: Segment[]): void {
  for (const seg of segments) {
    const inputs = seg.row0 === null ? {} : { row0: seg.row0 };
    let run: Step[] = [];
    const flush = () => {
      if (run.length) encodeSteps(ctx, enc, run, inputs);
      run = [];
    };
    for (const it of seg.items) {
      if (it.kind === 'clear') {
        flush();
        enc.clearBuffer(it.buffer);
      } else if (seg.ownPasses && it.kind === 'dispatch') {
        flush();
        encodeDispatch(ctx, enc, it.d);
      } else run.push(it);
    }
    flush();
  }
}

const kindOf = (it: Item): string => {
  if (it.kind === 'copy') return 'copy';
  if (it.kind === 'clear') return 'clearBuffer';
  return (it.d.label ?? it.d.pipeline.label ?? '?').replace(/_(f16|f32|packed|sg|plain|\d+).*$/, '');
};

/** The same segments with only the items `keep` accepts (empty segments dropped). */
const only = (segments: Segment[], keep: (it: Item, seg: Segment) => boolean): Segment[] =>
  segments.map((s) => ({ ...s, items: s.items.filter((it) => keep(it, s)) })).filter((s) => s.items.length > 0);

async function main(): Promise<void> {
  const ctx = await requestGpu();
  const q4 = flag('q4', '1') === '1';
  const tokens = num('tokens', '512', 2);
  const seqs = num('seqs', '8');
  const rank = num('rank', '16');
  const response = num('response', String(Math.max(1, Math.floor(tokens / 4))));
  const microBatchTokens = num('micro-batch', String(Math.max(DEFAULT_GRPO_CONFIG.microBatchTokens, tokens)));
  const logitsRows = num('logits-rows', String(defaultLogitsRows(ctx.caps)));
  const reps = num('reps', ctx.caps.isSoftware ? '1' : '3');
  const shape = flag('shape', '0.5b');
  const base = shapeNamed(shape);
  // --vocab N shrinks the LM head too (run.sh all's smoke run: the 151,936-row head dominates a software GPU).
  const c = { ...base, numLayers: num('layers', String(base.numLayers)), vocabSize: num('vocab', String(base.vocabSize)) };
  if (response >= tokens) throw new Error(`train-profile: --response (${response}) must be less than --tokens (${tokens})`);
  if (tokens > microBatchTokens) throw new Error(`train-profile: a turn of --tokens ${tokens} does not fit --micro-batch ${microBatchTokens}`);

  log(`train-profile: uploading ${q4 ? 'q4' : 'f16'} weights (${c.numLayers} layers)`);
  const rt = await Qwen2Runtime.create(ctx, c, q4 ? shapedQ4Weights(c) : shapedWeights(c), { maxContext: tokens + 8, maxBatchRows: microBatchTokens, logitsRows });
  const adapter = initLoraAdapter(c, { r: rank, alpha: 2 * rank, modules: [...LORA_MODULES] }, new Rng(1));
  // As the worker's training session builds it: the pass is sized to microBatchTokens rows.
  const backend = await GpuPolicyBackend.create(rt, adapter, { maxRows: microBatchTokens, logitsRows });
  const bi = backend as unknown as BackendInternals;
  const pass = bi.pass as unknown as PassInternals;

  // A group of `seqs` turns with distinct ids, non-zero advantages and plausible old / reference logprobs.
  const samples: TurnSample[] = Array.from({ length: seqs }, (_, j) => {
    const ids = Array.from({ length: tokens }, (_, i) => (i * 7919 + 13 + j * 104729) % c.vocabSize);
    const lp = Array.from({ length: response }, (_, i) => -1 - ((i * 31 + j) % 7) / 7);
    return { groupId: 'profile', rolloutId: `r${j}`, turn: 0, promptTokens: ids.slice(0, tokens - response), responseTokens: ids.slice(tokens - response), reward: j % 2, advantage: j % 2 ? 1 : -1, oldLogprobs: lp, refLogprobs: lp };
  });
  const batches = microBatches(samples, samples.map((_, i) => i), microBatchTokens).map((mb) => packBatch(samples, mb, c.vocabSize));
  const normalizer = batches.reduce((s, b) => s + b.responseTokens, 0);
  const g = DEFAULT_GRPO_CONFIG;
  const loss: GrpoLossParams = { epsLow: g.epsLow, epsHigh: g.epsHigh, beta: g.beta, klClamp: g.klClamp };
  let step = 0;
  const realUpdate = async (): Promise<number> => {
    const t0 = performance.now();
    backend.zeroGrads();
    for (const b of batches) await backend.accumulate(b, loss, normalizer);
    const norm = await backend.gradNorm();
    await backend.adamw({ lr: g.learningRate, beta1: g.adamBeta1, beta2: g.adamBeta2, eps: g.adamEps, weightDecay: g.weightDecay, step: ++step, gradScale: 1 });
    await ctx.device.queue.onSubmittedWorkDone();
    if (!Number.isFinite(norm)) throw new Error(`train-profile: gradient norm ${norm}`);
    return performance.now() - t0;
  };
  log('train-profile: warm-up update (compiles, records the chunk step lists)');
  const warmupUpdateMs = await realUpdate();
  log(`train-profile: warm-up ${warmupUpdateMs.toFixed(0)} ms; timing the trainer's own update`);
  let realUpdateMs = Infinity;
  for (let i = 0; i < reps; i++) realUpdateMs = Math.min(realUpdateMs, await realUpdate());

  // The update as step lists, in LoraBackwardPass.run's order per micro-batch.
  const segments: Segment[] = [{ phase: 'zero-grads', items: bi.tensors.map((t) => ({ kind: 'clear' as const, buffer: t.grad })), row0: null, ownPasses: false }];
  for (const b of batches) {
    const chunks = pass.lossChunks(b);
    const st = await pass.stepsFor(b, loss);
    segments.push({ phase: 'forward-keep', items: [{ kind: 'clear', buffer: pass.plan.logprobs }, ...st.forward], row0: null, ownPasses: false });
    for (const [r0, rows] of chunks) segments.push({ phase: 'logprob-chunks', items: await pass.chunkForward(rows), row0: r0, ownPasses: false });
    segments.push({ phase: 'grpo-loss', items: st.grpo, row0: null, ownPasses: false });
    segments.push({ phase: 'logits+dlogits', items: [{ kind: 'clear', buffer: pass.s.dnF }], row0: null, ownPasses: false });
    for (const [r0, rows] of chunks) segments.push({ phase: 'logits+dlogits', items: await pass.chunkBackward(rows), row0: r0, ownPasses: false });
    segments.push({ phase: 'layer-backward', items: st.backward, row0: null, ownPasses: false });
  }
  segments.push({ phase: 'grad-norm', items: bi.normSteps.map(dispatchStep), row0: null, ownPasses: true });
  segments.push({ phase: 'adamw', items: bi.adamSteps.map(dispatchStep), row0: null, ownPasses: true });
  pass.writeInputs(batches[0], normalizer);

  const all = segments.flatMap((s) => s.items);
  const count = (k: Item['kind']) => all.filter((it) => it.kind === k).length;
  // The counts before the timings, which take many minutes on a software adapter.
  const phaseCounts = Object.fromEntries([...new Set(segments.map((s) => s.phase))].map((ph) => [ph, segments.filter((s) => s.phase === ph).flatMap((s) => s.items).filter((it) => it.kind === 'dispatch').length]));
  log(`train-profile: dispatches ${count('dispatch')}, copies ${count('copy')}, clears ${count('clear')}; dispatches per phase ${JSON.stringify(phaseCounts)}`);

  // CPU: encode only.
  let encodeMs = Infinity;
  for (let i = 0; i < Math.max(reps, 3); i++) {
    const e0 = performance.now();
    const enc = ctx.device.createCommandEncoder();
    encodeSegments(ctx, enc, segments);
    enc.finish();
    encodeMs = Math.min(encodeMs, performance.now() - e0);
  }

  // GPU: the segments in one submission, waited for; the fastest of `reps`.
  const gpuMs = async (segs: Segment[]): Promise<number> => {
    let best = Infinity;
    for (let i = 0; i < reps; i++) {
      const enc = ctx.device.createCommandEncoder({ label: 'train-profile' });
      encodeSegments(ctx, enc, segs);
      const cb = enc.finish();
      const g0 = performance.now();
      ctx.device.queue.submit([cb]);
      await ctx.device.queue.onSubmittedWorkDone();
      best = Math.min(best, performance.now() - g0);
    }
    return best;
  };
  log('train-profile: timing the whole update');
  const wholeMs = await gpuMs(segments);

  const kinds = [...new Set(all.map(kindOf))];
  // `phases` says where a kind's dispatches sit (e.g. the same matmul-backward kernel serves the LM head and
  // the layers' linears).
  type KindRow = { count: number; ms: number; usEach: number; phases: Record<string, number> };
  const byKind: Record<string, KindRow> = {};
  const kindRows: Array<[string, KindRow]> = [];
  for (const k of kinds) {
    log(`train-profile: timing ${k}`);
    const segs = only(segments, (it) => kindOf(it) === k);
    const n = segs.reduce((s, x) => s + x.items.length, 0);
    const phases: Record<string, number> = {};
    for (const sg of segs) phases[sg.phase] = (phases[sg.phase] ?? 0) + sg.items.length;
    const ms = await gpuMs(segs);
    kindRows.push([k, { count: n, ms: +ms.toFixed(3), usEach: +((ms * 1000) / n).toFixed(2), phases }]);
  }
  kindRows.sort((a, b) => b[1].ms - a[1].ms);
  for (const [k, v] of kindRows) byKind[k] = v;

  const byPhase: Record<string, { dispatches: number; copies: number; clears: number; ms: number; kinds: Record<string, number> }> = {};
  for (const phase of [...new Set(segments.map((s) => s.phase))]) {
    log(`train-profile: timing phase ${phase}`);
    const segs = segments.filter((s) => s.phase === phase);
    const items = segs.flatMap((s) => s.items);
    const kindsHere: Record<string, number> = {};
    for (const it of items) kindsHere[kindOf(it)] = (kindsHere[kindOf(it)] ?? 0) + 1;
    byPhase[phase] = {
      dispatches: items.filter((it) => it.kind === 'dispatch').length,
      copies: items.filter((it) => it.kind === 'copy').length,
      clears: items.filter((it) => it.kind === 'clear').length,
      ms: +(await gpuMs(segs)).toFixed(3),
      kinds: kindsHere,
    };
  }

  const realTokens = seqs * tokens;
  const passRows = bi.pass.rows;
  const out = {
    device: ctx.caps.description,
    model: `Qwen2.5-${shape.toUpperCase()} shapes${c.numLayers !== base.numLayers ? ` (${c.numLayers} layers)` : ''}${c.vocabSize !== base.vocabSize ? ` (vocab ${c.vocabSize})` : ''}, ${q4 ? 'q4f16_1' : 'f16'} + r${rank} LoRA on ${LORA_MODULES.length} targets`,
    tokens: realTokens,
    seqs,
    tokensPerSeq: tokens,
    responsePerSeq: response,
    microBatches: batches.length,
    // Every micro-batch's forward and backward run over all the pass's rows, padding included.
    rowsPerMicroBatch: passRows,
    realRowsPerMicroBatch: batches.map((b) => b.rows),
    // Each micro-batch is computed over its rows rounded up (LoraBackwardPass.computedRows), not the pass's.
    rowsComputed: batches.reduce((a, b) => a + bi.pass.computedRows(b.rows), 0),
    logitsRows,
    dispatches: count('dispatch'),
    copies: count('copy'),
    clears: count('clear'),
    reps,
    warmupUpdateMs: +warmupUpdateMs.toFixed(2),
    realUpdateMs: +realUpdateMs.toFixed(2),
    realTokensPerSec: +(realTokens / (realUpdateMs / 1000)).toFixed(1),
    encodeMs: +encodeMs.toFixed(3),
    gpuMs: +wholeMs.toFixed(3),
    gpuTokensPerSec: +(realTokens / (wholeMs / 1000)).toFixed(1),
    gpuUsPerDispatch: +((wholeMs * 1000) / count('dispatch')).toFixed(2),
    sumOfKindsMs: +kindRows.reduce((s, [, v]) => s + v.ms, 0).toFixed(3),
    byPhase,
    byKind,
  };
  backend.destroy();
  rt.destroy();
  process.stdout.write(`${JSON.stringify(out, null, 2)}\n`, () => process.exit(0));
}

main().catch((e: Error) => {
  process.stderr.write(`train-profile failed: ${e.stack ?? e.message}\n`);
  process.exit(1);
});

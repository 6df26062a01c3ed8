// Records the Qwen2 forward pass for one activation plan as a list of steps (see graph.ts):
//   x = embed(ids)
//   per layer: h = x + o(attn(rope(q(rms1 x)), rope(k(rms1 x)), v(rms1 x)));  x' = h + down(silu(gate(rms2 h)) * up(rms2 h))
//   each projection optionally + scale * B(A ·) from the active adapter
// and the logits of chosen rows. Two attention sources: the batch's own K/V (packed scoring / training,
// ranges = each row's sequence), or a KV cache (generation, ranges = [0, pos+1)).
import type { GpuContext } from '../gpu/device';
import type { ActivationPlan, LayerActivations } from './activations';
import type { GpuAdapter } from './adapters';
import type { KvCache } from './kv-cache';
import type { Qwen2Weights } from './weights';
import { cacheRowInput, copyStep, dispatchStep, encodeInput, type EncodeInputs, type Offset, type Step } from './graph';
import * as ops from './ops';
import { attentionSplit, splitAttentionPays } from '../kernels/attention/attention.split';
import { ATTN_TRAIN_MAX_HD, attentionTrain } from '../kernels/attention/attention.train';
import type { LoraModule } from '../io/peft';

export interface ForwardSpec {
  plan: ActivationPlan;
  weights: Qwen2Weights;
  adapter: GpuAdapter | null;
  /** Rows actually used (<= plan.rows). */
  n: number;
  /**
   * Generation: K/V go to this cache from the row given as the encode input cacheRow (graph.ts) and
   * attention reads the cache. `maxKeys`: the longest key range these steps will see (default the whole
   * cache), for decode attention's split choice.
   */
  cache?: {
    kv: KvCache;
    maxKeys?: number;
    /**
     * Batched decode: each row is a different sequence with its own region of the cache, so row r's K/V go
     * to cache row cacheRows[r] (the encode input, read by the general forward's copies) or buffer[r] (read
     * on the GPU, by the fused decode's KV write), not to cacheRow + r.
     */
    rows?: { buffer: GPUBuffer };
    /**
     * Fused decode of a batch: u32 [n, 2] per row, the key range of a prompt prefix its sequence shares,
     * attended before its own range (batch-layout.ts). The general forward does not read it.
     */
    prefixes?: GPUBuffer;
  };
  /**
   * Locating an overflow (non-finite.ts): row `row`'s residual is copied to `buffer` after each layer's
   * attention (slot 2l) and MLP (2l + 1), and the final norm's output to slot 2 * layers; H f32 per slot.
   */
  probe?: { buffer: GPUBuffer; row: number };
  /**
   * Batch attention (no cache) through the tiled kernel a training forward uses, not the single-pass one:
   * 0.145 against 0.62 ms a layer for 512 rows on an H200 (2026-11-27 profiles). Scoring sets it. Results
   * agree to f32 rounding but depend on where a sequence sits in the packed batch.
   */
  tiledAttention?: boolean;
}

export async function recordForward(ctx: GpuContext, s: ForwardSpec): Promise<Step[]> {
  const { plan, weights: w, adapter, n } = s;
  const c = w.config;
  const H = c.hiddenSize;
  const qd = c.numHeads * c.headDim;
  const kvd = c.numKvHeads * c.headDim;
  const I = c.intermediateSize;
  const steps: Step[] = [];
  const add = (d: Awaited<ReturnType<typeof ops.linear>>) => steps.push(dispatchStep(d));

  for (const d of await ops.embed(ctx, w, plan.ids, plan.layers[0].x, n)) steps.push(dispatchStep(d));

  // Decode over a long KV cache: one workgroup per head would leave most of the GPU idle, so each head's
  // keys are split across workgroups (sized for the cache, the ranges are only known on the GPU). The
  // slices' partial softmaxes go to the cache's scratch, which every layer reuses.
  const maxKeys = s.cache?.kv.maxCtx ?? 0;
  // undefined: no split here; null: a split the cache has no scratch for.
  const partials = s.cache && splitAttentionPays(n, maxKeys) ? s.cache.kv.partials : undefined;
  if (partials === null) throw new Error(`recordForward: the KV cache (${maxKeys} positions) has no split-attention scratch`);

  for (let l = 0; l < c.numLayers; l++) {
    const L = plan.layers[l];
    const W = w.layers[l];
    const lora = async (ms: Array<[LoraModule, GPUBuffer, number]>, x: GPUBuffer, inDim: number) => steps.push(...(await sharedLoraSteps(ctx, adapter, l, L, n, ms, x, inDim)));
    add(await ops.rmsnorm(ctx, L.x, W.inputNorm, L.xn1, L.rstd1, n, H, c.rmsNormEps));
    add(await ops.linear(ctx, { x: L.xn1, W: W.q, bias: W.qBias, y: L.q, n, inDim: H, outDim: qd }));
    add(await ops.linear(ctx, { x: L.xn1, W: W.k, bias: W.kBias, y: L.k, n, inDim: H, outDim: kvd }));
    add(await ops.linear(ctx, { x: L.xn1, W: W.v, bias: W.vBias, y: L.v, n, inDim: H, outDim: kvd }));
    await lora([['q', L.q, qd], ['k', L.k, kvd], ['v', L.v, kvd]], L.xn1, H);
    add(await ops.rope(ctx, { q: L.q, k: L.k, pos: plan.pos, n, nHeads: c.numHeads, nKvHeads: c.numKvHeads, headDim: c.headDim, theta: c.ropeTheta }));
    let K = L.k;
    let V = L.v;
    if (s.cache) {
      const { kv, rows } = s.cache;
      if (rows) {
        for (let r = 0; r < n; r++) {
          const off = (i: EncodeInputs) => cacheRowInput(i, r) * kv.rowBytes;
          steps.push(copyStep(L.k, kv.k[l], kv.rowBytes, off, r * kv.rowBytes));
          steps.push(copyStep(L.v, kv.v[l], kv.rowBytes, off, r * kv.rowBytes));
        }
      } else {
        const off = (i: EncodeInputs) => encodeInput(i, 'cacheRow') * kv.rowBytes;
        steps.push(copyStep(L.k, kv.k[l], n * kv.rowBytes, off));
        steps.push(copyStep(L.v, kv.v[l], n * kv.rowBytes, off));
      }
      K = kv.k[l];
      V = kv.v[l];
    }
    const attn = { q: L.q, k: K, v: V, ranges: plan.ranges, out: L.attn, lse: L.lse, n, nHeads: c.numHeads, nKvHeads: c.numKvHeads, headDim: c.headDim };
    if (partials) for (const d of await attentionSplit(ctx, { ...attn, maxKeys, partials })) add(d);
    // A training forward (keep) and scoring run the tiled kernel. Prefill keeps the single-pass one: it
    // computes each row alone, so a sequence prefilled in a batch gets the bits it gets alone (generateBatch's
    // contract); the tiled kernel's online softmax steps by tiles placed by the batch's layout.
    else if (plan.keep || (s.tiledAttention && c.headDim <= ATTN_TRAIN_MAX_HD)) add(await attentionTrain(ctx, attn));
    else add(await ops.attention(ctx, attn));
    steps.push(copyStep(L.x, L.h, n * H * 4));
    add(await ops.linear(ctx, { x: L.attn, W: W.o, y: L.h, n, inDim: qd, outDim: H, accumulate: true }));
    await lora([['o', L.h, H]], L.attn, qd);
    if (s.probe) steps.push(copyStep(L.h, s.probe.buffer, H * 4, 2 * l * H * 4, s.probe.row * H * 4));
    add(await ops.rmsnorm(ctx, L.h, W.postNorm, L.xn2, L.rstd2, n, H, c.rmsNormEps));
    add(await ops.linear(ctx, { x: L.xn2, W: W.gate, y: L.gate, n, inDim: H, outDim: I }));
    add(await ops.linear(ctx, { x: L.xn2, W: W.up, y: L.up, n, inDim: H, outDim: I }));
    await lora([['gate', L.gate, I], ['up', L.up, I]], L.xn2, H);
    add(await ops.swiglu(ctx, { gate: L.gate, up: L.up, act: L.act, n, intermediate: I }));
    const next = plan.nextX(l);
    steps.push(copyStep(L.h, next, n * H * 4));
    add(await ops.linear(ctx, { x: L.act, W: W.down, y: next, n, inDim: I, outDim: H, accumulate: true }));
    await lora([['down', next, H]], L.act, I);
    if (s.probe) steps.push(copyStep(next, s.probe.buffer, H * 4, (2 * l + 1) * H * 4, s.probe.row * H * 4));
  }
  add(await ops.rmsnorm(ctx, plan.xOut, w.finalNorm, plan.xFinal, plan.rstdFinal, n, H, c.rmsNormEps));
  if (s.probe) steps.push(copyStep(plan.xFinal, s.probe.buffer, H * 4, 2 * c.numLayers * H * 4, s.probe.row * H * 4));
  return steps;
}

/**
 * The adapter's modules among `ms` ([module, output y, out width], all reading x) at layer l, as one
 * shared-input LoRA (ops.loraShared): fewer dispatches per token. None when the adapter has none of them.
 */
export async function sharedLoraSteps(
  ctx: GpuContext, adapter: GpuAdapter | null, l: number, L: LayerActivations, n: number,
  ms: Array<[LoraModule, GPUBuffer, number]>, x: GPUBuffer, inDim: number,
): Promise<Step[]> {
  const members = ms.flatMap(([m, y, outDim]) => {
    const p = adapter?.layers[l]?.[m];
    return p ? [{ x, A: p.A, B: p.B, t: L.t[m], y, n, inDim, outDim, r: p.r, scale: p.scale }] : [];
  });
  return (await ops.loraShared(ctx, members)).map(dispatchStep);
}

/** The first row of a chunk given when the steps are encoded (the encode input row0), not when recorded. */
export const ROW0_INPUT: Offset = (i) => encodeInput(i, 'row0');

/**
 * Logits of rows [row0, row0 + rows) of the final hidden state into plan.logits ([rows, V]), one
 * dispatch per LM-head chunk. rows <= plan.logitsRows; row0 is a fixed row or ROW0_INPUT.
 */
export async function recordLogits(ctx: GpuContext, plan: ActivationPlan, w: Qwen2Weights, row0: Offset, rows: number): Promise<Step[]> {
  const c = w.config;
  const H = c.hiddenSize;
  if (rows > plan.logitsRows) throw new Error(`logits: ${rows} rows exceed the plan's ${plan.logitsRows}`);
  const steps: Step[] = [];
  let x = plan.xFinal;
  // Rows from 0 are read in place (the LM head reads only its first `rows`): a decode step of fewer
  // sequences than its plan's rows copies nothing.
  if (row0 !== 0) {
    const src: Offset = typeof row0 === 'number' ? row0 * H * 4 : (i) => row0(i) * H * 4;
    steps.push(copyStep(plan.xFinal, plan.logitsIn, rows * H * 4, 0, src));
    x = plan.logitsIn;
  }
  for (const ch of w.head) {
    steps.push(dispatchStep(await ops.lmHead(ctx, ch, { x, logits: plan.logits, rows, hidden: H, ld: c.vocabSize })));
  }
  return steps;
}

/**
 * log p(targets[r]) for rows [row0, row0 + rows): logits of those rows, then a log-softmax over the
 * whole vocabulary gathered at each row's target, written to plan.logprobs and plan.lse at row0.
 */
export async function recordTargetLogprobs(ctx: GpuContext, plan: ActivationPlan, w: Qwen2Weights, row0: Offset, rows: number): Promise<Step[]> {
  const V = w.config.vocabSize;
  const bytes = (o: Offset): Offset => (typeof o === 'number' ? o * 4 : (i) => o(i) * 4);
  const steps = await recordLogits(ctx, plan, w, row0, rows);
  steps.push(copyStep(plan.targets, plan.chunkTargets, rows * 4, 0, bytes(row0)));
  steps.push(dispatchStep(await ops.lseChunk(ctx, { logits: plan.logits, stats: plan.chunkStats, targets: plan.chunkTargets, rows, cols: V, ld: V, first: true })));
  steps.push(dispatchStep(await ops.lseFinalize(ctx, { stats: plan.chunkStats, lse: plan.chunkLse, logprob: plan.chunkLogprob, rows })));
  steps.push(copyStep(plan.chunkLogprob, plan.logprobs, rows * 4, bytes(row0)));
  steps.push(copyStep(plan.chunkLse, plan.lse, rows * 4, bytes(row0)));
  return steps;
}

// The decode forward (n <= Q4_SMALL_N = 8 rows against a KV cache) on 4-bit weights with the fused decode linears of
// kernels/q4/q4decode.ts: same contract and same values as recordForward (forward.ts) up to f32 summation
// order, in fewer dispatches and without the residual copies. Per layer:
//   [rmsnorm + q/k/v], or with a q/k/v LoRA: [rmsnorm + LoRA downs], [q/k/v + LoRA ups]
//   -> [rope + KV write] -> [attention]
//   -> [o + LoRA o down and up + residual x]
//   -> [rmsnorm + gate/up + swiglu], or with a gate/up LoRA: [rmsnorm + LoRA downs], [gate/up + LoRA ups + swiglu]
//   -> (LoRA down down) [down + LoRA down up + residual h]
// ropeAndStore is one dispatch (RoPE + the KV-cache writes at row pos, no copies) and attend one workgroup
// per KV head for all its query heads (attention.decode.ts).
// A LoRA's up projection rides in the epilogue of the base linear it adds to; its down projection (which
// needs the linear's whole input) stays a dispatch before it. c_attn with a LoRA up on all of q, k, v binds
// 13 storage buffers: where the device allows fewer, the ups that do not fit run after it as dispatches
// (qkvEpilogueLoras; Chromium's SwiftShader allows 10: one up in the epilogue, k and v grouped after), and
// where not even the group fits (WebGPU's default 8) the q/k/v LoRA runs as in forward.ts.
// q/k/v (and gate/up) must be contiguous row windows of one 4-bit buffer pair, as uploadQ4 makes them
// from MLC's fused c_attn and gate_up_proj.
import type { GpuContext } from '../gpu/device';
import { createStorageChecked } from '../gpu/buffers';
import { q4DecodeLinear, q4DecodeStorage, type Q4DecodeLora } from '../kernels/q4/q4decode';
import { Q4D_LORA_IN_MAX_RANK } from '../kernels/q4/q4decode.wgsl';
import { loraDown, loraUp } from '../kernels/lora/lora';
import { loraDownGroup, loraDownGroupStorage, loraUpGroup } from '../kernels/lora/lora.group';
import { Q4_SMALL_N } from '../kernels/q4/q4matmul.wgsl';
import type { Q4Weight } from '../kernels/q4/q4weight';
import { attentionDecode, attentionDecodeSplits } from '../kernels/attention/attention.decode';
import { ropeKvWrite } from '../kernels/rope/rope.kv';
import type { LayerActivations } from './activations';
import { sharedLoraSteps, type ForwardSpec } from './forward';
import { dispatchStep, type Step } from './graph';
import type { LoraModule } from '../io/peft';
import type { KvCache } from './kv-cache';
import * as ops from './ops';
import { isQ4, type LayerWeights, type MatrixWeight, type Qwen2Weights } from './weights';

const sameBuffers = (a: Q4Weight, b: Q4Weight) => a.qWeight === b.qWeight && a.qScale === b.qScale && (a.scale ?? 'f16') === (b.scale ?? 'f16');
const base = (w: Q4Weight) => w.rowBase ?? 0;

/** `ws` are 4-bit windows of one buffer pair, each starting where the previous one (of `rows[i]` rows) ends. */
function contiguous(ws: MatrixWeight[], rows: number[]): boolean {
  if (!ws.every(isQ4)) return false;
  const q = ws as Q4Weight[];
  return q.every((w, i) => i === 0 || (sameBuffers(q[0], w) && base(w) === base(q[i - 1]) + rows[i - 1]));
}

/** Whether recordDecodeForward can run these weights: every matrix 4-bit, q/k/v and gate/up fused windows. */
export function canFuseDecode(weights: Qwen2Weights): boolean {
  const c = weights.config;
  const qd = c.numHeads * c.headDim;
  const kvd = c.numKvHeads * c.headDim;
  return weights.layers.every(
    (W) => contiguous([W.q, W.k, W.v], [qd, kvd]) && contiguous([W.gate, W.up], [c.intermediateSize]) && isQ4(W.o) && isQ4(W.down),
  );
}

/**
 * Per layer, the input-norm weight and the q, k, v biases packed into one f32 buffer
 * [inputNorm (H) | qBias | kBias | vBias]: the fused c_attn dispatch then binds 8 storage buffers, the
 * WebGPU default limit. Made once per weights object (with copies on the GPU) by prepareDecodeParams (the
 * runtime's reserve() or the first decode record), counted by decodeParamsBytes, and freed by
 * releaseDecodeParams before the weights are destroyed.
 */
interface PackedParams {
  ready: Promise<GPUBuffer[]>;
  /** Set once made (what releaseDecodeParams frees at once). */
  buffers: GPUBuffer[] | null;
  bytes: number;
}
const packedParams = new WeakMap<Qwen2Weights, PackedParams>();

/** Makes (once) the packed per-layer norm + bias buffers the fused decode of `w` reads. */
export function prepareDecodeParams(ctx: GpuContext, w: Qwen2Weights): Promise<GPUBuffer[]> {
  let e = packedParams.get(w);
  if (!e) {
    const c = w.config;
    const H = c.hiddenSize;
    const qd = c.numHeads * c.headDim;
    const kvd = c.numKvHeads * c.headDim;
    const entry: PackedParams = { ready: Promise.resolve([]), buffers: null, bytes: 0 };
    entry.ready = (async () => {
      const out: GPUBuffer[] = [];
      const enc = ctx.device.createCommandEncoder({ label: 'decode-forward.params' });
      try {
        for (const [l, W] of w.layers.entries()) {
          const b = await createStorageChecked(ctx, `decode.layer${l}.norm+qkvBias`, (H + qd + 2 * kvd) * 4);
          out.push(b);
          let at = 0;
          for (const [src, n] of [[W.inputNorm, H], [W.qBias, qd], [W.kBias, kvd], [W.vBias, kvd]] as const) {
            enc.copyBufferToBuffer(src, 0, b, at * 4, n * 4);
            at += n;
          }
        }
      } catch (err) {
        for (const b of out) b.destroy();
        throw err;
      }
      ctx.device.queue.submit([enc.finish()]);
      entry.buffers = out;
      entry.bytes = out.reduce((a, b) => a + b.size, 0);
      return out;
    })();
    e = entry;
    packedParams.set(w, e);
    // A failed build is not cached: the next record tries again.
    e.ready.catch(() => packedParams.delete(w));
  }
  return e.ready;
}

/** GPU bytes of the packed per-layer buffers made for `w` (0 before prepareDecodeParams has finished). */
export function decodeParamsBytes(w: Qwen2Weights): number {
  return packedParams.get(w)?.bytes ?? 0;
}

/** Frees the packed per-layer buffers made for `w` (call before w.destroy()); at once when they exist. */
export function releaseDecodeParams(w: Qwen2Weights): void {
  const e = packedParams.get(w);
  if (!e) return;
  packedParams.delete(w);
  if (e.buffers) for (const b of e.buffers) b.destroy();
  else void e.ready.then((bs) => bs.forEach((b) => b.destroy()), () => undefined);
}

/**
 * For a q/k/v LoRA on the `adapted` ones of [q, k, v]: which of them get their up in c_attn's epilogue on a
 * device with `maxStorage` storage bindings (in q, k, v order, as many as fit), or null to run the LoRA as
 * forward.ts does (none adapted, or the norm + downs group that stores xn1 does not fit, or no up does: the
 * fused form would save nothing).
 */
export function qkvEpilogueLoras(adapted: readonly boolean[], maxStorage: number): boolean[] | null {
  const k = adapted.filter(Boolean).length;
  if (k === 0 || loraDownGroupStorage(k, { xn: true }) > maxStorage) return null;
  const epi = [false, false, false];
  for (const s of [0, 1, 2]) {
    if (!adapted[s]) continue;
    epi[s] = true;
    if (q4DecodeStorage({ params: 1, segments: 3, lora: epi }) > maxStorage) {
      epi[s] = false;
      break;
    }
  }
  return epi.some(Boolean) ? epi : null;
}

/** What a layer seam (ropeAndStore, attend) gets: the spec, the layer, its activations and the step list to append to. */
export interface LayerCtx {
  ctx: GpuContext;
  s: ForwardSpec & { cache: NonNullable<ForwardSpec['cache']> };
  l: number;
  L: LayerActivations;
  steps: Step[];
}

/**
 * RoPE on q (in place) and k, with rope(k) and v written to cache row pos[r] (a batch of sequences: the
 * row in cache.rows.buffer): one dispatch, no copies.
 */
export async function ropeAndStore(lc: LayerCtx): Promise<{ K: GPUBuffer; V: GPUBuffer }> {
  const { ctx, s, l, L, steps } = lc;
  const c = s.weights.config;
  const { kv } = s.cache;
  steps.push(dispatchStep(await ropeKvWrite(ctx, {
    q: L.q, k: L.k, v: L.v, pos: s.plan.pos, cacheRows: s.cache.rows?.buffer, kCache: kv.k[l], vCache: kv.v[l], n: s.n,
    nHeads: c.numHeads, nKvHeads: c.numKvHeads, headDim: c.headDim, theta: c.ropeTheta, maxCtx: kv.maxCtx,
  })));
  return { K: kv.k[l], V: kv.v[l] };
}

/**
 * Attention of the rows' q over the cache's keys [ranges] into L.attn (and L.lse): one workgroup per KV
 * head serving its query heads, split over key slices (plus a combine dispatch) only when the steps may
 * see ranges longer than one workgroup handles well (spec.cache.maxKeys, default the whole cache).
 */
export async function attend(lc: LayerCtx, K: GPUBuffer, V: GPUBuffer): Promise<void> {
  const { ctx, s, L, steps } = lc;
  const c = s.weights.config;
  const kv: KvCache = s.cache.kv;
  const splits = attentionDecodeSplits(Math.min(s.cache.maxKeys ?? kv.maxCtx, kv.maxCtx));
  if (splits > 1 && !kv.partials) throw new Error(`recordDecodeForward: the KV cache (${kv.maxCtx} positions) has no split-attention scratch`);
  const a = { q: L.q, k: K, v: V, ranges: s.plan.ranges, out: L.attn, lse: L.lse, n: s.n, nHeads: c.numHeads, nKvHeads: c.numKvHeads, headDim: c.headDim };
  for (const d of await attentionDecode(ctx, { ...a, splits, partials: kv.partials ?? undefined, prefixes: s.cache.prefixes })) steps.push(dispatchStep(d));
}

/**
 * recordForward (forward.ts) for decode: spec.cache set, n <= Q4_SMALL_N, weights for which canFuseDecode holds.
 * Leaves the plan's buffers that LoRA reads (xn1, xn2, act, attn) holding what recordForward leaves there
 * whenever an adapter module reads them; h and the next layer's x as well.
 */
export async function recordDecodeForward(ctx: GpuContext, s: ForwardSpec): Promise<Step[]> {
  const { plan, weights: w, adapter, n } = s;
  if (!s.cache) throw new Error('recordDecodeForward: decoding needs spec.cache (the KV cache and its row)');
  if (!Number.isInteger(n) || n < 1 || n > Q4_SMALL_N) throw new Error(`recordDecodeForward: n must be 1..${Q4_SMALL_N} rows, got ${n}`);
  if (n > plan.rows) throw new Error(`recordDecodeForward: n ${n} exceeds the plan's ${plan.rows} rows`);
  if (!canFuseDecode(w)) throw new Error('recordDecodeForward: the weights are not 4-bit with fused q/k/v and gate/up windows (canFuseDecode is false)');
  const spec = s as LayerCtx['s'];
  const c = w.config;
  const H = c.hiddenSize;
  const qd = c.numHeads * c.headDim;
  const kvd = c.numKvHeads * c.headDim;
  const I = c.intermediateSize;
  const eps = c.rmsNormEps;
  const params = await prepareDecodeParams(ctx, w);
  const steps: Step[] = [];
  const add = (d: Awaited<ReturnType<typeof q4DecodeLinear>>) => steps.push(dispatchStep(d));

  for (const d of await ops.embed(ctx, w, plan.ids, plan.layers[0].x, n)) add(d);

  for (let l = 0; l < c.numLayers; l++) {
    const L = plan.layers[l];
    const W = w.layers[l] as LayerWeights & Record<'q' | 'gate' | 'o' | 'down', Q4Weight>;
    const P = params[l];
    const has = (m: LoraModule) => !!adapter?.layers[l]?.[m];
    // The epilogue half of module m's LoRA (t from its down projection), or undefined without one.
    const up = (m: LoraModule): (Q4DecodeLora & { t: GPUBuffer }) | undefined => {
      const p = adapter?.layers[l]?.[m];
      return p && { t: L.t[m], B: p.B, rank: p.r, scale: p.scale };
    };
    // Dispatches module m's LoRA down projection t = x A^T and returns its epilogue half.
    const down = async (m: LoraModule, x: GPUBuffer, inDim: number): Promise<Q4DecodeLora | undefined> => {
      const p = adapter?.layers[l]?.[m];
      if (p) add(await loraDown(ctx, { x, A: p.A, t: L.t[m], n, inDim, rank: p.r }));
      return up(m);
    };

    // rmsnorm + c_attn (q, k, v windows in one pass); the normalised x is stored only for a q/k/v LoRA.
    const qkv = ['q', 'k', 'v'] as const;
    const qkvMods = qkv.filter(has);
    const qkvY = [L.q, L.k, L.v];
    const qkvOut = (loras: Array<Q4DecodeLora | undefined>) => [
      { y: L.q, rows: qd, bias: { buffer: P, offset: H }, lora: loras[0] },
      { y: L.k, rows: kvd, bias: { buffer: P, offset: H + qd }, lora: loras[1] },
      { y: L.v, rows: kvd, bias: { buffer: P, offset: H + qd + kvd }, lora: loras[2] },
    ];
    const epi = qkvEpilogueLoras(qkv.map(has), ctx.caps.limits.maxStorageBuffersPerShaderStage);
    if (epi) {
      // As gate/up below: one dispatch normalises x (into xn1) and runs the downs, then c_attn reads xn1
      // with the LoRA ups that fit its bindings in its epilogue; the others (if any) are added after it.
      add(await loraDownGroup(ctx, {
        x: L.x, n, inDim: H, norm: { w: W.inputNorm, eps, xn: L.xn1 },
        modules: qkvMods.map((m) => ({ A: adapter!.layers[l][m]!.A, t: L.t[m], rank: adapter!.layers[l][m]!.r })),
      }));
      add(await q4DecodeLinear(ctx, { W: W.q, x: L.xn1, n, inDim: H, outputs: qkvOut(qkv.map((m, s) => (epi[s] ? up(m) : undefined))) }));
      const rest = qkv.flatMap((m, s) => (has(m) && !epi[s] ? [{ ...up(m)!, y: qkvY[s], outDim: s === 0 ? qd : kvd }] : []));
      if (rest.length === 2) add(await loraUpGroup(ctx, { n, modules: rest }));
      else if (rest.length === 1) add(await loraUp(ctx, { ...rest[0], n }));
    } else {
      add(await q4DecodeLinear(ctx, {
        W: W.q, x: L.x, n, inDim: H,
        norm: { w: { buffer: P, offset: 0 }, eps, xn: qkvMods.length > 0 ? L.xn1 : undefined },
        outputs: qkvOut([undefined, undefined, undefined]),
      }));
      steps.push(...(await sharedLoraSteps(ctx, adapter, l, L, n, [['q', L.q, qd], ['k', L.k, kvd], ['v', L.v, kvd]], L.xn1, H)));
    }
    const lc: LayerCtx = { ctx, s: spec, l, L, steps };
    const { K, V } = await ropeAndStore(lc);
    await attend(lc, K, V);

    // h = x + o(attn) (+ LoRA o), no copy of x into h first. o's LoRA down runs in the o dispatch itself
    // (each workgroup forms t from attn and A; attn is only qd wide) up to its rank limit. The MLP down's
    // input is I wide (5.4x qd at 0.5B): its LoRA down stays a dispatch.
    const po = adapter?.layers[l]?.o;
    const oLora = po && po.r <= Q4D_LORA_IN_MAX_RANK ? { A: po.A, B: po.B, rank: po.r, scale: po.scale } : await down('o', L.attn, qd);
    add(await q4DecodeLinear(ctx, { W: W.o, x: L.attn, n, inDim: qd, outputs: [{ y: L.h, rows: H, lora: oLora }], residual: L.x }));

    if (has('gate') || has('up')) {
      // The LoRA down projections read rms2(h): one dispatch normalises h (and stores it in xn2) and runs
      // both downs, then gate/up reads xn2 with the ups and the product in its epilogue (a norm prologue
      // there would need a ninth storage binding).
      const ms = (['gate', 'up'] as const).filter(has);
      add(await loraDownGroup(ctx, {
        x: L.h, n, inDim: H, norm: { w: W.postNorm, eps, xn: L.xn2 },
        modules: ms.map((m) => ({ A: adapter!.layers[l][m]!.A, t: L.t[m], rank: adapter!.layers[l][m]!.r })),
      }));
      add(await q4DecodeLinear(ctx, { W: W.gate, x: L.xn2, n, inDim: H, swiglu: { act: L.act, intermediate: I, gateLora: up('gate'), upLora: up('up') } }));
    } else {
      add(await q4DecodeLinear(ctx, { W: W.gate, x: L.h, n, inDim: H, norm: { w: { buffer: W.postNorm }, eps }, swiglu: { act: L.act, intermediate: I } }));
    }

    // next x = h + down(act) (+ LoRA down), no copy of h first.
    const downLora = await down('down', L.act, I);
    add(await q4DecodeLinear(ctx, { W: W.down, x: L.act, n, inDim: I, outputs: [{ y: plan.nextX(l), rows: H, lora: downLora }], residual: L.h }));
  }
  add(await ops.rmsnorm(ctx, plan.xOut, w.finalNorm, plan.xFinal, plan.rstdFinal, n, H, eps));
  return steps;
}

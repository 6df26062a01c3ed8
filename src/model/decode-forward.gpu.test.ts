// The fused decode forward against recordForward on a random 4-bit model (MLC layout) in a KV cache:
// same hidden rows and logits (f32 summation order differs), the same LoRA-visible activations, with
// and without an adapter on all 7 modules, and fewer dispatches with no copies but the KV writes. The
// adapters also run on narrower binding limits than the device's (lavapipe: 16, every q/k/v LoRA up in
// c_attn's epilogue): 10 (Chromium's SwiftShader: one up in the epilogue, the others after c_attn) and
// WebGPU's default 8 (the q/k/v LoRA as in recordForward: ups after c_attn).
import { describe, expect, it } from 'vitest';
import { alsoInBrowser, gpuFor, weightPaths } from '../../tests/support/gpu';
import { quantizeModel } from '../../tests/support/q4-model';
import { randomAdapter, randomQwen2, randomTokens, toLoraAdapter, toQwen2Config } from '../../tests/support/random-qwen2';
import { readF32, writeBuffer } from '../gpu/buffers';
import { relMaxErr } from '../kernels/common/testing';
import { Rng } from '../util/rng';
import { ActivationPlan } from './activations';
import { AdapterSet } from './adapters';
import { canFuseDecode, qkvEpilogueLoras, recordDecodeForward, releaseDecodeParams } from './decode-forward';
import { Q4D_MAX_STORAGE } from '../kernels/q4/q4decode';
import { recordForward, recordLogits } from './forward';
import { encodeSteps, type EncodeInputs, type Step } from './graph';
import { KvCache } from './kv-cache';
import { Qwen2Weights } from './weights';
import type { GpuContext } from '../gpu/device';

// Both paths compute the same f32 values summed in a different order; relative to the largest value.
const TOL = 2e-5;

function run(ctx: GpuContext, inputs: EncodeInputs, ...lists: Step[][]): void {
  const enc = ctx.device.createCommandEncoder({ label: 'decode-forward.test' });
  for (const s of lists) encodeSteps(ctx, enc, s, inputs);
  ctx.device.queue.submit([enc.finish()]);
}

/** ctx as a device that grants only `storage` storage bindings per stage (same device and pipeline cache). */
const withStorageLimit = (ctx: GpuContext, storage: number): GpuContext => ({
  ...ctx, caps: { ...ctx.caps, limits: { ...ctx.caps.limits, maxStorageBuffersPerShaderStage: storage } },
});

const count = (steps: Step[]) => ({ dispatches: steps.filter((s) => s.kind === 'dispatch').length, copies: steps.filter((s) => s.kind === 'copy') });

describe('recordDecodeForward (fused 4-bit decode) vs recordForward', async () => {
  for (const path of await weightPaths()) {
    // [scale, decode rows, KV-cache length (over 1024 the split attention runs)]
    // f32 scales give the same WGSL on Dawn's two paths and in Chromium: the browser runs the f16-scale case.
    for (const [scale, n, maxCtx] of alsoInBrowser([['f16', 1, 32], ['f32', 2, 1100]] as const, ([scale]) => scale === 'f16')) {
      it(`${path}: q4${scale}_1, ${n} row(s) per step, cache ${maxCtx}: same hidden rows and logits without a LoRA, with one on all 7 modules, and on k, up, down`, async () => {
        const ctx = await gpuFor(path);
        const narrow = withStorageLimit(ctx, Q4D_MAX_STORAGE);
        // A limit narrower than the device's only: a pipeline past the device's own would not validate.
        const ten = ctx.caps.limits.maxStorageBuffersPerShaderStage >= 10 ? withStorageLimit(ctx, 10) : null;
        const { config: rc, weights: rw } = randomQwen2(31 + n, { numHeads: 4, numKvHeads: 2, headDim: 16, intermediateSize: 96, vocabSize: 40, numLayers: 2 });
        const config = toQwen2Config(rc);
        const { source } = quantizeModel(rc, rw, scale);
        const weights = await Qwen2Weights.upload(ctx, config, source);
        expect(canFuseDecode(weights)).toBe(true);
        const adapters = new AdapterSet(ctx, config);
        const adapter = await adapters.add('a', toLoraAdapter(rc, randomAdapter(77, rc, 4, 8)));
        // Some modules only: one of q/k/v, one of gate/up (a single LoRA down), none on o.
        const partial = await adapters.add('p', toLoraAdapter(rc, randomAdapter(78, rc, 2, 4, ['k', 'up', 'down'])));
        const kv = await KvCache.create(ctx, config, maxCtx);
        const rng = new Rng(5 + n);
        const prompt = randomTokens(rng, 6, config.vocabSize);
        const P = prompt.length;
        const prefill = await ActivationPlan.create(ctx, config, { rows: P, loraRank: 4 });
        const plan = await ActivationPlan.create(ctx, config, { rows: n, loraRank: 4, logitsRows: n });
        const H = config.hiddenSize;
        const V = config.vocabSize;
        try {
          for (const [ad, dctx] of [[null, ctx], [adapter, ctx], [partial, ctx], ...(ten ? [[adapter, ten] as const] : []), [adapter, narrow], [partial, narrow]] as const) {
            // Prefill the prompt into the cache with the existing path.
            writeBuffer(ctx, prefill.ids, Uint32Array.from(prompt));
            writeBuffer(ctx, prefill.pos, Uint32Array.from(prompt, (_, i) => i));
            writeBuffer(ctx, prefill.ranges, Uint32Array.from(prompt.flatMap((_, i) => [0, i + 1])));
            let row = 0;
            const cache = { kv };
            run(ctx, { cacheRow: row }, await recordForward(ctx, { plan: prefill, weights, adapter: ad, n: P, cache }));
            const spec = { plan, weights, adapter: ad, n, cache };
            const ref = await recordForward(ctx, spec);
            const fused = await recordDecodeForward(dctx, spec);
            const logits = await recordLogits(ctx, plan, weights, 0, n);

            const r = count(ref);
            const f = count(fused);
            expect(f.dispatches).toBeLessThan(r.dispatches);
            // RoPE and the KV-cache writes are one dispatch (rows at pos): no copies at all.
            expect(f.copies.length).toBe(0);
            expect(r.copies.length).toBe(4 * config.numLayers);
            if (ad === adapter && dctx === ctx) {
              // Against the unfused q/k/v LoRA (8 bindings: c_attn, the downs, a q up, a k/v up group): with
              // all three ups in c_attn's epilogue (13 bindings) 2 dispatches fewer a layer, 10 instead of 12;
              // with one (10 bindings) the k/v up group stays, 1 fewer.
              const unfused = count(await recordDecodeForward(narrow, spec)).dispatches;
              if (ten) expect(unfused - count(await recordDecodeForward(ten, spec)).dispatches).toBe(config.numLayers);
              const all = qkvEpilogueLoras([true, true, true], ctx.caps.limits.maxStorageBuffersPerShaderStage)?.every(Boolean);
              if (all) expect(unfused - f.dispatches).toBe(2 * config.numLayers);
              // o's LoRA down runs inside the o dispatch: the only LoRA down left a dispatch of its own is the
              // MLP down's, one a layer (9 dispatches a layer with every q/k/v up in c_attn's epilogue, one
              // more where the attention is split).
              expect(fused.filter((s) => s.kind === 'dispatch' && s.d.label === 'lora_down').length).toBe(config.numLayers);
            }

            const lastLogits: Float32Array[] = [];
            for (let step = 0; step < 3; step++) {
              const p0 = P + step * n;
              const toks = randomTokens(rng, n, V);
              writeBuffer(ctx, plan.ids, Uint32Array.from(toks));
              writeBuffer(ctx, plan.pos, Uint32Array.from(toks, (_, i) => p0 + i));
              writeBuffer(ctx, plan.ranges, Uint32Array.from(toks.flatMap((_, i) => [0, p0 + i + 1])));
              row = p0;
              const read = async () => {
                const L = plan.layers[0];
                return {
                  x: await readF32(ctx, plan.xFinal, n * H),
                  logits: await readF32(ctx, plan.logits, n * V),
                  act: await readF32(ctx, L.act, n * config.intermediateSize),
                  attn: await readF32(ctx, L.attn, n * H),
                  xn: await readF32(ctx, L.xn1, n * H),
                };
              };
              // The reference writes this step's cache rows, then the fused path rewrites them (equal up
              // to rounding) and attends over the same earlier rows.
              run(ctx, { cacheRow: row }, ref, logits);
              const want = await read();
              run(ctx, { cacheRow: row }, fused, logits);
              const got = await read();
              expect(relMaxErr(got.x, want.x), `step ${step} hidden`).toBeLessThan(TOL);
              expect(relMaxErr(got.logits, want.logits), `step ${step} logits`).toBeLessThan(TOL);
              expect(relMaxErr(got.act, want.act), `step ${step} act`).toBeLessThan(TOL);
              expect(relMaxErr(got.attn, want.attn), `step ${step} attn`).toBeLessThan(TOL);
              // xn1 (= xn2 in an inference plan) is only kept where a LoRA reads it.
              if (ad) expect(relMaxErr(got.xn, want.xn), `step ${step} xn`).toBeLessThan(TOL);
              lastLogits.push(got.logits);
            }
            if (ad) {
              // The adapter must matter, or a dropped LoRA would pass unnoticed.
              run(ctx, { cacheRow: row }, await recordDecodeForward(dctx, { ...spec, adapter: null }), logits);
              expect(relMaxErr(await readF32(ctx, plan.logits, n * V), lastLogits[2])).toBeGreaterThan(100 * TOL);
            }
          }
        } finally {
          await releaseDecodeParams(weights);
          for (const o of [prefill, plan, kv, weights]) o.destroy();
          adapters.remove('a');
          adapters.remove('p');
        }
      });
    }
  }

  it('refuses what it cannot fuse, naming why', async () => {
    const ctx = await gpuFor('packed');
    const { config: rc, weights: rw } = randomQwen2(3, { numHeads: 4, numKvHeads: 2, headDim: 8, intermediateSize: 64, numLayers: 1 });
    const config = toQwen2Config(rc);
    const weights = await Qwen2Weights.upload(ctx, config, quantizeModel(rc, rw, 'f16').source);
    const plan = await ActivationPlan.create(ctx, config, { rows: 8 });
    const kv = await KvCache.create(ctx, config, 16);
    const cache = { kv };
    await expect(recordDecodeForward(ctx, { plan, weights, adapter: null, n: 1 })).rejects.toThrow(/needs spec\.cache/);
    await expect(recordDecodeForward(ctx, { plan, weights, adapter: null, n: 9, cache })).rejects.toThrow(/n must be 1\.\.8 rows, got 9/);
    const W = weights.layers[0];
    const split = Object.create(weights) as Qwen2Weights;
    Object.defineProperty(split, 'layers', { value: [{ ...W, k: { ...(W.k as object), rowBase: 0 } }] });
    expect(canFuseDecode(split)).toBe(false);
    await expect(recordDecodeForward(ctx, { plan, weights: split, adapter: null, n: 1, cache })).rejects.toThrow(/canFuseDecode is false/);
    for (const o of [plan, kv, weights]) o.destroy();
  });
});
